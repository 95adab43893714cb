// The performance checks of `health`: the GEMM and the all-reduce against their floors (health_checks.hpp).
#include "workloads/health_checks.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/call_log.hpp"
#include "core/communicator.hpp"
#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "kernels/gemm_engine.hpp"
#include "workloads/collective_bandwidth.hpp"
#include "workloads/collective_check.hpp"
#include "workloads/gemm_benchmark.hpp"
#include "workloads/gemm_flops.hpp"
#include "workloads/measurement_loop.hpp"

namespace fb::workloads::health {

using nlohmann::json;
using reports::Better;
using reports::Metric;

namespace {

// The test hook's slow rank: every GEMM runs kSlowGemmRepeat times, so the rank is slow for real.
class RepeatingEngine final : public kernels::GemmEngine {
 public:
  RepeatingEngine(std::unique_ptr<kernels::GemmEngine> inner, int repeat)
      : inner_(std::move(inner)), repeat_(repeat) {}
  std::string name() const override { return inner_->name(); }
  DType dtype() const override { return inner_->dtype(); }
  bool emulated() const override { return inner_->emulated(); }
  kernels::GemmPlanInfo prepare(const kernels::GemmProblem& p, const void* a, const void* b, void* c,
                                const kernels::GemmScales& s) override {
    return inner_->prepare(p, a, b, c, s);
  }
  void run(const kernels::GemmProblem& p, const void* a, const void* b, void* c,
           const kernels::GemmScales& s) override {
    for (int i = 0; i < repeat_; ++i) inner_->run(p, a, b, c, s);
  }

