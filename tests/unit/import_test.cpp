// Imports: nccl-tests text and JSON output, MLPerf Training logs; known answers from hand-written samples in
// the documented formats, and errors that say where.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "reports/import_mlperf.hpp"
#include "reports/import_nccl_tests.hpp"

namespace fb::reports {
namespace {

const char* kText = R"(# nccl-tests version 2.13.11 nccl-headers=22203 nccl-library=22203
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1001 on     node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1002 on     node02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           128  bfloat16    none      -1    10.00    0.10    0.05      0     9.50    0.11    0.05    N/A
        4096           512  bfloat16    none      -1    20.00    0.20    0.10      3    19.00    0.22    0.11      0
# Out of bounds values : 3 FAILED
# Avg bus bandwidth    : 0.0775
#
# Collective test concluded: all_gather_perf
)";

TEST(ImportNcclTests, TextTable) {
  const Report rep = import_nccl_tests(kText, "ag.txt");
  EXPECT_EQ(rep.run["world_size"], 2);
  EXPECT_EQ(rep.run["hosts"], nlohmann::json({"node01", "node02"}));
  EXPECT_EQ(rep.system["ranks"][1]["device"]["name"], "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(rep.results.size(), 5u);  // 2 sizes x (out-of-place, in-place) + avg_busbw
  const Result& r0 = rep.results[0];
  EXPECT_EQ(r0.benchmark, "collective");
  EXPECT_EQ(r0.name, "allgather/bf16/1024");
  EXPECT_EQ(r0.params["op"], "allgather");
  EXPECT_EQ(r0.params["nccl_type"], "bfloat16");
  EXPECT_EQ(r0.params["iters"], 20);
  EXPECT_DOUBLE_EQ(r0.metric("time_us")->value, 10.0);
  EXPECT_DOUBLE_EQ(r0.metric("algbw_gbps")->value, 0.10);
  EXPECT_DOUBLE_EQ(r0.metric("busbw_gbps")->value, 0.05);
  EXPECT_EQ(r0.metric("busbw_gbps")->better, Better::higher);
  EXPECT_EQ(r0.status, Status::ok);
  EXPECT_EQ(rep.results[1].name, "allgather/bf16/1024/inplace");
  EXPECT_EQ(rep.results[1].metric("wrong"), nullptr);  // N/A: not checked
  EXPECT_EQ(rep.results[2].name, "allgather/bf16/4096");
  EXPECT_EQ(rep.results[2].status, Status::failed);
  EXPECT_EQ(*rep.results[2].error, "nccl-tests reported 3 wrong elements");
  EXPECT_EQ(rep.results[4].name, "avg_busbw");
  EXPECT_DOUBLE_EQ(rep.results[4].metric("busbw_gbps")->value, 0.0775);
}

TEST(ImportNcclTests, JsonOutput) {
  const char* json =
      R"({"version":2,"start_time":"2026-11-28 09:14:02","args":["./build/all_reduce_perf","-b","8"],
    "nccl_version":22203,
    "config":{"nthreads":1,"ngpus":1,"iterations":20,"warmup_iters":5,
      "devices":[{"rank":0,"group":0,"pid":1,"hostname":"n1","device":0,"device_hex":"0000:18:00","device_info":"NVIDIA H200"}]},
    "results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
      "out_of_place":{"time":24.5,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0},
      "in_place":{"time":"nan","alg_bw":0.0,"bus_bw":0.0,"nwrong":null},"actual_iterations":20,"experiment_name":""}],
    "average_bus_bandwidth":{"bandwidth":0.0,"okay":"unchecked"}})";
  const Report rep = import_nccl_tests(json, "ar.json");
  ASSERT_EQ(rep.results.size(), 3u);
  EXPECT_EQ(rep.results[0].name, "allreduce/fp32/8");
  EXPECT_EQ(rep.results[0].params["root"], -1);
  EXPECT_DOUBLE_EQ(rep.results[0].metric("time_us")->value, 24.5);
  EXPECT_DOUBLE_EQ(rep.results[0].metric("wrong")->value, 0.0);
  EXPECT_TRUE(std::isnan(rep.results[1].metric("time_us")->value));
  EXPECT_EQ(rep.system["ranks"][0]["device"]["name"], "NVIDIA H200");
}

