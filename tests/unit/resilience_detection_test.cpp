// Pure pieces of detection and supervision: straggler scores, the SDC majority vote, the hang timeout policy,
// the launcher-output parser and the launch command line.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "resilience/supervisor.hpp"
#include "resilience/train_resilience_hooks.hpp"

namespace fb::resilience {
namespace {

TEST(StragglerScore, MedianOverOwnTime) {
  const auto s = straggler_scores({1.0, 1.0, 2.5, 1.0});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_DOUBLE_EQ(s[2], 0.4);  // below 0.8: reported
}

TEST(SdcVote, TheOddOneOutOfEachReplicaGroup) {
  // Two TP groups (0 and 1) of three DP replicas each; rank 4 disagrees with its group.
  const std::vector<std::uint64_t> sums{7, 9, 7, 9, 8, 7};
  const std::vector<int> group{0, 1, 0, 1, 1, 0};
  EXPECT_EQ(sdc_outliers(sums, group), (std::vector<bool>{false, false, false, false, true, false}));
  // Two replicas that disagree: no strict majority, nobody is blamed.
  EXPECT_EQ(sdc_outliers({1, 2}, {0, 0}), (std::vector<bool>{false, false}));
  // Two replicas that differ name nobody, yet they disagree: the state is corrupt and must roll back.
  EXPECT_TRUE(replicas_disagree({1, 2}, {0, 0}));
  EXPECT_TRUE(replicas_disagree({7, 7, 3, 4}, {0, 0, 1, 1}));
  EXPECT_FALSE(replicas_disagree({7, 7, 3, 3}, {0, 0, 1, 1}));
  EXPECT_FALSE(replicas_disagree({1, 2, 3}, {0, 1, 2}));  // one replica per group: nothing to compare
}

TEST(HangTimeout, AutoIsAMultipleOfTheStepTimeWithAFloor) {
  const auto p = parse_hang_timeout("auto");
  EXPECT_DOUBLE_EQ(p.timeout(0.01, true), 3.0);
  EXPECT_DOUBLE_EQ(p.timeout(1.0, true), 10.0);
  EXPECT_DOUBLE_EQ(p.timeout(1.0, false), 120.0);
  EXPECT_DOUBLE_EQ(parse_hang_timeout("90s").timeout(1.0, true), 90.0);
  EXPECT_THROW(parse_hang_timeout("soon"), Error);
  EXPECT_THROW(parse_hang_timeout("0s"), Error);
  EXPECT_THROW(parse_hang_timeout("10ms"), Error);  // below the watchdog's half-second look: any step a hang
  EXPECT_DOUBLE_EQ(*parse_hang_timeout("1s").fixed_s, 1.0);
}

TEST(Supervisor, FailedRankFromLauncherOutput) {
  EXPECT_EQ(failed_rank_from_launcher_output("--------\nmpirun noticed that process rank 3 with PID 4242 on "
                                             "node n1 exited on signal 9 (Killed).\n"),
            3);
  EXPECT_EQ(failed_rank_from_launcher_output("srun: error: n2: task 5: Killed\n"), 5);
  EXPECT_EQ(failed_rank_from_launcher_output("nothing useful"), -1);
}

TEST(Supervisor, LaunchCommandResumesFromTheRunDir) {
  SupervisorOptions o;
  o.ranks = 4;
  o.binary = "/opt/fb/bin/factorybench";
  o.launcher_args = {"--oversubscribe"};
  o.train_args = {"--model", "tiny-dense"};
  o.run_dir = "/tmp/run";
  o.steps = 60;
  o.faults = "crash@step=15,rank=1";
  const auto cmd = launch_command(o, 2);
  const std::vector<std::string> expected{"mpirun",
                                          "-np",
                                          "4",
                                          "--oversubscribe",
                                          "/opt/fb/bin/factorybench",
                                          "train",
                                          "--model",
                                          "tiny-dense",
                                          "--run-dir",
                                          "/tmp/run",
                                          "--steps",
                                          "60",
                                          "--resume",
                                          "--warmup-steps",
                                          "0",
                                          "--output",
                                          "/tmp/run/attempt-2.json",
                                          "--faults",
                                          "crash@step=15,rank=1"};
  EXPECT_EQ(cmd, expected);
}

TEST(ResilienceOptions, ValidationNamesTheOption) {
  ResilienceOptions o;
  o.resume = true;
  EXPECT_THROW(validate_resilience_options(o), Error);
  o.run_dir = "/tmp/x";
  o.checkpoint_interval = "auto";
  try {
    validate_resilience_options(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--checkpoint-interval auto needs --mtbf DURATION (Daly's interval)");
  }
  o.checkpoint_interval.clear();
  o.keep = 0;
  EXPECT_THROW(validate_resilience_options(o), Error);
}

}  // namespace
}  // namespace fb::resilience
