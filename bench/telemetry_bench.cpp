// Telemetry must not disturb what it watches. Each benchmark iteration times one block of work with no
// sampler and the same block with a sampler running (started, as a run starts it with the backend, before
// the timed block: one untimed call of the work lets it settle), in ABBA order so drift hits both alike.
// A block lasts at least five sampling intervals (a sampler that wakes once per block, or not at all, would
// be invisible), calibrated on rank 0 and shared so every rank runs the same collectives. overhead_pct is the
// median of the per-pair on/off ratios, with their quartiles (overhead_q1_pct, overhead_q3_pct) as the
// spread: it should stay within ±1.
//
//   build/<dir>/bench/telemetry_bench                        # host: OpenBLAS GEMM, MPI all-reduce (1 rank)
//   mpirun -np 2 build/<dir>/bench/telemetry_bench           # a real two-rank all-reduce
//   build/<dir>/bench/telemetry_bench --benchmark_filter=gemm --pairs 10
// On a GPU machine the cuda backend (cuBLASLt, NCCL) and NVML sampling are used. Only the counters mean
// anything: the Time column sums both sides and the settling call.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "core/mpi_context.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/telemetry_sampler.hpp"
#include "kernels/gemm_engine.hpp"
#include "workloads/gemm_benchmark.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Workload {
  std::function<void()> run_once;  // one call of the work, complete on return (synchronized)
};

double seconds_of(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Calls per block for a block of at least max(5 intervals, 50 ms): rank 0's median of 5 timed calls
// decides, corrected by one timed block, and every rank uses its count (collectives must match).
int calls_per_block(const fb::MpiContext& mpi, const Workload& w, double interval_s) {
  std::vector<double> t;
  for (int i = 0; i < 6; ++i) t.push_back(seconds_of(w.run_once));
  t.erase(t.begin());  // the first call pays for warm-up
  const double target = std::max(5 * interval_s, 0.05);
  int calls =
      std::clamp(static_cast<int>(std::ceil(target / std::max(fb::summarize(t).median, 1e-6))), 1, 100000);
  fb::broadcast(mpi, calls);
  // Short calls run faster back to back than one by one: one timed block corrects the count once.
  const double block_s = seconds_of([&] {
    for (int i = 0; i < calls; ++i) w.run_once();
  });
  if (block_s < target)
    calls = std::clamp(static_cast<int>(std::ceil(calls * 1.1 * target / block_s)), calls, 1000000);
  fb::broadcast(mpi, calls);
  return calls;
}

// The q-quantile (0..1) of `v` by linear interpolation between order statistics.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

void overhead(benchmark::State& state, const fb::MpiContext& mpi, fb::Backend& backend, const Workload& w,
              double interval_s) {
  const int calls = calls_per_block(mpi, w, interval_s);
  const auto block = [&] {
    for (int i = 0; i < calls; ++i) w.run_once();
  };
  std::vector<double> off, on, ratio;
  std::size_t samples = 0;
  for (auto _ : state) {
    double off_s = 0, on_s = 0;
    const auto run_off = [&] { off_s = seconds_of(block); };
    const auto run_on = [&] {
      auto sampler =
          fb::make_telemetry_sampler({fb::TelemetryMode::summary, interval_s, 1.0}, backend.device());
      w.run_once();  // untimed: the sampler's start-up reads stay outside the timed block
      on_s = seconds_of(block);
      sampler->stop();
      samples += sampler->sample_count();
    };
    if (off.size() % 2 == 0) {
      run_off();
      run_on();
    } else {
      run_on();
      run_off();
    }
    off.push_back(off_s);
    on.push_back(on_s);
    ratio.push_back(on_s / off_s);
  }
  if (ratio.empty()) return;
  const double n = static_cast<double>(ratio.size());
  state.counters["calls_per_block"] = calls;
  state.counters["off_ms"] = fb::summarize(off).median * 1e3;
  state.counters["on_ms"] = fb::summarize(on).median * 1e3;
  state.counters["overhead_pct"] = (fb::summarize(ratio).median - 1) * 100.0;
  state.counters["overhead_q1_pct"] = (quantile(ratio, 0.25) - 1) * 100.0;
  state.counters["overhead_q3_pct"] = (quantile(ratio, 0.75) - 1) * 100.0;
  state.counters["samples_per_block"] = static_cast<double>(samples) / n;
  // The overhead of a sampler that never woke would read as none: the timed block lasts at least 5
  // intervals, so a working sampler takes about that many samples (a quarter allows for a loaded machine).
  const double expected = fb::summarize(on).median / interval_s;
  if (static_cast<double>(samples) / n < std::max(1.0, expected / 4))
    state.SkipWithError(
        fmt::format("the sampler took {:.2g} samples per block, expected about {:.2g}: it did "
                    "not run, and its overhead was not measured",
                    static_cast<double>(samples) / n, expected)
            .c_str());
}

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

// --pairs N (off/on pairs per benchmark, default 20), taken out of argv before Google Benchmark's check.
int take_pairs(int& argc, char** argv) {
  int pairs = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--pairs") continue;
    char* end = nullptr;
    const long v = i + 1 < argc ? std::strtol(argv[i + 1], &end, 10) : 0;
    if (i + 1 >= argc || *end != '\0' || v < 1 || v > 100000) {
      std::fprintf(stderr, "telemetry_bench: --pairs needs a count from 1 to 100000\n");
      std::exit(2);
    }
    pairs = static_cast<int>(v);
    for (int j = i; j + 2 <= argc; ++j) argv[j] = argv[j + 2];
    argc -= 2;
    break;
  }
  return pairs;
}

}  // namespace

