// Goodput accounting on hand-built event logs: the REFERENCES.md 200-minute worked example, the e2e fault
// scenario of issue 6, and the event log's tolerance of torn lines.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.hpp"
#include "resilience/event_log.hpp"
#include "resilience/goodput_ledger.hpp"

namespace fb::resilience {
namespace {

using nlohmann::json;
constexpr double kBase = 1.7e9;  // realistic epoch seconds, to exercise the precision of the sums
constexpr double kMin = 60;

class LogBuilder {
 public:
  json& add(std::string_view type, double t_min) {
    events.push_back(make_event(type, kBase + t_min * kMin));
    return events.back();
  }
  // job_start (reference step 1 min), attempt 1 at 0 and its start-up to 1 min; returns 1 (minutes).
  double start_job() {
    add(event::job_start, 0)["reference_step_s"] = 60.0;
    add(event::attempt_start, 0)["attempt"] = 1;
    add(event::init_done, 1);
    return 1;
  }
  // Steps [first, last], each `minutes` long, starting at *t (minutes); advances *t.
  void steps(std::int64_t first, std::int64_t last, double minutes, double* t) {
    for (auto s = first; s <= last; ++s) {
      auto& e = add(event::step, *t + minutes);
      e["step"] = s;
      e["t_start"] = kBase + *t * kMin;
      *t += minutes;
    }
  }
  void save(std::int64_t step, double minutes, double* t) {
    add(event::ckpt_save_start, *t)["step"] = step;
    auto& e = add(event::ckpt_save_end, *t + minutes);
    e["step"] = step;
    e["t_start"] = kBase + *t * kMin;
    e["bytes"] = 1000;
    *t += minutes;
  }
  std::vector<json> events;
};

double sum_of_parts(const Ledger& L) {
  return L.parts.total();
}

// Issue 16 finding 3: the JSON partitions the wall time as the console does. split_s sums to wall_s;
// productive + Σ badput_s = wall_s (slowdown counted once); both goodput definitions are named, each with
// the productive seconds it divides by the wall time.
void expect_partition(const Ledger& L) {
  const double eps = 1e-9 * std::max(1.0, L.wall_s);
  EXPECT_NEAR(sum_of_parts(L), L.wall_s, eps);
  const json j = ledger_to_json(L);
  double split = 0, badput = 0;
  for (const auto& [name, v] : j["split_s"].items()) split += v.get<double>();
  for (const auto& [name, v] : j["badput_s"].items()) badput += v.get<double>();
  EXPECT_NEAR(split, j["wall_s"].get<double>(), eps);
  EXPECT_FALSE(j["badput_s"].contains("productive"));
  EXPECT_NEAR(j["split_s"]["productive"].get<double>() + badput, j["wall_s"].get<double>(), eps);
  const auto& d = j["goodput_definitions"];
  EXPECT_NEAR(d["reference_step"]["productive_s"].get<double>(), j["split_s"]["productive"].get<double>(),
              eps);
  EXPECT_NEAR(d["step_time"]["productive_s"].get<double>(),
              j["split_s"]["productive"].get<double>() + j["split_s"]["slowdown"].get<double>(), eps);
  if (L.wall_s > 0) {
    EXPECT_NEAR(d["step_time"]["goodput"].get<double>(), L.productive_time_s / L.wall_s, 1e-12);
    EXPECT_NEAR(d["reference_step"]["goodput"].get<double>(), L.parts.productive_s / L.wall_s, 1e-12);
  }
}

// REFERENCES.md: 200 min total → productive 100 (50%), checkpoint load 10 (5%), lost progress 40 (20%),
// restart 15 (7.5%), checkpoint save 10 (5%), slowdown 25 (12.5%). Reference step = 1 min.
std::vector<json> worked_example() {
  LogBuilder b;
  b.add(event::job_start, 0)["reference_step_s"] = 60.0;
  b.add(event::attempt_start, 0)["attempt"] = 1;
  b.add(event::init_done, 0);
  double t = 0;
  b.steps(1, 20, 1, &t);   // 0–20
  b.save(20, 5, &t);       // 20–25
  b.steps(21, 60, 1, &t);  // 25–65: lost when the crash rolls back to step 20
  auto& f = b.add(event::fault_injected, 65);
  f["kind"] = "crash";
  f["rank"] = 1;
  auto& d = b.add(event::failure_detected, 67);  // detection 2 min
  d["kind"] = "crash";
  d["rank"] = 1;
  d["how"] = "exit status";
  b.add(event::relaunch, 70);
  b.add(event::attempt_start, 75)["attempt"] = 2;  // relaunch 8 min (67–75)
  b.add(event::init_done, 80);                     // init 5 min: restart = 2 + 8 + 5 = 15
  b.add(event::ckpt_restore_start, 80);
  auto& r = b.add(event::ckpt_restore_end, 90);  // load 10 min
  r["step"] = 20;
  r["bytes"] = 1000;
  t = 90;
  b.steps(21, 60, 1, &t);   // 90–130
  b.save(60, 5, &t);        // 130–135
  b.steps(61, 85, 2, &t);   // 135–185: 25 slow steps, 25 min of slowdown
  b.steps(86, 100, 1, &t);  // 185–200
  b.add(event::job_end, 200);
  return b.events;
}

TEST(GoodputLedger, ReferencesWorkedExampleGivesItsSplit) {
  const auto events = worked_example();
  const Ledger L = compute_ledger(events);
  expect_partition(L);
  constexpr double eps = 1e-6;
  EXPECT_NEAR(L.wall_s / kMin, 200, eps);
  EXPECT_NEAR(L.parts.productive_s / kMin, 100, eps);
  EXPECT_NEAR(L.parts.ckpt_restore_s / kMin, 10, eps);
  EXPECT_NEAR(L.parts.wasted_s / kMin, 40, eps);
  EXPECT_NEAR((L.parts.init_s + L.parts.detection_s + L.parts.relaunch_s) / kMin, 15, eps);  // "restart"
  EXPECT_NEAR(L.parts.ckpt_save_s / kMin, 10, eps);
  EXPECT_NEAR(L.parts.slowdown_s / kMin, 25, eps);
  EXPECT_NEAR(L.parts.other_s, 0, eps);
  EXPECT_NEAR(sum_of_parts(L), L.wall_s, eps);
  EXPECT_NEAR(L.goodput_ref, 0.50, 1e-9);
  EXPECT_NEAR(L.goodput, 0.625, 1e-9);  // productive-time: slow steps count
  // ETTR: 1 − (restore 10 + wasted 40 + detection 2 + relaunch 8 + re-init 5) / 200.
  EXPECT_NEAR(L.ettr, 1 - 65.0 / 200, 1e-9);
  EXPECT_EQ(L.failures, 1);
  EXPECT_EQ(L.restarts, 1);
  EXPECT_EQ(L.attempts, 2);
  EXPECT_EQ(L.wasted_steps, 40);
  EXPECT_EQ(L.steps_completed, 100);
  EXPECT_EQ(L.kept_steps, 100);
  // Uptime: 0–65 and 75–200 = 190 min, one failure.
  EXPECT_NEAR(L.mttf_s / kMin, 190, eps);
  EXPECT_FALSE(L.mttf_censored);
  EXPECT_NEAR(L.mttr_s / kMin, 25, eps);  // failure at 65, training resumed at 90
  ASSERT_EQ(L.detection_latency_s_by_kind.at("crash").size(), 1u);
  EXPECT_NEAR(L.detection_latency_s_by_kind.at("crash")[0] / kMin, 2, eps);
  EXPECT_EQ(L.failures_by_kind.at("crash"), 1);
  EXPECT_EQ(L.restarts_by_kind.at("crash"), 1);
  ASSERT_EQ(L.restored_steps.size(), 1u);
  EXPECT_EQ(L.restored_steps[0], 20);
}

TEST(GoodputLedger, MedianIsTheReferenceStepWhenNoneIsGiven) {
  auto events = worked_example();
  events[0].erase("reference_step_s");
  const Ledger L = compute_ledger(events);
  expect_partition(L);
  EXPECT_NEAR(L.reference_step_s, 60, 1e-6);  // 75 of the 100 kept steps take 1 min
  EXPECT_NEAR(L.parts.slowdown_s / kMin, 25, 1e-6);
}

// Issue 6's e2e scenario: checkpoints every 10 steps, crash at 15, hang at 33, corrupt checkpoint 40,
// crash at 45 → restores from 10, 30, 30; re-done steps 11–14, 31–32, 31–44 = 20.
TEST(GoodputLedger, IssueScenarioCountsTwentyWastedSteps) {
  LogBuilder b;
  const double step = 0.01, save = 0.002;  // minutes
  double t = 0;
  b.add(event::job_start, t);
  int attempt = 0;
  const auto start_attempt = [&](std::int64_t restored, json skipped) {
    b.add(event::attempt_start, t)["attempt"] = ++attempt;
    t += 0.05;
    b.add(event::init_done, t);
    b.add(event::ckpt_restore_start, t);
    t += 0.01;
    auto& r = b.add(event::ckpt_restore_end, t);
    r["step"] = restored;
    r["skipped"] = std::move(skipped);
  };
  const auto run = [&](std::int64_t from, std::int64_t to) {
    for (auto s = from; s <= to; ++s) {
      b.steps(s, s, step, &t);
      if (s % 10 == 0) b.save(s, save, &t);
    }
  };
  const auto fail = [&](const char* kind, int rank, double detect_min) {
    auto& f = b.add(event::fault_injected, t + step / 2);
    f["kind"] = kind;
    f["rank"] = rank;
    t += detect_min;
    auto& d = b.add(event::failure_detected, t);
    d["kind"] = kind;
    d["rank"] = rank;
    b.add(event::relaunch, t += 0.01);
    t += 0.01;
  };
  start_attempt(0, json::array());
  run(1, 14);
  fail("crash", 1, 0.02);
  start_attempt(10, json::array());
  run(11, 32);
  fail("hang", 2, 0.5);
  // The watchdog logged the hang; the supervisor's own notice of the exit is the same failure.
  auto& dup = b.add(event::failure_detected, t);
  dup["kind"] = "crash";
  dup["how"] = "exit status";
  start_attempt(30, json::array());
  run(31, 44);
  fail("crash", 3, 0.02);
  start_attempt(30,
                json::array({{{"checkpoint", "step-00000040"}, {"reason", "shard 0: checksum mismatch"}}}));
  run(31, 60);
  b.add(event::job_end, t + 0.01);

  const Ledger L = compute_ledger(b.events);

  expect_partition(L);
  EXPECT_EQ(L.failures, 3);
  EXPECT_EQ(L.restarts, 3);
  EXPECT_EQ(L.attempts, 4);
  EXPECT_EQ(L.wasted_steps, 20);
  EXPECT_EQ(L.steps_completed, 60);
  EXPECT_EQ(L.kept_steps, 60);
  EXPECT_EQ(L.restored_steps, (std::vector<std::int64_t>{0, 10, 30, 30}));
  ASSERT_EQ(L.ckpt_skipped.size(), 1u);
  EXPECT_EQ(L.ckpt_skipped[0].checkpoint, "step-00000040");
  EXPECT_EQ(L.failures_by_kind.at("crash"), 2);
  EXPECT_EQ(L.failures_by_kind.at("hang"), 1);
  EXPECT_NEAR(L.detection_latency_s_by_kind.at("hang")[0], 0.5 * kMin - step / 2 * kMin, 1e-6);
  // Wasted time: 20 re-done steps plus three half steps at the failures.
  EXPECT_NEAR(L.parts.wasted_s, (20 + 1.5) * step * kMin, 1e-6);
  EXPECT_NEAR(sum_of_parts(L), L.wall_s, 1e-6);
  EXPECT_GE(L.parts.other_s, 0);
}

TEST(GoodputLedger, NonFatalDetectionsDoNotCountAsFailures) {
  LogBuilder b;
  double t = 0;
  b.add(event::job_start, 0);
  b.add(event::attempt_start, 0);
  b.add(event::init_done, 0.1);
  t = 0.1;
  b.steps(1, 5, 1, &t);
  auto& s = b.add(event::failure_detected, t);
  s["kind"] = "ckpt-write-fail";
  s["fatal"] = false;
  b.add(event::straggler_detected, t)["rank"] = 2;
  b.add(event::job_end, t);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.failures, 0);
  EXPECT_TRUE(L.mttf_censored);
  EXPECT_NEAR(L.mttf_s, L.uptime_s, 1e-9);
  EXPECT_NEAR(L.uptime_s / kMin, 5.1, 1e-6);
  EXPECT_EQ(L.nonfatal_by_kind.at("ckpt-write-fail"), 1);
  EXPECT_EQ(L.stragglers, 1);
  EXPECT_NEAR(L.goodput, 5 / 5.1, 1e-9);
  EXPECT_NEAR(L.parts.init_s / kMin, 0.1, 1e-6);
}

// A save that never committed counts once in save_failures, whichever way it failed: a sync write (its
// ckpt_save_end not ok, and each failed rank's event), an async write in the writer thread (the hand-off's
// ckpt_save_end was ok), a refused commit. The same step saved again in a later attempt is another save.
TEST(GoodputLedger, SaveFailuresCountEachUncommittedSaveOnce) {
  LogBuilder b;
  double t = 0;
  b.add(event::job_start, 0);
  b.add(event::attempt_start, 0);
  b.add(event::init_done, 0.1);
  t = 0.1;
  const auto write_fail = [&](std::int64_t step, int rank) {
    auto& f = b.add(event::failure_detected, t);
    f["kind"] = "ckpt-write-fail";
    f["fatal"] = false;
    f["rank"] = rank;
    f["step"] = step;
  };
  b.steps(1, 2, 1, &t);
  b.save(2, 0.5, &t);  // sync, failed on ranks 0 and 1
  b.events.back()["ok"] = false;
  write_fail(2, 0);
  write_fail(2, 1);
  b.steps(3, 4, 1, &t);
  b.save(4, 0.1, &t);  // async hand-off ok, the write failed later
  b.steps(5, 5, 1, &t);
  write_fail(4, 1);
  b.steps(6, 6, 1, &t);
  b.save(6, 0.5, &t);  // committed
  b.add(event::ckpt_commit, t)["step"] = 6;
  b.add(event::attempt_end, t)["reason"] = "completed";
  b.add(event::attempt_start, t);
  b.add(event::init_done, t + 0.1);
  t += 0.1;
  b.steps(7, 8, 1, &t);
  b.save(8, 0.5, &t);  // the commit refused (rank 0 logs it)
  write_fail(8, 0);
  b.add(event::job_end, t);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.ckpt_saves, 3);          // blocking parts that ended ok: steps 4, 6, 8
  EXPECT_EQ(L.ckpt_save_failures, 3);  // steps 2, 4, 8
  EXPECT_EQ(L.ckpt_commits, 1);
  EXPECT_EQ(L.nonfatal_by_kind.at("ckpt-write-fail"), 4);
  EXPECT_EQ(L.failures, 0);
}

