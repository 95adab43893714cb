#include "workloads/measurement_loop.hpp"

#include <time.h>

#include <algorithm>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rank_collectives.hpp"

namespace fb::workloads {

void validate_iterations(long long iters, long long warmup) {
  if (iters < 1 || iters > kMaxIterations)
    throw usage_error(fmt::format("invalid --iters {}: must be in [1, {}]", iters, kMaxIterations));
  if (warmup < 0 || warmup > kMaxIterations)
    throw usage_error(fmt::format("invalid --warmup {}: must be in [0, {}]", warmup, kMaxIterations));
}

std::string few_samples_warning(long long iters, long long warmup) {
  std::string out;
  if (iters < 3)
    out = fmt::format(
        "--iters {}: {} timed sample(s) per case, so no spread and a median of {} (use 3 or more)", iters,
        iters, iters == 1 ? "that one sample" : "two");
  if (warmup == 0)
    out += fmt::format("{}--warmup 0: the first timed call includes start-up (plans, caches, page faults)",
                       out.empty() ? "" : "; ");
  return out;
}

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

Measurement measure(Backend& backend, const MeasureLoop& loop, const std::function<void(int)>& iteration) {
  const int buffers = std::max(1, loop.buffers);
  const auto settle = [&](const std::function<void()>& hook) {
    if (hook)
      hook();
    else
      backend.synchronize();
  };
  const int total = loop.warmup + loop.iters;
  const auto tick = [&](int done) {
    if (loop.on_iteration) loop.on_iteration(done, total);
  };
  for (int i = 0; i < loop.warmup; ++i) {
    iteration(i % buffers);
    tick(i + 1);
  }
  settle(loop.before_timing);
  const double cpu_from = process_cpu_seconds();
  std::vector<std::unique_ptr<Timer>> timers;
  timers.reserve(static_cast<std::size_t>(loop.iters));
  for (int i = 0; i < loop.iters; ++i) {
    timers.push_back(backend.make_timer());
    timers.back()->start();
    iteration((loop.warmup + i) % buffers);
    timers.back()->stop();
    tick(loop.warmup + i + 1);
  }
  settle(loop.after_timing);
  Measurement m;
  m.cpu_seconds = process_cpu_seconds() - cpu_from;
  m.seconds.reserve(timers.size());
  for (auto& t : timers) m.seconds.push_back(t->seconds());
  m.stats = summarize(m.seconds);
  return m;
}

double best_iteration_seconds(Backend& backend, const MeasureLoop& loop,
                              const std::function<void()>& iteration) {
  const Measurement m = measure(backend, loop, [&](int) { iteration(); });
  return m.seconds.empty() ? std::numeric_limits<double>::quiet_NaN()
                           : *std::min_element(m.seconds.begin(), m.seconds.end());
}

int rotation_sets(std::uint64_t set_bytes, std::uint64_t cache_bytes, std::uint64_t free_bytes) {
  if (set_bytes == 0) return 1;
  const std::uint64_t sets = std::clamp<std::uint64_t>(cache_bytes / set_bytes + 2, 2, 64);
  const std::uint64_t fit = free_bytes / 5 * 4 / set_bytes;
  return static_cast<int>(std::max<std::uint64_t>(1, std::min(sets, fit)));
}

std::vector<double> gather_samples(const MpiContext& mpi, std::span<const double> mine) {
  return gather_to_root(mpi, mine);
}

}  // namespace fb::workloads
