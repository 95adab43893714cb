// The collective harness's overhead: MPI_Allreduce of 1 MiB fp32 timed by `factorybench collective` (per
// iteration timers, rank reduction, result building) against a bare timed MPI loop, on the same ranks and
// buffers size. Target: under 3% apart. Needs real ranks, so it is an MPI program rather than a Google
// Benchmark fixture:
//   mpirun --oversubscribe -np 2 build/<dir>/bench/collective_bench [--iters N] [--repeats R] [--bytes SIZE]
// Rank 0 prints both times and the ratio harness/bare. Harness and bare runs alternate (R rounds) and the
// medians are compared, so drift of a shared machine hits both alike.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/host_backend.hpp"
#include "core/mpi_context.hpp"
#include "core/units.hpp"
#include "workloads/collective_benchmark.hpp"

namespace {

// nccl-tests' way: one clock around `iters` back-to-back calls, the per-rank mean averaged over ranks.
double bare_loop_us(std::size_t count, int iters, int warmup) {
  std::vector<float> send(count, 1.0f), recv(count);
  for (int i = 0; i < warmup; ++i)
    MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i)
    MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const double local =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / size;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  fb::MpiContext mpi(&argc, &argv);
  int iters = 200, repeats = 7;
  std::uint64_t bytes = 1 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--iters")
      iters = std::atoi(argv[i + 1]);
    else if (a == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else if (a == "--bytes")
      bytes = fb::parse_size(argv[i + 1], "--bytes");
  }
  fb::HostBackend backend(mpi.local_size());
  fb::workloads::CollectiveOptions o;
  o.ops = {fb::workloads::CollectiveOp::allreduce};
  o.type = fb::DType::fp32;
  o.min_bytes = o.max_bytes = bytes;
  o.iters = iters;
  o.warmup = 20;

  std::vector<double> harness, bare;
  for (int r = 0; r < repeats; ++r) {
    const auto run = fb::workloads::run_collective_benchmark(o, mpi, backend);
    if (mpi.is_root()) harness.push_back(run.results.front().metric("time_us")->value);
    bare.push_back(bare_loop_us(bytes / sizeof(float), iters, o.warmup));
  }
  if (mpi.is_root()) {
    const double h = median(harness), b = median(bare);
    std::printf("MPI_Allreduce %s fp32, %d ranks, %d iters, %d rounds (medians)\n",
                fb::format_bytes(bytes).c_str(), mpi.size(), iters, repeats);
    std::printf("  harness (factorybench collective): %10.2f us\n", h);
    std::printf("  bare timed MPI loop:               %10.2f us\n", b);
    std::printf("  ratio harness/bare: %.4f (%+.2f%%; target within 3%%)\n", h / b, 100.0 * (h / b - 1.0));
  }
  return 0;
}