// Asynchronous saves: the time from the end of each snapshot to its commit is summed (the window in which a
// failure loses the save, which simulate --calibrate takes as the write time); synchronous saves add nothing,
// nor does a save whose commit never came, and a step saved again in a later attempt is matched there.
TEST(GoodputLedger, AsynchronousCommitsAreTimedFromTheirSnapshot) {
  LogBuilder b;
  double t = b.start_job();
  b.steps(1, 2, 1, &t);
  b.save(2, 0.5, &t);  // synchronous: committed inside the save
  b.add(event::ckpt_commit, t)["step"] = 2;
  b.steps(3, 4, 1, &t);
  b.save(4, 0.1, &t);  // async: snapshot ends at 5.6, committed 3 min later
  b.events.back()["async"] = true;
  b.steps(5, 7, 1, &t);
  b.add(event::ckpt_commit, t)["step"] = 4;
  b.save(7, 0.1, &t);  // async, never committed (the job is killed first)
  b.events.back()["async"] = true;
  b.steps(8, 8, 1, &t);
  b.add(event::attempt_end, t)["reason"] = "failed";
  b.add(event::attempt_start, t)["attempt"] = 2;
  b.add(event::init_done, t + 1);
  t += 1;
  b.steps(5, 7, 1, &t);
  b.save(7, 0.1, &t);  // async again in attempt 2: committed 1 min after its own snapshot
  b.events.back()["async"] = true;
  b.steps(8, 8, 1, &t);
  b.add(event::ckpt_commit, t)["step"] = 7;
  b.add(event::job_end, t);
  const Ledger L = compute_ledger(b.events);
  EXPECT_EQ(L.ckpt_commits, 3);
  EXPECT_EQ(L.ckpt_async_commits, 2);
  EXPECT_NEAR(L.ckpt_async_commit_s, (3 + 1) * kMin, 1e-6);
  const auto x = ledger_record(L);
  EXPECT_EQ(x.checkpoints.async_commits, 2);
  EXPECT_NEAR(x.checkpoints.async_commit_s, 4 * kMin, 1e-6);
}