TEST(ImportNcclTests, ErrorsSayWhere) {
  try {
    import_nccl_tests(
        R"({"results":[{"size":8,"type":"float","out_of_place":{"time":"fast","alg_bw":1,"bus_bw":1}}]})",
        "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "x.json: $.results[0].out_of_place.time: expected a number");
  }
  std::string bad = kText;
  bad.replace(bad.find("20.00    0.20"), 5, "xx.xx");
  try {
    import_nccl_tests(bad, "ag.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ag.txt:14: column time: expected a number, got 'xx.xx'");
  }
  EXPECT_THROW(import_nccl_tests("hello\nworld\n", "empty.txt"), Error);
}

TEST(ImportNcclTests, Names) {
  EXPECT_EQ(nccl_tests_op_name("./build/reduce_scatter_perf"), "reducescatter");
  EXPECT_EQ(nccl_tests_op_name("alltoall_perf"), "alltoall");
  EXPECT_EQ(nccl_tests_dtype_name("half"), "fp16");
  EXPECT_EQ(nccl_tests_dtype_name("f8e4m3"), "fp8_e4m3");
  EXPECT_EQ(nccl_tests_dtype_name("uint8"), "uint8");
}

std::string mllog(const std::string& key, const std::string& value, double time_ms,
                  const std::string& meta = "{}") {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(static_cast<long long>(time_ms)) +
         ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": " + value +
         ", \"metadata\": " + meta + "}\n";
}

std::string run_log(double minutes, const std::string& status = "success") {
  const double t0 = 1.7e12;
  std::string s = mllog("submission_benchmark", "\"bert\"", t0) + mllog("submission_org", "\"Org\"", t0) +
                  "some framework output that is not MLLOG\n" + mllog("run_start", "null", t0) +
                  mllog("tracked_stats", "{\"throughput\": 100.0}", t0 + 1000, "{\"step\": 1}") +
                  mllog("tracked_stats", "{\"throughput\": 120.0}", t0 + 2000, "{\"step\": 2}") +
                  mllog("tracked_stats", "{\"throughput\": 110.0}", t0 + 3000, "{\"step\": 3}") +
                  mllog("eval_accuracy", "0.72", t0 + 4000);
  if (!status.empty())
    s += mllog("run_stop", "null", t0 + minutes * 60000, "{\"status\": \"" + status + "\"}");
  return s;
}

TEST(ImportMlperf, TimeToTrainThroughputAndScore) {
  const Report rep = import_mlperf({{"r1.log", run_log(10)},
                                    {"r2.log", run_log(12)},
                                    {"r3.log", run_log(20)},
                                    {"r4.log", run_log(11)},
                                    {"r5.log", run_log(9, "aborted")}});
  ASSERT_EQ(rep.results.size(), 6u);
  const Result& r1 = rep.results[0];
  EXPECT_EQ(r1.benchmark, "mlperf");
  EXPECT_EQ(r1.name, "bert/run1");
  EXPECT_EQ(r1.params["submission_org"], "Org");
  EXPECT_DOUBLE_EQ(r1.metric("time_to_train_min")->value, 10.0);
  EXPECT_EQ(r1.metric("time_to_train_min")->better, Better::lower);
  EXPECT_DOUBLE_EQ(r1.metric("throughput_samples_per_s")->value, 110.0);  // median of 100, 120, 110
  EXPECT_DOUBLE_EQ(r1.metric("eval_accuracy")->value, 0.72);
  EXPECT_EQ(rep.results[4].status, Status::failed);
  EXPECT_EQ(*rep.results[4].error, "run_stop status \"aborted\"");
  const Result& score = rep.results[5];
  EXPECT_EQ(score.name, "bert/score");
  // Successful runs 10, 12, 20, 11: drop 10 and 20, mean of 12 and 11.
  EXPECT_DOUBLE_EQ(score.metric("time_to_train_min")->value, 11.5);
  EXPECT_EQ(rep.summary["mlperf"]["submission_benchmark"], "bert");
}

TEST(ImportMlperf, UnfinishedRunAndBadLines) {
  const Report rep = import_mlperf({{"r1.log", run_log(10, "")}});
  EXPECT_EQ(rep.results[0].status, Status::failed);
  EXPECT_EQ(*rep.results[0].error, "no run_stop event (the run did not finish)");
  try {
    import_mlperf({{"bad.log", run_log(10) + ":::MLLOG {not json\n"}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad.log:10: malformed :::MLLOG line (expected a JSON object after the tag)");
  }
  EXPECT_THROW(import_mlperf({{"none.log", "no mllog here\n"}}), Error);
}

TEST(ImportMlperf, OlympicMean) {
  EXPECT_DOUBLE_EQ(olympic_mean({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(olympic_mean({2, 4}), 3.0);
  EXPECT_DOUBLE_EQ(olympic_mean({10, 1, 2, 3, 100}), 5.0);
  EXPECT_TRUE(std::isnan(olympic_mean({})));
}

}  // namespace
}  // namespace fb::reports
