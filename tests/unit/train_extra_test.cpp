// The typed extra of a "train" Result (reports/train_extra.cpp): struct → extra → struct, through the
// report's JSON text as a report on disk is, and what a reader says when a key is missing.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "reports/report_json.hpp"
#include "reports/train_extra.hpp"
#include "tests/unit/report_round_trip.hpp"

namespace fb::reports {
namespace {

using testing::through_json;

TrainExtra plan() {
  TrainExtra x;
  x.flops_per_token = {1, 2, 3, 4, 5, 6, 7, 30};
  x.memory_estimate_bytes = {10, 20, 40, 80, 160, 310};
  x.gemms = {{"tiny/qkv/fwd", "fwd", 64, 96, 32, 1, false, true, 1, 2, ""}};
  x.collectives_plan = {{"tp_allreduce/attn_out", "tp", "allreduce", 2, 4096, 4, 16384, ""},
                        {"dp_allreduce/grads", "dp", "allreduce", 2, 1024, 3, 3072, "3 layers"}};
  x.pipeline = TrainPipeline{"1F1B", 2, 1, 4, 0.2, "note"};
  return x;
}

TEST(TrainExtra, RoundTripsAPlanAndARun) {
  TrainExtra x = plan();
  TrainRunExtra run;
  run.peak = {100.5, "hardware table: test", false};
  run.mfu_note = "no peak";
  run.breakdown = {{"gemm", "optimizer", "unused"}, {{"gemm", 0.25}, {"optimizer", 0.125}}, "sum 0.375 s"};
  run.collective_bytes_per_step = {{"tp_allreduce/attn_out", 16384}};
  run.collective_calls_per_step = {{"tp_allreduce/attn_out", 4}};
  run.moe_rows_sent = 7;
  run.moe_rows_received = 9;
  run.gemm_engine = "openblas";
  run.first_step = 2;
  run.last_step = 4;
  run.step_times_s = {0.5, 0.25};
  x.run = run;
  Result r;
  r.benchmark = "train";
  r.name = "tiny";
  write_train_extra(r, x);
  EXPECT_EQ(r.extra["breakdown_categories"], nlohmann::json({"gemm", "optimizer", "unused"}));
  EXPECT_EQ(r.extra["moe_dispatch"], nlohmann::json({{"rows_sent", 7}, {"rows_received", 9}}));
  EXPECT_TRUE(r.extra["memory_estimate_bytes"]["total"].is_number_unsigned());
  EXPECT_FALSE(r.extra["collectives_plan"][0].contains("note"));  // only where calls of one name differ
  EXPECT_EQ(r.extra["collectives_plan"][1]["note"], "3 layers");
  EXPECT_EQ(read_train_extra(r), x);
  EXPECT_EQ(read_train_extra(through_json(r)), x);
  const auto breakdown = find_train_breakdown(r);
  ASSERT_TRUE(breakdown);
  EXPECT_EQ(*breakdown, run.breakdown);
}

// A report written before calls were counted reads with none.
TEST(TrainExtra, AReportWithoutCallCountsReads) {
  TrainExtra x = plan();
  x.run = TrainRunExtra{};
  x.run->collective_bytes_per_step = {{"tp_allreduce/attn_out", 16384}};
  Result r;
  write_train_extra(r, x);
  r.extra.erase("collective_calls_per_step");
  EXPECT_EQ(read_train_extra(r), x);
}

TEST(TrainExtra, APlanHasNoRunAndNoBreakdown) {
  Result r;
  write_train_extra(r, plan());
  EXPECT_FALSE(r.extra.contains("breakdown"));
  EXPECT_EQ(read_train_extra(r), plan());
  EXPECT_FALSE(read_train_extra(r).run);
  EXPECT_FALSE(find_train_breakdown(r));
}

TEST(TrainExtra, AMissingKeyIsNamed) {
  Result r;
  r.benchmark = "train";
  r.name = "tiny";
  TrainExtra x = plan();
  x.run = TrainRunExtra{};
  write_train_extra(r, x);
  r.extra["peak"].erase("source");
  try {
    read_train_extra(r);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_STREQ(e.what(), "result train/tiny: $.extra.peak: missing required field \"source\"");
  }
  write_train_extra(r, x);  // rewrites every key
  r.extra["first_step"] = "one";
  EXPECT_THROW(
      {
        try {
          read_train_extra(r);
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "result train/tiny: $.extra.first_step: expected an integer");
          throw;
        }
      },
      Error);
}

TEST(TrainExtra, TheChartToleratesWhatItCannotDraw) {
  Result r;
  r.extra["breakdown"] = {{"gemm", 0.5}, {"odd", "text"}};
  r.extra["breakdown_categories"] = {"gemm", 3};
  const auto b = find_train_breakdown(r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->categories, std::vector<std::string>{"gemm"});
  EXPECT_EQ(b->seconds, (std::map<std::string, double>{{"gemm", 0.5}}));
  r.extra["breakdown"] = "none";
  EXPECT_FALSE(find_train_breakdown(r));
}

}  // namespace
}  // namespace fb::reports
