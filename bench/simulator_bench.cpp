// Speed of the cluster simulator (issue 8 target: 131,072 GPUs x 30 days x 1,000 trials in under 10 s on
// 2 cores). Event-driven: the cost follows the number of failures (~1,900 per trial here), not the time span.
// Run: build/<dir>/bench/simulator_bench   (prints the wall time of the full case and events per second)
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

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
  double failures = 0, seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto s = simulate(model, c, interval, trials, 42);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    failures = s.failures_total;
    benchmark::DoNotOptimize(s.goodput_pct.mean());
  }
  state.counters["failures"] = failures;
  state.counters["failures_per_s"] =
      benchmark::Counter(failures * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "simulate %s %lld GPUs x %.0f days x %d trials: %.3f s (%.0f failures, target < 10 s), max RSS %ld "
      "MiB\n",
      model_name, static_cast<long long>(gpus), days, trials, seconds, failures, usage.ru_maxrss / 1024);
}

void BM_Llama3_131072Gpus_30Days_1000Trials(benchmark::State& state) {
  run_case(state, "llama3-h100", 131072, 30, 1000);
}
BENCHMARK(BM_Llama3_131072Gpus_30Days_1000Trials)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_MetaRsc1_131072Gpus_30Days_1000Trials(benchmark::State& state) {
  run_case(state, "meta-rsc1-a100", 131072, 30, 1000);
}
BENCHMARK(BM_MetaRsc1_131072Gpus_30Days_1000Trials)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

void BM_Llama3_16384Gpus_54Days_100Trials(benchmark::State& state) {
  run_case(state, "llama3-h100", 16384, 54, 100);
}
BENCHMARK(BM_Llama3_16384Gpus_54Days_100Trials)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
