// The supervisor's pure helpers for srun and the pre-flight, on hand-written launcher and squeue output:
// which node a failed task ran on, the per-attempt step name, the step ids squeue lists under that name,
// the command lines of an attempt and of its pre-flight health job, and a running job's figures so far.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "core/error.hpp"
#include "resilience/event_log.hpp"
#include "resilience/supervisor.hpp"

namespace fb::resilience {
namespace {

TEST(SrunOutput, FailedHostIsTheNodeOfTheFirstFailedTask) {
  // srun 23.02 after one task was SIGKILLed with --kill-on-bad-exit=1: the others are killed in turn.
  const std::string killed =
      "srun: error: gpu-a-07: task 3: Killed\n"
      "srun: launch/slurm: _step_signal: Terminating StepId=4242.3\n"
      "slurmstepd: error: *** STEP 4242.3 ON gpu-a-01 CANCELLED AT 2025-01-12T10:11:12 ***\n"
      "srun: error: gpu-a-01: tasks 0-2: Killed\n"
      "srun: error: gpu-a-08: task 4: Killed\n";
  EXPECT_EQ(failed_host_from_launcher_output(killed), "gpu-a-07");
  EXPECT_EQ(failed_rank_from_launcher_output(killed), 3);
  // A watchdog exit (status 75) and an abort.
  EXPECT_EQ(failed_host_from_launcher_output("srun: error: node12: task 0: Exited with exit code 75\n"),
            "node12");
  EXPECT_EQ(
      failed_host_from_launcher_output("srun: error: n3.cluster.local: task 9: Aborted (core dumped)\n"),
      "n3.cluster.local");
}

TEST(SrunOutput, NoFailedTaskNoHost) {
  EXPECT_EQ(failed_host_from_launcher_output(""), "");
  EXPECT_EQ(
      failed_host_from_launcher_output("srun: Job step aborted: Waiting up to 32 seconds for job step to "
                                       "finish.\nslurmstepd: error: *** STEP 12.0 ON node1 CANCELLED AT "
                                       "2025-01-12T10:11:12 ***\n"),
      "");
  // Open MPI's report names a rank, not an srun task: no host from it.
  EXPECT_EQ(
      failed_host_from_launcher_output("mpirun noticed that process rank 1 with PID 77 on node vm exited "
                                       "on signal 9 (Killed).\n"),
      "");
  // "tasks 0-2" (a range, killed after the first failure) is not the first failed task.
  EXPECT_EQ(failed_host_from_launcher_output("srun: error: node1: tasks 0-2: Killed\n"), "");
}

TEST(SrunStepName, UniquePerRunDirectoryAndAttempt) {
  SupervisorOptions a, b;
  a.run_dir = "/scratch/runs/a";
  b.run_dir = "/scratch/runs/b";
  const auto name = srun_step_name(a, 3);
  EXPECT_TRUE(std::regex_match(name, std::regex("fb-train-[0-9a-f]{8}-3"))) << name;
  EXPECT_EQ(name, srun_step_name(a, 3));  // stable: the supervisor finds its steps again by name
  EXPECT_NE(name, srun_step_name(a, 4));
  EXPECT_NE(name, srun_step_name(b, 3));
  EXPECT_EQ(name.substr(0, 18), srun_step_name(a, 4).substr(0, 18));  // same run dir, same hash
  // A relative run directory names the same directory as its absolute form.
  SupervisorOptions rel, abs;
  rel.run_dir = "run";
  abs.run_dir = std::filesystem::absolute("run");
  EXPECT_EQ(srun_step_name(rel, 1), srun_step_name(abs, 1));
}

TEST(SlurmSteps, IdsOfTheStepsWithExactlyThatName) {
  // `squeue -h -s -o "%i %j"`: step id and step name, one step per line.
  const std::string squeue =
      "4242.0 fb-train-0badf00d-1\n"
      "4242.1 fb-train-0badf00d-2\n"
      "4242.batch batch\n"
      "4243.0 fb-train-0badf00d-2\n"
      "4242.2 fb-train-0badf00d-21\n"
      "4244.0 fb-train-deadbeef-2\n";
  EXPECT_EQ(slurm_steps_named(squeue, "fb-train-0badf00d-2"), (std::vector<std::string>{"4242.1", "4243.0"}));
  EXPECT_EQ(slurm_steps_named(squeue, "fb-train-0badf00d-1"), (std::vector<std::string>{"4242.0"}));
  EXPECT_TRUE(slurm_steps_named(squeue, "fb-train-0badf00d-3").empty());
  EXPECT_TRUE(slurm_steps_named("", "fb-train-0badf00d-2").empty());
  EXPECT_TRUE(slurm_steps_named("squeue: error: Invalid user\n", "fb-train-0badf00d-2").empty());
}

TEST(SrunLaunch, ExcludesDrainedHostsAndNamesTheStep) {
  SupervisorOptions o;
  o.ranks = 4;
  o.launcher = Launcher::srun;
  o.launcher_args = {"--mpi=pmix"};
  o.binary = "/opt/fb/bin/factorybench";
  o.run_dir = "/scratch/run";
  o.steps = 10;
  o.exclude_hosts = {"node3", "node9"};
  const auto cmd = launch_command(o, 2);
  ASSERT_GE(cmd.size(), 8u);
  const std::vector<std::string> head(cmd.begin(), cmd.begin() + 8);
  EXPECT_EQ(head, (std::vector<std::string>{"srun", "-n", "4", "--kill-on-bad-exit=1",
                                            "--job-name=" + srun_step_name(o, 2), "--exclude=node3,node9",
                                            "--mpi=pmix", "/opt/fb/bin/factorybench"}));
  EXPECT_EQ(cmd[8], "train");
}

TEST(Preflight, HealthThroughTheSameLauncherOnTheRunsCheckpointDirectory) {
  SupervisorOptions o;
  o.ranks = 2;
  o.launcher_args = {"--oversubscribe"};
  o.binary = "/opt/fb/bin/factorybench";
  o.run_dir = "/scratch/run";
  o.preflight_args = {"--backend", "host", "--gemm-floor", "0.5"};
  EXPECT_EQ(preflight_command(o, 3, 1, "/scratch/run/preflight-3.json"),
            (std::vector<std::string>{"mpirun", "-np", "2", "--oversubscribe", "/opt/fb/bin/factorybench",
                                      "health", "--backend", "host", "--gemm-floor", "0.5",
                                      "--checkpoint-dir", "/scratch/run/checkpoints", "--run-dir",
                                      "/scratch/run", "--output", "/scratch/run/preflight-3.json"}));
  // A --checkpoint-dir or --run-dir of the user's is kept, not doubled.
  o.preflight_args = {"--checkpoint-dir", "/lustre/ckpt", "--run-dir", "/lustre/hang"};
  const auto cmd = preflight_command(o, 1, 2, "r.json");
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "--checkpoint-dir"), 1);
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "--run-dir"), 1);
  // srun: a step name of its own per round, so a leftover is never mistaken for the training step.
  o.launcher = Launcher::srun;
  const auto s = preflight_command(o, 1, 2, "r.json");
  EXPECT_NE(std::find(s.begin(), s.end(), "--job-name=" + srun_step_name(o, 1) + "-preflight-2"), s.end());
}

