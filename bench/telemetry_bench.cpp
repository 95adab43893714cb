// Telemetry must not disturb what it watches. Each benchmark iteration times one block of work with no
// sampler, then the same block with a sampler running (started one untimed block earlier, as a run starts it
// with the backend), and reports both and the difference: overhead_pct should stay within ±1 (noise
// included).
//
//   build/<dir>/bench/telemetry_bench                        # host: OpenBLAS GEMM, MPI all-reduce (1 rank)
//   mpirun -np 2 build/<dir>/bench/telemetry_bench           # a real two-rank all-reduce
//   build/<dir>/bench/telemetry_bench --benchmark_filter=gemm
// On a GPU machine the cuda backend (cuBLASLt, NCCL) and NVML sampling are used.
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <memory>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "core/mpi_context.hpp"
#include "core/random_fill.hpp"
#include "core/telemetry_sampler.hpp"
#include "kernels/gemm_engine.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Workload {
  std::function<void()> run_block;  // a few tens of ms of work, complete on return
};

void overhead(benchmark::State& state, fb::Backend& backend, const Workload& w, double interval_s) {
  double off_s = 0, on_s = 0;
  std::size_t samples = 0;
  w.run_block();  // warm-up
  for (auto _ : state) {
    auto t0 = Clock::now();
    w.run_block();
    off_s += std::chrono::duration<double>(Clock::now() - t0).count();
    {
      auto sampler =
          fb::make_telemetry_sampler({fb::TelemetryMode::summary, interval_s, 1.0}, backend.device());
      // In a run the sampler starts with the backend, long before anything is timed: its start-up reads
      // stay outside the timed block here too (one untimed block while it settles).
      w.run_block();
      t0 = Clock::now();
      w.run_block();
      on_s += std::chrono::duration<double>(Clock::now() - t0).count();
      sampler->stop();
      samples += sampler->sample_count();
    }
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["off_ms"] = off_s / n * 1e3;
  state.counters["on_ms"] = on_s / n * 1e3;
  state.counters["overhead_pct"] = (on_s - off_s) / off_s * 100.0;
  state.counters["samples_per_block"] = static_cast<double>(samples) / n;
}

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  fb::MpiContext mpi(&argc, &argv);
  benchmark::Initialize(&argc, argv);
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
  const int gemms = cuda ? 200 : 20;
  const Workload gemm{[&] {
    for (int i = 0; i < gemms; ++i) engine->run(p, a.data(), b.data(), c.data());
    backend->synchronize();
  }};

  // All-reduce: fp32 sum, 4 MiB on the host (MPI), 256 MiB on cuda (NCCL).
  auto comm = fb::make_communicator(mpi, *backend);
  const std::size_t count = (cuda ? 256u << 20 : 4u << 20) / 4;
  auto send = backend->allocate(count * 4), recv = backend->allocate(count * 4);
  backend->fill_random(send, fb::DType::fp32, 4);
  const int reductions = cuda ? 100 : 50;
  const Workload allreduce{[&] {
    for (int i = 0; i < reductions; ++i)
      comm->allreduce(send.data(), recv.data(), count, fb::DType::fp32, fb::ReduceOp::sum);
    comm->synchronize();
  }};

  // Fixed iteration counts: every rank must run the same number of collectives.
  for (const double interval : {0.1, 0.01}) {
    const std::string suffix = interval >= 0.1 ? "/interval:100ms" : "/interval:10ms";
    benchmark::RegisterBenchmark(
        ("gemm_telemetry_overhead" + suffix).c_str(),
        [&, interval](benchmark::State& s) { overhead(s, *backend, gemm, interval); })
        ->Iterations(40)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(
        ("allreduce_telemetry_overhead" + suffix).c_str(),
        [&, interval](benchmark::State& s) { overhead(s, *backend, allreduce, interval); })
        ->Iterations(40)
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
  return 0;
}