int main(int argc, char** argv) {
  fb::MpiContext mpi(&argc, &argv);
  const int pairs = take_pairs(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  auto backend = fb::make_backend(fb::BackendChoice::automatic, mpi.local_rank(), mpi.local_size());
  const bool cuda = backend->kind() == fb::BackendKind::cuda;

  // GEMM: fp32 512^3 on the host (OpenBLAS), bf16 8192^3 on cuda (cuBLASLt).
  const fb::DType dtype = cuda ? fb::DType::bf16 : fb::DType::fp32;
  fb::kernels::GemmProblem p;
  p.m = p.n = p.k = cuda ? 8192 : 512;
  p.dtype = dtype;
  fb::kernels::GemmEngineOptions eo;
  eo.local_ranks = mpi.local_size();
  auto engine = fb::kernels::make_gemm_engine(*backend, dtype, eo);
  const auto types = fb::kernels::gemm_types(dtype);
  auto a = backend->allocate(static_cast<std::size_t>(p.elements_a()) * fb::dtype_bytes(types.a));
  auto b = backend->allocate(static_cast<std::size_t>(p.elements_b()) * fb::dtype_bytes(types.b));
  auto c = backend->allocate(static_cast<std::size_t>(p.elements_c()) * fb::dtype_bytes(types.c));
  backend->fill_random(a, types.a, 1);
  backend->fill_random(b, types.b, 2);
  backend->fill_random(c, types.c, 3);
  engine->prepare(p, a.data(), b.data(), c.data());
  const Workload gemm{[&] {
    engine->run(p, a.data(), b.data(), c.data());
    backend->synchronize();
  }};

  // All-reduce: fp32 sum, 4 MiB on the host (MPI), 256 MiB on cuda (NCCL).
  auto comm = fb::make_communicator(mpi, *backend);
  const std::size_t count = (cuda ? 256u << 20 : 4u << 20) / 4;
  auto send = backend->allocate(count * 4), recv = backend->allocate(count * 4);
  backend->fill_random(send, fb::DType::fp32, 4);
  const Workload allreduce{[&] {
    comm->allreduce(send.data(), recv.data(), count, fb::DType::fp32, fb::ReduceOp::sum);
    comm->synchronize();
  }};

  // Fixed iteration counts: every rank must run the same number of collectives.
  for (const double interval : {0.1, 0.01}) {
    const std::string suffix = interval >= 0.1 ? "/interval:100ms" : "/interval:10ms";
    benchmark::RegisterBenchmark(
        ("gemm_telemetry_overhead" + suffix).c_str(),
        [&, interval](benchmark::State& s) { overhead(s, mpi, *backend, gemm, interval); })
        ->Iterations(pairs)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("allreduce_telemetry_overhead" + suffix).c_str(),
        [&, interval](benchmark::State& s) { overhead(s, mpi, *backend, allreduce, interval); })
        ->Iterations(pairs)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  if (mpi.is_root()) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();

  // The timed work did what it says (an overhead of wrong answers is no measurement): the last GEMM's C
  // sampled against the fp64 reference, and the last all-reduce's sum (every rank sends the same seeded data,
  // so it is world size x send, to fp32 rounding). Every rank checks; exit 1 on any failure.
  bool ok = true;
  const auto check = fb::workloads::check_gemm_output(*backend, p, a, b, c, 128, 7);
  if (!check.ok()) {
    std::fprintf(stderr, "telemetry_bench: rank %d: the GEMM's result is wrong: %s\n", mpi.rank(),
                 check.detail.c_str());
    ok = false;
  }
  std::vector<float> sent(count), summed(count);
  backend->copy_to_host(sent.data(), send, count * 4);
  backend->copy_to_host(summed.data(), recv, count * 4);
  const double ranks = mpi.size();
  for (std::size_t i = 0; i < count && ok; i += 97) {
    const double want = ranks * sent[i];
    if (!(std::fabs(summed[i] - want) <= 1e-6 * ranks * std::fabs(sent[i]))) {
      std::fprintf(stderr, "telemetry_bench: rank %d: all-reduce element %zu is %g, expected %g\n",
                   mpi.rank(), i, static_cast<double>(summed[i]), want);
      ok = false;
    }
  }
  return mpi.all_true(ok) ? 0 : 1;
}