TEST(GoodputLedger, SilentCorruptionDetectedLaterWastesTheStepsInBetween) {
  LogBuilder b;
  double t = 0;
  b.add(event::job_start, 0);
  b.add(event::attempt_start, 0);
  b.add(event::init_done, 0);
  b.steps(1, 10, 1, &t);
  b.save(10, 0.5, &t);
  b.steps(11, 12, 1, &t);
  b.add(event::fault_injected, t)["kind"] = "sdc";  // flip during step 13
  b.steps(13, 15, 1, &t);
  auto& d = b.add(event::failure_detected, t + 0.25);  // vote after step 15
  d["kind"] = "sdc";
  d["rank"] = 3;
  t += 0.25;
  b.add(event::attempt_start, t + 1);
  t += 1;
  auto& r = b.add(event::ckpt_restore_end, t + 0.5);
  r["step"] = 10;
  r["seconds"] = 0.5 * kMin;
  t += 0.5;
  b.steps(11, 15, 1, &t);
  b.add(event::job_end, t);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.wasted_steps, 5);
  EXPECT_NEAR(L.parts.wasted_s / kMin, 5, 1e-6);
  EXPECT_NEAR(L.parts.detection_s / kMin, 0.25, 1e-6);  // only the part after the last step
  EXPECT_NEAR(L.detection_latency_s_by_kind.at("sdc")[0] / kMin, 3.25, 1e-6);
  EXPECT_NEAR(L.parts.relaunch_s / kMin, 1, 1e-6);
  EXPECT_NEAR(L.parts.ckpt_restore_s / kMin, 0.5, 1e-6);
  EXPECT_NEAR(sum_of_parts(L), L.wall_s, 1e-6);
  EXPECT_EQ(L.failure_list.at(0).rank, 3);
}

