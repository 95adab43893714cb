// tools/train_so_far.hpp: the steps recorded one at a time make the same run as the training loop's, with
// its breakdown (the medians) computed when a snapshot is taken, not at each step.
#include <gtest/gtest.h>

#include "tools/train_so_far.hpp"

namespace fb::tools {
namespace {

using workloads::TrainRun;

workloads::train::CatSeconds cats(double gemm) {
  workloads::train::CatSeconds c{};
  c[0] = gemm;
  c[1] = 2 * gemm;
  return c;
}

// One more measured step, as run_training adds it.
void step(TrainRun& run, double seconds) {
  run.step_seconds.push_back(seconds);
  run.profiled.push_back(cats(seconds / 4));
  ++run.steps_run;
  ++run.last_step;
  run.loss = 10 - run.last_step;
  run.grad_norm = 0.5 * run.last_step;
  run.collective_bytes = {{"dp_allreduce", 1024.0 * run.last_step}};
  run.collective_calls = {{"dp_allreduce", 2.0}};
}

TEST(TrainSoFar, NothingBeforeTheFirstMeasuredStep) {
  const TrainSoFar so_far;
  EXPECT_FALSE(so_far.snapshot().has_value());
}

TEST(TrainSoFar, StepsRecordedOneByOneMakeTheLoopsRun) {
  TrainRun run;
  run.first_step = 5;
  run.last_step = 4;
  run.warmup_steps = 2;
  run.gemm_engine = "openblas";
  run.attention_engine = "gemm";
  TrainSoFar so_far;
  const double seconds[] = {0.4, 0.1, 0.3, 0.2, 0.8};
  for (const double s : seconds) {
    step(run, s);
    so_far.record(run);
  }
  const auto snap = so_far.snapshot();
  ASSERT_TRUE(snap.has_value());
  EXPECT_EQ(snap->step_seconds, run.step_seconds);
  EXPECT_EQ(snap->profiled, run.profiled);
  EXPECT_EQ(snap->steps_run, 5);
  EXPECT_EQ(snap->first_step, 5);
  EXPECT_EQ(snap->last_step, 9);
  EXPECT_EQ(snap->warmup_steps, 2);
  EXPECT_DOUBLE_EQ(snap->loss, 1.0);
  EXPECT_DOUBLE_EQ(snap->grad_norm, 4.5);
  EXPECT_DOUBLE_EQ(snap->collective_bytes.at("dp_allreduce"), 9216.0);
  EXPECT_EQ(snap->gemm_engine, "openblas");
  EXPECT_EQ(snap->attention_engine, "gemm");
  // The breakdown is the median of the profiled steps: 0.3 s / 4 for the first category, twice that next.
  const auto& names = workloads::train::breakdown_categories();
  EXPECT_DOUBLE_EQ(snap->breakdown_seconds.at(names[0]), 0.075);
  EXPECT_DOUBLE_EQ(snap->breakdown_seconds.at(names[1]), 0.15);
  EXPECT_EQ(snap->breakdown_seconds, workloads::median_breakdown(run.profiled));
  // The snapshot is a copy: the run goes on without changing it.
  step(run, 0.5);
  EXPECT_EQ(snap->step_seconds.size(), 5u);
  so_far.record(run);
  EXPECT_EQ(so_far.snapshot()->step_seconds.size(), 6u);
}

TEST(TrainSoFar, ASeriesThatShrankIsTakenWhole) {
  TrainRun run;
  step(run, 1.0);
  step(run, 2.0);
  TrainSoFar so_far;
  so_far.record(run);
  run.profiled.assign(1, cats(7));
  run.step_seconds.push_back(3.0);
  so_far.record(run);
  EXPECT_EQ(so_far.snapshot()->profiled, run.profiled);
  EXPECT_EQ(so_far.snapshot()->step_seconds, (std::vector<double>{1.0, 2.0, 3.0}));
}

}  // namespace
}  // namespace fb::tools