 private:
  std::unique_ptr<kernels::GemmEngine> inner_;
  int repeat_;
};

// This rank's GEMM through the gemm benchmark's measurement (buffer rotation, the shared loop, the fp64
// check on 64 samples).
GemmMeasurement measure_health_gemm(Context& c, const GemmCase& gc) {
  const auto& d = c.backend.defaults();
  kernels::GemmEngineOptions eo;
  eo.autotune = 4;
  eo.local_ranks = c.mpi.local_size();
  eo.workspace_bytes = d.gemm.workspace_bytes;
  std::unique_ptr<kernels::GemmEngine> engine = kernels::make_gemm_engine(c.backend, gc.problem.dtype, eo);
  if (c.options.slow_gemm_rank == c.mpi.rank())
    engine = std::make_unique<RepeatingEngine>(std::move(engine), kSlowGemmRepeat);
  GemmRunOptions o;
  o.warmup = d.health.gemm_warmup;
  o.iters = d.health.gemm_iters;
  o.autotune = eo.autotune;
  o.check_samples = 64;
  o.seed = c.options.seed;
  o.telemetry = c.telemetry;
  GemmMeasurement m = measure_gemm_case(c.mpi, c.backend, *engine, gc, o, 0);
  if (engine->emulated()) m.plan.algo += " (emulated)";
  return m;
}

}  // namespace

CheckOutcome check_gemm(Context& c) {
  GemmCase gc;
  gc.problem.dtype = c.backend.defaults().gemm.dtype;
  gc.problem.m = gc.problem.n = gc.problem.k =
      c.options.gemm_size ? c.options.gemm_size : c.backend.defaults().health.gemm_dim;
  gc.name = gemm_case_name(gc.problem);
  // Every rank reaches the gather below, whatever happened to its own measurement.
  std::optional<GemmMeasurement> m;
  std::string error;
  try {
    m = measure_health_gemm(c, gc);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double flops = gemm_flops(gc.problem.m, gc.problem.n, gc.problem.k, 1);
  const SampleStats stats = m ? summarize(m->seconds) : SampleStats{};
  const double median_s = stats.median;
  const double tflops = m && median_s > 0 ? flops / median_s / 1e12 : 0;
  const double cpu_tflops =
      m && m->cpu_seconds > 0 ? flops * static_cast<double>(m->seconds.size()) / m->cpu_seconds / 1e12 : 0;
  // The host class is judged per CPU-second: on a shared, loaded machine wall time also counts the time a
  // rank waited for a core (up to 8x on the 2-core CI machine), which says nothing of the rank's health;
  // the CPU time of the same GEMM does, and a slow core or a rank doing more work shows in it.
  const double judged = c.peak.measured ? cpu_tflops : tflops;
  // A numbered call (the hang watchdog's unit): a rank whose GEMM never returns (a wedged device) never
  // enters it while its peers wait in it, and is named after --hang-timeout.
  const auto rank_tflops = [&] {
    const CallScope call("health_gemm", sizeof judged);
    return allgather(c.mpi, judged);
  }();
  if (!m) return outcome("gemm", Verdict::fail, error);
  c.gemm_from_s = m->timed_from_s;
  c.gemm_to_s = m->timed_to_s;

  const std::string name(to_string(gc.problem.dtype));
  const std::string shape =
      fmt::format("{} {}x{}x{}{}", name, gc.problem.m, gc.problem.n, gc.problem.k,
                  m->plan.algo.find("(emulated)") != std::string::npos ? " (emulated)" : "");
  CheckOutcome o;
  o.metrics = {{"tflops", metric(tflops, "TFLOP/s", Better::higher)},
               {"cpu_tflops", metric(cpu_tflops, "TFLOP/s", Better::higher)},
               {"time_us", metric(median_s * 1e6, "us", Better::lower)},
               {"buffer_sets", metric(m->sets, "count", Better::none)}};
  // Against the dense peak, whether or not the speed is judged (a single host rank, no expectation).
  if (const auto peak = c.peak.for_dtype(name); peak && *peak > 0)
    o.metrics.emplace_back("peak_fraction", metric(tflops / *peak, "fraction", Better::higher));
  // A wrong product is a broken device, whatever its speed.
  o.check = "gemm";
  if (!m->check.ok()) {
    o.verdict = Verdict::fail;
    o.reason = fmt::format("{}: wrong result, {} of {} samples off: {}", shape, m->check.mismatches,
                           m->check.checked, m->check.detail);
    return o;
  }
  // On the host the expectation is the job's median: a single rank is its own, so its speed is not judged
  // (said, as the one-rank all-reduce floor is, rather than passed at "1.00 x the expected").
  if (c.peak.measured && rank_tflops.size() == 1) {
    o.verdict = Verdict::pass;
    o.reason =
        fmt::format("{}: correct, {:.3g} TFLOP/s; one rank is its own median, so its speed is not judged{}",
                    shape, tflops, c.options.gemm_floor ? " (--gemm-floor needs 2 or more ranks)" : "");
    return o;
  }
  const auto expected = gemm_expectation(c.peak, name, rank_tflops);
  if (!expected) {
    o.verdict = Verdict::warn;
    o.reason = fmt::format("{}: {:.3g} TFLOP/s, not judged: no {} expectation ({})", shape, tflops, name,
                           c.peak.source);
    return o;
  }
  const double floor = gemm_floor(c.options, c.peak);
  const double required = floor * expected->tflops;
  const std::string what = c.peak.measured ? "per CPU-second" : "median";
  const std::string floor_from = c.options.gemm_floor ? "--gemm-floor"
                                 : c.peak.health_gemm_floor
                                     ? fmt::format("the {} class floor", c.peak.class_name)
                                     : "the default floor";
  const std::string seen =
      fmt::format("{}: {:.3g} TFLOP/s {} = {:.2f} x the expected {:.3g} ({})", shape, judged, what,
                  judged / expected->tflops, expected->tflops, expected->basis);
  o.verdict = judged >= required ? Verdict::pass : Verdict::fail;
  o.reason = judged >= required ? fmt::format("{}; floor {:.3g}", seen, required)
                                : fmt::format("{}, below the floor {:.3g} = {} {} x expected", seen, required,
                                              floor_from, floor);
  o.metrics.emplace_back("expected_tflops", metric(expected->tflops, "TFLOP/s", Better::none));
  o.metrics.emplace_back("expected_fraction", metric(judged / expected->tflops, "fraction", Better::higher));
  o.metrics.emplace_back("required_tflops", metric(required, "TFLOP/s", Better::none));
  return o;
}

CheckOutcome check_allreduce(Context& c) {
  const DType type = DType::fp32;
  const std::uint64_t bytes =
      c.options.allreduce_bytes ? c.options.allreduce_bytes : c.backend.defaults().health.allreduce_bytes;
  const std::size_t count = std::max<std::size_t>(1, bytes / dtype_bytes(type));
  const std::size_t size_bytes = count * dtype_bytes(type);
  const int n = c.mpi.size();
  const CheckPattern pattern(type, ReduceOp::sum, n);
  std::vector<unsigned char> input(size_bytes), output(size_bytes);
  for (std::size_t i = 0; i < count; ++i)
    store_element(input.data(), type, i, pattern.reduce_input(c.mpi.rank(), i));
  // Every rank must reach the collective or none: agree that the buffers exist first.
  std::string why;
  DeviceBuffer send, recv;
  try {
    send = c.backend.allocate(size_bytes);
    recv = c.backend.allocate(size_bytes);
    c.backend.copy_to_device(send, input.data(), size_bytes);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!c.mpi.all_true(why.empty()))
    return outcome("allreduce", Verdict::fail,
                   why.empty() ? "not run: another rank could not allocate its buffers" : "not run: " + why);
  auto comm = make_communicator(c.mpi, c.backend);
  MeasureLoop loop;
  loop.warmup = 2;
  loop.iters = 5;
  loop.before_timing = loop.after_timing = [&] { comm->synchronize(); };
  const Measurement timed = measure(
      c.backend, loop, [&](int) { comm->allreduce(send.data(), recv.data(), count, type, ReduceOp::sum); });
  c.backend.copy_to_host(output.data(), recv, size_bytes);
  std::size_t wrong = 0;
  std::string first;
  for (std::size_t i = 0; i < count; ++i) {
    const double got = load_element(output.data(), type, i), expected = pattern.reduce_expected(i);
    if (pattern.matches(got, expected)) continue;
    if (wrong++ == 0) first = fmt::format("element {}: got {} expected {}", i, got, expected);
  }
  const double t = timed.stats.median;
  const double busbw = algbw_gbps(size_bytes, t) * bus_factor(CollectiveOp::allreduce, n);
  const std::string what =
      fmt::format("{} fp32 sum over {} rank(s) ({})", format_bytes(size_bytes), n, comm->engine());
  CheckOutcome o =
      wrong ? outcome("allreduce", Verdict::fail,
                      fmt::format("{}: {} of {} elements wrong, first {}", what, wrong, count, first))
            : outcome("allreduce", Verdict::pass, fmt::format("{}: exact, busbw {:.2f} GB/s", what, busbw));
  o.metrics.emplace_back("busbw_gbps", metric(busbw, "GB/s", Better::higher));
  o.metrics.emplace_back("time_us", metric(t * 1e6, "us", Better::lower));
  o.metrics.emplace_back("wrong_elements", metric(static_cast<double>(wrong), "count", Better::lower));
  return o;
}

}  // namespace fb::workloads::health
