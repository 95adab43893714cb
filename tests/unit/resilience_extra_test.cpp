// The typed extra of a "resilience" Result (reports/resilience_extra.cpp): the ledger, the stop reason and
// the drains round-trip through the report's JSON; the ledger's JSON keeps its derived badput_s and goodput
// definitions; --calibrate's reader tolerates partial ledgers.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "reports/report_json.hpp"
#include "reports/resilience_extra.hpp"
#include "tests/unit/report_round_trip.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

using testing::through_json;

ResilienceExtra sample() {
  ResilienceExtra x;
  auto& L = x.ledger;
  L.wall_s = 10;
  L.split_s = {{"productive", 6}, {"detection", 1}, {"relaunch", 2}, {"other", 1}};
  L.productive_time_s = 6.5;
  L.goodput = 0.65;
  L.goodput_ref = 0.6;
  L.ettr = 0.7;
  L.mttf_s = 5;
  L.attempts = 2;
  L.failures = 1;
  L.restarts = 1;
  L.failures_by_kind = {{"crash", 1}};
  L.detection_latency_by_kind = {{"crash", {0.5, 0.5, 1}}};
  L.failure_list = {{1, "crash", 1, "exit status", 3.0, 3.5, 6.0}};
  L.launch_failure_list = {{2, "launch", -1, "no rank started", 7.0, 7.5, std::nullopt}};
  L.launch_failures = 1;
  L.steps_completed = 12;
  L.wasted_steps = 2;
  L.preflight = {1, 0, 0.25};
  L.checkpoints.saves = 4;
  L.checkpoints.async_commits = 3;
  L.checkpoints.async_commit_s = 4.5;
  L.checkpoints.write_bytes = 1ull << 33;
  L.checkpoints.restored_steps = {0, 6};
  L.checkpoints.interval_policy = "daly";
  L.checkpoints.skipped = {{"step-9", "checksum mismatch"}};
  L.torn_lines = 1;
  x.stop_reason = "completed";
  DrainSplit d;
  d.drains = {
      {2, 2, 4, "1 failure(s)", {{"type", "drain"}, {"t", 12.5}, {"cause", "failures"}, {"strikes", 1}}}};
  d.mttf_before_drain_s = 3;
  d.mttf_after_drain_s = 7;
  d.failures_before_drain = 1;
  x.drain = d;
  return x;
}

TEST(ResilienceExtra, RoundTripsTheLedgerAndTheDrains) {
  Result r;
  r.benchmark = "resilience";
  r.name = "tiny/ranks2/policy-drain";
  write_resilience_extra(r, sample());
  const json& L = r.extra["ledger"];
  EXPECT_EQ(L["badput_s"], json({{"detection", 1.0}, {"other", 1.0}, {"relaunch", 2.0}}));
  EXPECT_EQ(L["goodput_definitions"]["reference_step"]["productive_s"], 6.0);
  EXPECT_EQ(L["goodput_definitions"]["step_time"]["productive_s"], 6.5);
  EXPECT_TRUE(L["launch_failure_list"][0]["resumed_at"].is_null());
  EXPECT_EQ(r.extra["drains"][0], json({{"type", "drain"},
                                        {"t", 12.5},
                                        {"rank", 2},
                                        {"cause", "failures"},
                                        {"from_slot", 2},
                                        {"to_slot", 4},
                                        {"strikes", 1},
                                        {"reason", "1 failure(s)"}}));
  EXPECT_EQ(read_resilience_extra(r), sample());
  EXPECT_EQ(read_resilience_extra(through_json(r)), sample());
  // A report of an earlier version has no async commit figures: read as none.
  Result older;
  write_resilience_extra(older, sample());
  older.extra["ledger"]["checkpoints"].erase("async_commits");
  older.extra["ledger"]["checkpoints"].erase("async_commit_s");
  EXPECT_EQ(read_resilience_extra(older).ledger.checkpoints.async_commits, 0);
  EXPECT_EQ(read_resilience_extra(older).ledger.checkpoints.async_commit_s, 0);
  // Without drains, none of the drain keys.
  auto plain = sample();
  plain.drain.reset();
  Result p;
  write_resilience_extra(p, plain);
  EXPECT_FALSE(p.extra.contains("drains") || p.extra.contains("mttf_before_drain_s"));
  EXPECT_EQ(read_resilience_extra(p), plain);
}

TEST(ResilienceExtra, AMissingKeyIsNamed) {
  Result r;
  r.benchmark = "resilience";
  r.name = "x";
  write_resilience_extra(r, sample());
  r.extra["ledger"]["checkpoints"].erase("interval_steps");
  try {
    read_resilience_extra(r);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_STREQ(
        e.what(),
        "result resilience/x: $.extra.ledger.checkpoints: missing required field \"interval_steps\"");
  }
  EXPECT_THROW(drain_from_event(json{{"type", "drain"}, {"rank", 1}}), Error);
}

TEST(ResilienceExtra, CalibrationReadsWhatAPartialLedgerHas) {
  Result r;
  EXPECT_FALSE(find_ledger_recovery_totals(r));
  r.extra["ledger"] = {{"attempts", 4}, {"checkpoints", {{"saves", 5}}}};
  auto t = find_ledger_recovery_totals(r);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->attempts, 4.0);
  EXPECT_EQ(t->checkpoint_saves, 5.0);
  EXPECT_FALSE(t->checkpoint_save_blocking_s);
  EXPECT_FALSE(t->badput_s);  // the caller falls back on the summary's
  r.extra["ledger"]["badput_s"] = {{"detection", 6.0}, {"relaunch", 3.0}};
  r.extra["ledger"]["failures"] = 2;
  t = find_ledger_recovery_totals(r);
  EXPECT_EQ(t->badput_s, (std::map<std::string, double>{{"detection", 6.0}, {"relaunch", 3.0}}));
  EXPECT_EQ(t->failures, 2.0);
  EXPECT_FALSE(t->restarts);
  // A field that is there but garbled is named, not skipped (calibration would fall back to defaults).
  r.benchmark = "resilience";
  r.name = "x";
  const auto error_of = [&] {
    try {
      find_ledger_recovery_totals(r);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  r.extra["ledger"]["badput_s"]["relaunch"] = "?";
  EXPECT_EQ(error_of(), "result resilience/x: $.extra.ledger.badput_s.relaunch: expected a number");
  r.extra["ledger"]["badput_s"]["relaunch"] = 3.0;
  r.extra["ledger"]["restarts"] = "2";
  EXPECT_EQ(error_of(), "result resilience/x: $.extra.ledger.restarts: expected a number");
  r.extra["ledger"] = json::array();
  EXPECT_EQ(error_of(), "result resilience/x: $.extra.ledger: expected an object");
  r.extra["ledger"] = {{"checkpoints", 5}};
  EXPECT_EQ(error_of(), "result resilience/x: $.extra.ledger.checkpoints: expected an object");
  write_resilience_extra(r, sample());
  t = find_ledger_recovery_totals(r);
  EXPECT_EQ(t->attempts, 2.0);
  EXPECT_EQ(t->checkpoint_saves, 4.0);
  EXPECT_EQ(t->badput_s->at("relaunch"), 2.0);
}

}  // namespace
}  // namespace fb::reports