// resilience --preflight: a health check before each launch is init time (failure-caused before a re-attempt,
// so it lowers ETTR like the re-attempt's init); the parts still sum to the wall time.
TEST(GoodputLedger, PreflightChecksAreInitTime) {
  LogBuilder b;
  double t = 0;
  b.add(event::job_start, 0);
  auto& p1 = b.add(event::preflight, 0.5);  // 0–0.5: first check, failed; a rank drained
  p1["t_start"] = kBase;
  p1["verdict"] = "fail";
  b.add(event::drain, 0.5)["cause"] = "preflight";
  auto& p2 = b.add(event::preflight, 0.75);  // 0.5–0.75: the new placement passes
  p2["t_start"] = kBase + 0.5 * kMin;
  p2["verdict"] = "pass";
  b.add(event::attempt_start, 0.75);
  b.add(event::init_done, 1);
  auto& iv = b.add(event::ckpt_interval, 1);
  iv["policy"] = "daly";
  iv["interval_s"] = 120.0;
  iv["interval_steps"] = 2;
  t = 1;
  b.steps(1, 4, 1, &t);  // 1–5
  b.add(event::failure_detected, t)["kind"] = "crash";
  auto& p3 = b.add(event::preflight, t + 1);  // 5–5.5 relaunch, 5.5–6 check
  p3["t_start"] = kBase + (t + 0.5) * kMin;
  p3["verdict"] = "pass";
  b.add(event::attempt_start, t + 1);
  b.add(event::init_done, t + 1.5);
  t += 1.5;
  b.steps(5, 6, 1, &t);
  b.add(event::job_end, t);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.preflights, 3);
  EXPECT_EQ(L.preflight_failures, 1);
  EXPECT_NEAR(L.preflight_s / kMin, 0.5 + 0.25 + 0.5, 1e-6);
  EXPECT_NEAR(L.parts.init_s / kMin, 0.75 + 0.25 + 0.5 + 0.5, 1e-6);
  EXPECT_NEAR(L.parts.relaunch_s / kMin, 0.5, 1e-6);
  EXPECT_NEAR(L.wall_s / kMin, 8.5, 1e-6);
  EXPECT_NEAR(sum_of_parts(L), L.wall_s, 1e-6);
  // ETTR loss: the relaunch, the re-attempt's check and its init (the first checks are the job's own).
  EXPECT_NEAR(L.ettr, 1 - (0.5 + 0.5 + 0.5) / 8.5, 1e-6);
  EXPECT_EQ(L.ckpt_interval_policy, "daly");
  EXPECT_DOUBLE_EQ(L.ckpt_interval_s, 120.0);
  EXPECT_EQ(L.ckpt_interval_steps, 2);
  const auto j = ledger_to_json(L);
  EXPECT_EQ(j["preflight"]["checks"], 3);
  EXPECT_EQ(j["checkpoints"]["interval_steps"], 2);
}