// One validation of the supervisor's options, each message naming the option (issue 14).
TEST(SupervisorOptions, ValidationNamesTheOption) {
  const auto message = [](auto change) {
    SupervisorOptions o;
    o.steps = 10;
    change(o);
    try {
      validate_supervisor_options(o);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([](SupervisorOptions&) {}), "");
  EXPECT_EQ(message([](SupervisorOptions& o) { o.ranks = 0; }), "invalid --ranks 0: must be at least 1");
  EXPECT_EQ(message([](SupervisorOptions& o) {
              o.launcher = Launcher::none;
              o.ranks = 2;
            }),
            "--launcher none runs one rank; --ranks 2 needs mpirun or srun");
  EXPECT_EQ(message([](SupervisorOptions& o) { o.steps = 0; }), "invalid --steps 0: must be at least 1");
  EXPECT_EQ(message([](SupervisorOptions& o) { o.max_restarts = -1; }),
            "invalid --max-restarts -1: must not be negative");
  EXPECT_EQ(message([](SupervisorOptions& o) { o.drain_after = 0; }),
            "invalid --drain-after 0: must be at least 1");
  EXPECT_EQ(message([](SupervisorOptions& o) { o.spares = -1; }),
            "invalid --spares -1: must not be negative");
}

// The launcher names are one table: each parses back to itself, and the command line follows the enum.
TEST(SupervisorOptions, LauncherNamesRoundTrip) {
  for (const auto& [value, name] : kLauncherNames) EXPECT_EQ(enum_value(kLauncherNames, name), value);
  EXPECT_EQ(enum_choices(kLauncherNames), "mpirun, srun or none");
  SupervisorOptions o;
  o.steps = 3;
  o.run_dir = "/tmp/r";
  o.binary = "fb";
  o.launcher = Launcher::none;
  EXPECT_EQ(launch_command(o, 1).front(), "fb");
  o.launcher = Launcher::mpirun;
  EXPECT_EQ(launch_command(o, 1).front(), "mpirun");
}

// A job the supervisor was stopped in (a signal, a kill): its event log up to then, read while attempt 2 ran.
// Seconds from t0: start-up 0-1, steps 1-10 (1 s each), a crash at 10.5 detected at 11, a pre-flight that
// failed rank 1 (11-12) and drained it, attempt 2 from 13 (start-up to 14), steps 1-4 again (14-18).
std::vector<nlohmann::json> job_stopped_in_attempt_two(double t0) {
  std::vector<nlohmann::json> ev;
  const auto add = [&](std::string_view type, double t) -> nlohmann::json& {
    ev.push_back(make_event(type, t0 + t));
    return ev.back();
  };
  add(event::job_start, 0)["reference_step_s"] = 1.0;
  add(event::attempt_start, 0)["attempt"] = 1;
  add(event::init_done, 1);
  for (int s = 1; s <= 10; ++s) {
    auto& e = add(event::step, 1 + s);
    e["step"] = s;
    e["t_start"] = t0 + s;
  }
  add(event::fault_injected, 10.5)["kind"] = "crash";
  auto& f = add(event::failure_detected, 11);
  f["kind"] = "crash";
  f["rank"] = 1;
  f["how"] = "supervisor: job ended";
  auto& pf = add(event::preflight, 12);
  pf["t_start"] = t0 + 11;
  pf["verdict"] = "fail";
  auto& d = add(event::drain, 12.5);
  d["cause"] = "failures";
  d["rank"] = 1;
  add(event::relaunch, 12.5);
  add(event::preflight, 13)["verdict"] = "pass";
  add(event::attempt_start, 13)["attempt"] = 2;
  add(event::init_done, 14);
  for (int s = 1; s <= 4; ++s) {
    auto& e = add(event::step, 14 + s);
    e["step"] = s;
    e["t_start"] = t0 + 13 + s;
  }
  return ev;
}

TEST(JobSoFar, AccountsTheLogUpToNowAndClosesItWithAJobEnd) {
  const double t0 = 1.7e9;
  const auto events = job_stopped_in_attempt_two(t0);
  const auto r = job_so_far(events, t0 + 20, "the supervisor was stopped while the job ran");
  EXPECT_FALSE(r.completed);
  EXPECT_EQ(r.stop, StopReason::unfinished);
  EXPECT_EQ(r.stop_reason, "the supervisor was stopped while the job ran (attempt 2, step 10 reached)");
  ASSERT_EQ(r.events.size(), events.size() + 1);
  EXPECT_EQ(r.events.back()["type"], event::job_end);
  EXPECT_DOUBLE_EQ(r.events.back()["t"].get<double>(), t0 + 20);
  EXPECT_EQ(r.events.back()["reason"], r.stop_reason);
  EXPECT_EQ(r.events.back()["completed"], false);
  // The ledger is the one the supervisor's own end gives for that log, wall time to `now`.
  auto closed = events;
  closed.push_back(r.events.back());
  const Ledger whole = compute_ledger(closed);
  EXPECT_DOUBLE_EQ(r.ledger.wall_s, 20.0);
  EXPECT_DOUBLE_EQ(r.ledger.wall_s, whole.wall_s);
  EXPECT_DOUBLE_EQ(r.ledger.parts.productive_s, whole.parts.productive_s);
  EXPECT_NEAR(r.ledger.parts.total(), r.ledger.wall_s, 1e-9);
  EXPECT_EQ(r.ledger.failures, 1);
  EXPECT_EQ(r.ledger.restarts, 1);
  EXPECT_EQ(r.ledger.steps_completed, 4);  // the final result so far: attempt 2 started over from step 0
  // Pre-flights and drains from their events; the failure-caused drain splits the MTTF.
  EXPECT_EQ(r.preflights, 2);
  EXPECT_EQ(r.preflight_failures, 1);
  ASSERT_EQ(r.drains.size(), 1u);
  EXPECT_EQ(r.failures_before_drain, 1);
  EXPECT_EQ(r.failures_after_drain, 0);
  EXPECT_FALSE(std::isnan(r.mttf_before_drain_s));
}

TEST(JobSoFar, ALogBeforeAnyAttemptKeepsTheReasonAlone) {
  const double t0 = 1.7e9;
  const auto r = job_so_far({make_event(event::job_start, t0)}, t0 + 2, "stopped");
  EXPECT_EQ(r.stop_reason, "stopped");
  EXPECT_DOUBLE_EQ(r.ledger.wall_s, 2.0);
  EXPECT_EQ(r.ledger.attempts, 0);
  EXPECT_TRUE(r.drains.empty());
  EXPECT_TRUE(std::isnan(r.mttf_before_drain_s));  // no drain: no MTTF on either side
}

}  // namespace
}  // namespace fb::resilience
