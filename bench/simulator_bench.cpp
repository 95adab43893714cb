// Speed of the cluster simulator (issue 8 target: 131,072 GPUs x 30 days x 1,000 trials in under 10 s on
// 2 cores). Event-driven: the cost follows the number of failures (~1,900 per trial here), not the time span.
// Run: build/<dir>/bench/simulator_bench   (the _median rows hold the target; failures/s the event rate)
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "resilience/checkpoint_interval.hpp"
#include "resilience/cluster_simulator.hpp"
#include "resilience/failure_model.hpp"

namespace {

using namespace fb::resilience;

void run_case(benchmark::State& state, const char* model_name, std::int64_t gpus, double days, int trials) {
  const auto model = load_failure_model(model_name);
  ClusterConfig c;
  c.gpus = gpus;
  c.gpus_per_node = 8;
  c.wall_s = days * 86400.0;
  const double interval = daly_interval(c.costs.checkpoint_s, job_mtbf_s(model, gpus, 8));
  double failures = 0;
  for (auto _ : state) {
    const auto s = simulate(model, c, interval, trials, 42);
    failures = s.failures_total;
    benchmark::DoNotOptimize(s.goodput_pct.mean());
  }
  // A fast simulator that skips failures is wrong, not fast: failures per trial must be near the job's
  // expected count, wall time over the job MTBF (Poisson, so within a few percent over many trials; the
  // simulated time includes restarts, so the bound is loose below).
  const double expected = c.wall_s / job_mtbf_s(model, gpus, 8);
  const double per_trial = failures / trials;
  if (!(per_trial > 0.8 * expected && per_trial < 1.2 * expected))
    state.SkipWithError(("failures per trial " + std::to_string(per_trial) + ", expected about " +
                         std::to_string(expected) + " (wall time / job MTBF)")
                            .c_str());
  state.counters["failures_per_trial"] = per_trial;
  state.counters["failures"] =  // kIsRate: the console shows "failures=6.1M/s"
      benchmark::Counter(failures * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Llama3_131072Gpus_30Days_1000Trials(benchmark::State& state) {
  run_case(state, "llama3-h100", 131072, 30, 1000);
}
// The target is read from the median of 5 repetitions (Google Benchmark's _median row), each one call.
BENCHMARK(BM_Llama3_131072Gpus_30Days_1000Trials)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5)
    ->UseRealTime();

void BM_MetaRsc1_131072Gpus_30Days_1000Trials(benchmark::State& state) {
  run_case(state, "meta-rsc1-a100", 131072, 30, 1000);
}
BENCHMARK(BM_MetaRsc1_131072Gpus_30Days_1000Trials)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5)
    ->UseRealTime();

void BM_Llama3_16384Gpus_54Days_100Trials(benchmark::State& state) {
  run_case(state, "llama3-h100", 16384, 54, 100);
}
BENCHMARK(BM_Llama3_16384Gpus_54Days_100Trials)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

// Peak memory of the whole process (all cases), printed once after the runs.
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("max RSS of the process (all cases): %ld MiB\n", usage.ru_maxrss / 1024);
  return 0;
}