// Issue 16 finding 3: a job whose launcher failed twice (no rank ever started) trained for none of its time.
// Its failures are launch failures with the launcher's message, not crashes on rank -1, and not in MTTF.
TEST(GoodputLedger, AJobThatNeverStartedHasEttrZeroAndLaunchFailuresOnly) {
  LogBuilder b;
  b.add(event::job_start, 0);
  b.add(event::attempt_start, 0)["attempt"] = 1;
  const std::string how = "supervisor: the launch failed (exit status 1): mpirun: Error: unknown option";
  {
    auto& f1 = b.add(event::failure_detected, 0.5);  // (a reference into the log: not kept past the next add)
    f1["kind"] = "launch";
    f1["rank"] = -1;
    f1["how"] = how;
  }
  b.add(event::relaunch, 0.6);
  b.add(event::attempt_start, 1)["attempt"] = 2;
  b.add(event::failure_detected, 1.5)["kind"] = "launch";
  b.add(event::job_end, 1.6);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.ettr, 0);
  EXPECT_EQ(L.goodput, 0);
  EXPECT_EQ(L.failures, 0);
  EXPECT_TRUE(L.failure_list.empty());
  EXPECT_TRUE(L.failures_by_kind.empty());
  EXPECT_EQ(L.launch_failures, 2);
  ASSERT_EQ(L.launch_failure_list.size(), 2u);
  EXPECT_EQ(L.launch_failure_list[0].attempt, 1);
  EXPECT_EQ(L.launch_failure_list[0].how, how);
  EXPECT_EQ(L.launch_failure_list[1].attempt, 2);
  EXPECT_TRUE(L.mttf_censored);
  EXPECT_EQ(L.mttf_s, 0);  // no uptime at all
  EXPECT_EQ(L.mttr_s, 0);
  EXPECT_EQ(L.restarts, 1);
  EXPECT_EQ(L.restarts_by_kind.at("launch"), 1);
  // The failed launches are start-up time (0–0.5 and 1–1.5 min); after the first, relaunch (0.5–1); after
  // the second nothing was relaunched: other (1.5–1.6).
  EXPECT_NEAR(L.parts.init_s, 1.0 * kMin, 1e-6);
  EXPECT_NEAR(L.parts.relaunch_s, 0.5 * kMin, 1e-6);
  EXPECT_NEAR(L.parts.other_s, 0.1 * kMin, 1e-6);
}

