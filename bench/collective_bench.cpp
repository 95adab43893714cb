// The collective harness's overhead: MPI_Allreduce of 1 MiB fp32 timed by `factorybench collective` (per
// iteration timers, rank reduction, result building) against a bare timed MPI loop, on the same ranks and
// buffers size. Target: under 3% apart. Needs real ranks, so it is an MPI program rather than a Google
// Benchmark fixture:
//   mpirun --oversubscribe -np 2 build/<dir>/bench/collective_bench [--iters N] [--repeats R] [--bytes SIZE]
// Rank 0 prints both times and the ratio harness/bare. Harness and bare runs alternate in ABBA order (R
// rounds) and the medians are compared, so drift of a shared machine hits both alike; the per-round ratios'
// min, median and max say whether a difference is overhead or noise. Both send the same random data, and
// the harness checks its results (--check): a wrong answer fails the bench.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/host_backend.hpp"
#include "core/mpi_context.hpp"
#include "core/random_fill.hpp"
#include "core/units.hpp"
#include "workloads/collective_benchmark.hpp"

namespace {

// nccl-tests' way: one clock around `iters` back-to-back calls, the per-rank mean averaged over ranks.
double bare_loop_us(std::size_t count, int iters, int warmup, int rank) {
  std::vector<float> send(count), recv(count);
  fb::fill_random_host(send.data(), count, fb::DType::fp32, 1000 + static_cast<std::uint64_t>(rank));
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

[[noreturn]] void usage(const fb::MpiContext& mpi, const std::string& why) {
  if (mpi.is_root())
    std::fprintf(stderr,
                 "collective_bench: %s (usage: [--iters 1..1000000] [--repeats 1..1000] [--bytes SIZE])\n",
                 why.c_str());
  std::exit(2);  // every rank parses the same arguments and stops alike
}

int count_argument(const fb::MpiContext& mpi, const std::string& name, const char* text, long max) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || end == text || v < 1 || v > max) usage(mpi, "invalid " + name + " '" + text + "'");
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  fb::MpiContext mpi(&argc, &argv);
  int iters = 200, repeats = 7;
  std::uint64_t bytes = 1 << 20;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(mpi, a + " needs a value");
    if (a == "--iters") {
      iters = count_argument(mpi, a, argv[i + 1], 1000000);
    } else if (a == "--repeats") {
      repeats = count_argument(mpi, a, argv[i + 1], 1000);
    } else if (a == "--bytes") {
      try {
        bytes = fb::parse_size(argv[i + 1], "--bytes");
      } catch (const std::exception& e) {
        usage(mpi, e.what());
      }
      // Whole fp32 elements: 6 B would run one float and print "6 B".
      if (bytes < 4 || bytes > (1ull << 31) || bytes % 4 != 0)
        usage(mpi, "invalid --bytes: a multiple of 4 B (fp32 elements), 4 B to 2 GiB");
    } else {
      usage(mpi, "unknown argument '" + a + "'");
    }
  }
  fb::HostBackend backend(mpi.local_size());
  fb::workloads::CollectiveOptions o;
  o.ops = {fb::workloads::CollectiveOp::allreduce};
  o.type = fb::DType::fp32;
  o.min_bytes = o.max_bytes = bytes;
  o.iters = iters;
  o.warmup = 20;
  o.check = true;

  std::vector<double> harness, bare, ratio;
  bool wrong = false;
  for (int r = 0; r < repeats; ++r) {
    double h = 0, b = 0;
    const auto run_harness = [&] {
      const auto run = fb::workloads::run_collective_benchmark(o, mpi, backend);
      if (!mpi.is_root()) return;
      const auto& res = run.results.front();
      const auto* w = res.metric("wrong");
      wrong = wrong || res.error.has_value() || !w || w->value != 0;
      h = res.metric("time_us")->value;
    };
    const auto run_bare = [&] { b = bare_loop_us(bytes / sizeof(float), iters, o.warmup, mpi.rank()); };
    if (r % 2 == 0) {
      run_harness();
      run_bare();
    } else {
      run_bare();
      run_harness();
    }
    harness.push_back(h);
    bare.push_back(b);
    ratio.push_back(h / b);
  }
  if (mpi.is_root()) {
    if (wrong) {
      std::fprintf(stderr, "collective_bench: the harness's all-reduce gave wrong results (--check)\n");
      return 1;
    }
    const double h = median(harness), b = median(bare);
    std::printf("MPI_Allreduce %s fp32, %d ranks, %d iters, %d rounds (medians)\n",
                fb::format_bytes(bytes).c_str(), mpi.size(), iters, repeats);
    std::printf("  harness (factorybench collective): %10.2f us\n", h);
    std::printf("  bare timed MPI loop:               %10.2f us\n", b);
    std::printf("  ratio harness/bare: %.4f (%+.2f%%; target within 3%%)\n", h / b, 100.0 * (h / b - 1.0));
    std::printf(
        "  per-round ratios: min %.4f, median %.4f, max %.4f (a spread wider than the target is noise)\n",
        *std::min_element(ratio.begin(), ratio.end()), median(ratio),
        *std::max_element(ratio.begin(), ratio.end()));
  }
  return wrong ? 1 : 0;
}