// A launch that failed once and then ran: the run's ETTR counts the failed launch as lost time, MTTF does not
// count it as a failure.
TEST(GoodputLedger, AFailedLaunchIsLostTimeButNotAFailure) {
  LogBuilder b;
  b.add(event::job_start, 0)["reference_step_s"] = 60.0;
  b.add(event::attempt_start, 0)["attempt"] = 1;
  b.add(event::failure_detected, 2)["kind"] = "launch";
  b.add(event::relaunch, 2);
  b.add(event::attempt_start, 2)["attempt"] = 2;
  b.add(event::init_done, 2);
  double t = 2;
  b.steps(1, 8, 1, &t);  // 2–10
  b.add(event::job_end, 10);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.failures, 0);
  EXPECT_EQ(L.launch_failures, 1);
  EXPECT_TRUE(L.mttf_censored);
  EXPECT_NEAR(L.mttf_s, 8 * kMin, 1e-6);  // the second attempt's uptime
  EXPECT_NEAR(L.parts.productive_s, 8 * kMin, 1e-6);
  EXPECT_NEAR(L.parts.init_s, 2 * kMin, 1e-6);
  EXPECT_NEAR(L.ettr, 0.8, 1e-9);  // 2 of 10 minutes lost to the failed launch
}

// A drain of a straggling slot mid-job: the job checkpoints at step 10 and stops (attempt_end "drain"); the
// 2 minutes to the next attempt are its relaunch and 1 minute of init its restart; no failure, no step lost.
TEST(GoodputLedger, AStopForADrainIsARelaunchNotAFailure) {
  LogBuilder b;
  double t = b.start_job();  // 0–1: start-up
  b.steps(1, 10, 1, &t);     // 1–11
  b.save(10, 1, &t);         // 11–12
  auto& end = b.add(event::attempt_end, 12);
  end["reason"] = "drain";
  end["last_step"] = 10;
  b.add(event::drain, 12.5)["cause"] = "straggler";
  b.add(event::relaunch, 13);
  b.add(event::attempt_start, 14)["attempt"] = 2;
  b.add(event::init_done, 15);
  auto& restore = b.add(event::ckpt_restore_end, 15);
  restore["step"] = 10;
  restore["seconds"] = 0.0;
  t = 15;
  b.steps(11, 20, 1, &t);  // 15–25
  b.add(event::job_end, 25);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  EXPECT_EQ(L.failures, 0);
  EXPECT_EQ(L.restarts, 1);
  EXPECT_EQ(L.restarts_by_kind.at("drain"), 1);
  EXPECT_EQ(L.drains, 1);
  EXPECT_EQ(L.wasted_steps, 0);
  EXPECT_NEAR(L.parts.productive_s, 20 * kMin, 1e-6);
  EXPECT_NEAR(L.parts.relaunch_s, 2 * kMin, 1e-6);  // attempt_end (12) to the next attempt (14)
  EXPECT_NEAR(L.parts.init_s, 2 * kMin, 1e-6);      // each attempt's minute of start-up
  EXPECT_NEAR(L.parts.ckpt_save_s, 1 * kMin, 1e-6);
  // Uptime is the attempts' own time: 0–12 and 14–25, not the relaunch gap between them.
  EXPECT_NEAR(L.uptime_s, 23 * kMin, 1e-6);
}

// A failure nothing relaunched (--max-restarts 0, or the limit reached): the time from its detection to the
// job's end is no relaunch (docs: relaunch = detected → next attempt_start), so it is other. A relaunch under
// way when the job ended (the time budget in its delay) stays relaunch.
TEST(GoodputLedger, TimeAfterAFailureNothingRelaunchedIsOther) {
  for (const bool relaunch_logged : {false, true}) {
    LogBuilder b;
    double t = b.start_job();  // 0–1: start-up
    b.steps(1, 5, 1, &t);      // 1–6
    b.add(event::fault_injected, 6.5)["kind"] = "crash";
    b.add(event::failure_detected, 7)["kind"] = "crash";
    if (relaunch_logged) b.add(event::relaunch, 7.5);
    b.add(event::job_end, 9);
    const Ledger L = compute_ledger(b.events);
    expect_partition(L);
    EXPECT_EQ(L.failures, 1);
    EXPECT_NEAR(L.parts.relaunch_s, relaunch_logged ? 2 * kMin : 0.0, 1e-6) << relaunch_logged;
    EXPECT_NEAR(L.parts.other_s, relaunch_logged ? 0.0 : 2 * kMin, 1e-6) << relaunch_logged;
    EXPECT_NEAR(L.parts.detection_s, 0.5 * kMin, 1e-6);
    EXPECT_NEAR(L.parts.wasted_s, 0.5 * kMin, 1e-6);  // the partial step 6–6.5
  }
}

// Two fatal faults in one step on different ranks (a crash on rank 1, an SDC on rank 0 a moment later): the
// crash the supervisor detected failed at the crash's injection, not at the SDC's.
TEST(GoodputLedger, FailureInstantIsTheInjectedFaultOfTheFailuresKind) {
  LogBuilder b;
  double t = b.start_job();  // 0–1: start-up
  b.steps(1, 5, 1, &t);      // 1–6
  auto& crash = b.add(event::fault_injected, 6.2);
  crash["kind"] = "crash";
  crash["rank"] = 1;
  auto& sdc = b.add(event::fault_injected, 6.4);
  sdc["kind"] = "sdc";
  sdc["rank"] = 0;
  b.add(event::failure_detected, 7)["kind"] = "crash";
  b.add(event::job_end, 7);
  const Ledger L = compute_ledger(b.events);
  expect_partition(L);
  ASSERT_EQ(L.failure_list.size(), 1u);
  EXPECT_NEAR(L.failure_list[0].failed_at - kBase, 6.2 * kMin, 1e-6);
  EXPECT_NEAR(L.detection_latency_s_by_kind.at("crash").at(0), 0.8 * kMin, 1e-6);
  EXPECT_NEAR(L.uptime_s, 6.2 * kMin, 1e-6);  // the attempt's start to the crash
}

TEST(GoodputLedger, MissingFieldNamesTheEvent) {
  std::vector<json> events{make_event(event::job_start, kBase), make_event(event::step, kBase + 1)};
  try {
    compute_ledger(events);
    FAIL() << "expected an input error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("event 1 (step): 'step'"), std::string::npos) << e.what();
  }
}

TEST(EventLog, ReaderSkipsATornLastLine) {
  const auto c = parse_event_log("{\"type\":\"job_start\",\"t\":1.5}\n{\"type\":\"step\",\"t\":2,\"st");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.torn_lines, 1u);
  EXPECT_EQ(c.events[0]["type"], "job_start");
}

TEST(EventLog, AppendAfterATornLineStartsANewLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb_eventlog_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "events.jsonl";
  {
    EventLog log(path);
    auto e = make_event(event::job_start);
    log.append(e, Durability::fsync);
  }
  { std::ofstream(path, std::ios::app) << "{\"type\":\"step\",\"t\":17"; }  // a writer killed mid-line
  {
    EventLog log(path);
    auto e = make_event(event::job_end);
    e["note"] = "after the torn line";
    log.append(e);
  }
  const auto c = read_event_log(path);
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.torn_lines, 1u);
  EXPECT_EQ(c.events[1]["note"], "after the torn line");
  EXPECT_GT(c.events[1]["t"].get<double>(), 1.6e9);
  std::filesystem::remove_all(dir);
}

// The supervisor's progress reads the last step event of the log's tail.
TEST(EventLog, LastStepEventSkipsOtherEventsAndALineStillBeingWritten) {
  EXPECT_EQ(last_step_event("{\"type\":\"step\",\"t\":1,\"step\":7}\n"
                            "{\"type\":\"ckpt_commit\",\"t\":2,\"step\":8}\n"
                            "{\"type\":\"step\",\"t\":3,\"step\":9"),  // no newline yet
            7);
  EXPECT_EQ(last_step_event("{\"type\":\"job_start\",\"t\":1}\n"), std::nullopt);
  EXPECT_EQ(last_step_event(""), std::nullopt);
  EXPECT_EQ(last_step_event("{\"type\":\"step\",\"t\":1,\"step\":\"x\"}\n"), std::nullopt);
  EXPECT_EQ(last_step_event("{\"type\":\"step\",\"t\":1,\"step\":3}\n\n"), 3);  // blank last line
}

TEST(EventLog, LastStepInLogReadsOnlyTheTail) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb-last-step-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "events.jsonl";
  {
    EventLog log(path);
    for (int i = 1; i <= 2000; ++i) {
      auto e = make_event(event::step, i);
      e["step"] = i;
      log.append(e);
    }
  }
  EXPECT_EQ(last_step_in_log(path), 2000);
  // A tail cut mid-line: the partial first line is not taken for an event (here it would parse as none).
  EXPECT_EQ(last_step_in_log(path, 100), 2000);
  EXPECT_EQ(last_step_in_log(path, 10), std::nullopt);  // not one whole line in the tail
  // The supervisor's read of one attempt's lines: from the newline before its first, that line is whole.
  const auto before = std::filesystem::file_size(path);
  {
    EventLog log(path);
    auto e = make_event(event::step, 2001);
    e["step"] = 7;
    log.append(e);
  }
  const auto since = std::filesystem::file_size(path) - before;
  EXPECT_EQ(last_step_in_log(path, since + 1), 7);
  EXPECT_EQ(last_step_in_log(path, since), std::nullopt);  // its first byte: taken for a partial line
  EXPECT_EQ(last_step_in_log(dir / "missing.jsonl"), std::nullopt);
  std::filesystem::remove_all(dir);
}

// A run dir removed or moved under a running job: the log's writes still succeed, so the owner asks.
TEST(EventLog, RemovedOnceItsFileIsDeletedOrReplaced) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb-removed-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "events.jsonl";
  EventLog log(path);
  log.append(make_event(event::job_start));
  EXPECT_FALSE(log.removed());
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(log.removed());
  log.append(make_event(event::step));  // still accepted, into the deleted file
  // Replaced: a new file under the same name is not the one this log writes to.
  std::filesystem::create_directories(dir);
  EventLog second(path);
  std::ofstream(dir / "other") << "x\n";
  std::filesystem::rename(dir / "other", path);
  EXPECT_TRUE(second.removed());
  std::filesystem::remove_all(dir);
  // Moved: the file keeps a name, no longer the one the log was opened at.
  std::filesystem::create_directories(dir);
  EventLog third(path);
  EXPECT_FALSE(third.removed());
  std::filesystem::rename(dir, dir.string() + ".moved");
  EXPECT_TRUE(third.removed());
  std::filesystem::remove_all(dir.string() + ".moved");
}

}  // namespace
}  // namespace fb::resilience
