#include "workloads/gemm_benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"
#include "kernels/host/gemm_reference.hpp"
#include "workloads/gemm_flops.hpp"
#include "workloads/layer_gemm_shapes.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/shared_compute.hpp"
#include "workloads/telemetry_report.hpp"

namespace fb::workloads {
namespace {

constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

std::int64_t parse_dim(std::string_view item, const std::string& option, const std::string& whole) {
  const auto value = parse_size(item, option);
  if (value == 0) throw usage_error(fmt::format("invalid {} '{}': must be positive", option, whole));
  if (value > static_cast<std::uint64_t>(kMaxDim))
    throw usage_error(fmt::format("invalid {} '{}': at most {} per dimension", option, whole, kMaxDim));
  return static_cast<std::int64_t>(value);
}

// Bytes of `elements` of `type`, in double so absurd shapes cannot overflow before they are rejected.
double bytes_of(std::int64_t elements, DType type) {
  return static_cast<double>(elements) * static_cast<double>(dtype_bytes(type));
}

// GemmProblem::elements_x() in double: a batch stride (≤ 2^62 for dims < 2^31) times a large batch would
// overflow 64-bit integers.
double elements_exact(std::int64_t stride, std::int64_t batch, std::int64_t one_matrix) {
  return static_cast<double>(stride) * static_cast<double>(batch - 1) + static_cast<double>(one_matrix);
}

double set_bytes_exact(const kernels::GemmProblem& p) {
  const auto t = kernels::gemm_types(p.dtype);
  const double a = elements_exact(p.batch_stride_a(), p.batch, p.ld_a() * (p.transa ? p.m : p.k));
  const double b = elements_exact(p.batch_stride_b(), p.batch, p.ld_b() * (p.transb ? p.k : p.n));
  const double c = elements_exact(p.batch_stride_c(), p.batch, p.ld_c() * p.n);
  return a * static_cast<double>(dtype_bytes(t.a)) + b * static_cast<double>(dtype_bytes(t.b)) +
         c * static_cast<double>(dtype_bytes(t.c));
}

std::uint64_t workspace_bytes(const Backend& backend) {
  return backend.defaults().gemm.workspace_bytes;
}

std::string shape_text(const kernels::GemmProblem& p) {
  return fmt::format("{}x{}x{}{}", p.m, p.n, p.k, p.batch > 1 ? fmt::format(" batch {}", p.batch) : "");
}

struct OperandBytes {
  std::size_t a, b, c;
};

OperandBytes operand_bytes(const kernels::GemmProblem& p) {
  const auto types = kernels::gemm_types(p.dtype);
  return {static_cast<std::size_t>(bytes_of(p.elements_a(), types.a)),
          static_cast<std::size_t>(bytes_of(p.elements_b(), types.b)),
          static_cast<std::size_t>(bytes_of(p.elements_c(), types.c))};
}

struct GemmBuffers {
  DeviceBuffer a, b, c;
};

// Seeded random inputs, different per rank, case, set and operand; C too, so an unwritten output fails.
std::vector<GemmBuffers> make_sets(Backend& backend, const kernels::GemmProblem& p, int count,
                                   std::uint64_t base) {
  const auto types = kernels::gemm_types(p.dtype);
  const OperandBytes bytes = operand_bytes(p);
  std::vector<GemmBuffers> sets(static_cast<std::size_t>(count));
  for (std::size_t s = 0; s < sets.size(); ++s) {
    sets[s].a = backend.allocate(bytes.a);
    sets[s].b = backend.allocate(bytes.b);
    sets[s].c = backend.allocate(bytes.c);
    backend.fill_random(sets[s].a, types.a, derive_seed(base, 3 * s));
    backend.fill_random(sets[s].b, types.b, derive_seed(base, 3 * s + 1));
    backend.fill_random(sets[s].c, types.c, derive_seed(base, 3 * s + 2));
  }
  return sets;
}

}  // namespace

kernels::GemmCheck check_gemm_output(Backend& backend, const kernels::GemmProblem& p, const DeviceBuffer& a,
                                     const DeviceBuffer& b, const DeviceBuffer& c, std::size_t samples_wanted,
                                     std::uint64_t seed) {
  const auto types = kernels::gemm_types(p.dtype);
  const OperandBytes bytes = operand_bytes(p);
  std::vector<unsigned char> a_host(bytes.a), b_host(bytes.b);
  backend.copy_to_host(a_host.data(), a, bytes.a);
  backend.copy_to_host(b_host.data(), b, bytes.b);
  const auto samples = kernels::gemm_sample_positions(p, samples_wanted, seed);
  const std::size_t elem = dtype_bytes(types.c);
  std::vector<double> values;
  values.reserve(samples.size());
  for (const auto& s : samples) {
    unsigned char raw[8] = {};
    backend.copy_to_host(raw, c, elem, kernels::gemm_c_index(p, s) * elem);
    values.push_back(kernels::element_as_double(raw, types.c, 0));
  }
  return kernels::check_gemm_samples(p, a_host.data(), b_host.data(), samples, values);
}

namespace {

kernels::GemmCheck check_set(Backend& backend, const kernels::GemmProblem& p, const GemmBuffers& set,
                             std::size_t samples_wanted, std::uint64_t seed) {
  return check_gemm_output(backend, p, set.a, set.b, set.c, samples_wanted, seed);
}

nlohmann::json problem_params(const kernels::GemmProblem& p) {
  return {{"m", p.m},
          {"n", p.n},
          {"k", p.k},
          {"batch", p.batch},
          {"ta", p.transa ? "T" : "N"},
          {"tb", p.transb ? "T" : "N"},
          {"dtype", std::string(to_string(p.dtype))},
          {"a_dtype", std::string(to_string(kernels::gemm_types(p.dtype).a))},
          {"b_dtype", std::string(to_string(kernels::gemm_types(p.dtype).b))},
          {"c_dtype", std::string(to_string(kernels::gemm_types(p.dtype).c))}};
}

}  // namespace

std::vector<std::int64_t> parse_gemm_dims(const std::string& text, const std::string& option) {
  if (text.empty())
    throw usage_error(fmt::format("invalid {} '': expected a size, a list or start:stop:step", option));
  std::vector<std::int64_t> dims;
  // A size given twice (64,64, or a list overlapping a range) is one case, measured once: two results of one
  // name would make the report one that compare cannot match.
  const auto add = [&](std::int64_t v) {
    if (std::find(dims.begin(), dims.end(), v) == dims.end()) dims.push_back(v);
  };
  for (const auto item : split(text, ',')) {
    const auto range = split(item, ':');
    if (range.size() == 1) {
      add(parse_dim(item, option, text));
    } else if (range.size() == 3) {
      const std::int64_t start = parse_dim(range[0], option, text), stop = parse_dim(range[1], option, text),
                         step = parse_dim(range[2], option, text);
      if (stop < start)
        throw usage_error(fmt::format("invalid {} '{}': range stop below start", option, text));
      if ((stop - start) / step >= 4096)
        throw usage_error(fmt::format("invalid {} '{}': more than 4096 values in the range", option, text));
      for (std::int64_t v = start; v <= stop; v += step) add(v);
    } else {
      throw usage_error(fmt::format("invalid {} '{}': a range is start:stop:step", option, text));
    }
  }
  return dims;
}

bool default_transa(DType dtype) {
  return dtype == DType::fp8_e4m3 || dtype == DType::fp8_e5m2;
}

std::string gemm_case_name(const kernels::GemmProblem& p) {
  std::string name = fmt::format("{}/{}x{}x{}", to_string(p.dtype), p.m, p.n, p.k);
  if (p.batch > 1) name += fmt::format("/batch{}", p.batch);
  if (p.transa != default_transa(p.dtype) || p.transb)
    name += fmt::format("/{}{}", p.transa ? 'T' : 'N', p.transb ? 'T' : 'N');
  return name;
}

std::vector<GemmCase> gemm_cases_from_dims(DType dtype, std::span<const std::int64_t> ms,
                                           std::span<const std::int64_t> ns, std::span<const std::int64_t> ks,
                                           std::int64_t batch, bool transa, bool transb) {
  std::vector<GemmCase> cases;
  for (const auto m : ms)
    for (const auto n : ns)
      for (const auto k : ks) {
        GemmCase c;
        c.problem.m = m;
        c.problem.n = n;
        c.problem.k = k;
        c.problem.batch = batch;
        c.problem.transa = transa;
        c.problem.transb = transb;
        c.problem.dtype = dtype;
        kernels::validate_gemm_problem(c.problem);
        c.name = gemm_case_name(c.problem);
        cases.push_back(std::move(c));
      }
  return cases;
}

std::vector<GemmCase> gemm_cases_for_model(const ModelConfig& model, const ModelShapeRequest& r,
                                           DType dtype) {
  LayerShapeOptions o;
  o.tp = r.tp;
  o.seq = r.seq;
  o.micro_batch = r.micro_batch;
  std::vector<GemmCase> cases;
  for (auto& g : layer_gemm_shapes(model, o)) {
    GemmCase c;
    c.name = g.name;
    c.problem = g.problem;
    c.problem.dtype = dtype;
    if (default_transa(dtype)) {  // fp8: TN for every pass
      c.problem.transa = true;
      c.problem.transb = false;
    }
    c.params = {{"model", model.name},
                {"role", g.role},
                {"pass", g.pass},
                {"tp", r.tp},
                {"seq", r.seq ? r.seq : model.seq},
                {"micro_batch", r.micro_batch},
                {"layout", fmt::format("{}{}", g.problem.transa ? 'T' : 'N', g.problem.transb ? 'T' : 'N')}};
    cases.push_back(std::move(c));
  }
  return cases;
}

std::uint64_t gemm_set_bytes(const kernels::GemmProblem& p) {
  const double b = set_bytes_exact(p);
  return b >= 1.8e19 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(b);
}

// The check copies A and B to the host (check_set): on the host backend the buffers' own memory.
double check_copy_bytes(const kernels::GemmProblem& p) {
  const OperandBytes bytes = operand_bytes(p);
  return static_cast<double>(bytes.a) + static_cast<double>(bytes.b);
}

void check_gemm_memory(const MpiContext& mpi, const Backend& backend, std::span<const GemmCase> cases,
                       bool check) {
  const double free_bytes = static_cast<double>(backend.free_memory_bytes());
  const bool same_memory = backend.kind() == BackendKind::host;
  const double host_free = static_cast<double>(host_memory_available_per_rank(mpi.local_size()));
  std::string problem;
  for (const auto& c : cases) {
    const double copies = check ? check_copy_bytes(c.problem) : 0;
    const double need = set_bytes_exact(c.problem) + static_cast<double>(workspace_bytes(backend)) +
                        (same_memory ? copies : 0);
    if (!same_memory && copies > host_free) {
      problem = fmt::format(
          "GEMM {}: the check copies A and B to host memory, {}, but only {} is free (--no-check)", c.name,
          format_bytes(static_cast<std::uint64_t>(copies)),
          format_bytes(static_cast<std::uint64_t>(host_free)));
      break;
    }
    if (need > free_bytes) {
      const std::string shape = shape_text(c.problem);
      problem = fmt::format("GEMM {}{}: A, B and C need {}{} but the {} backend has {} free", c.name,
                            c.name.find(shape) == std::string::npos ? " (" + shape + ")" : "",
                            format_bytes(gemm_set_bytes(c.problem)),
                            same_memory && check
                                ? fmt::format(", and the check's copy of A and B {} more (--no-check)",
                                              format_bytes(static_cast<std::uint64_t>(copies)))
                                : std::string(),
                            to_string(backend.kind()), format_bytes(static_cast<std::uint64_t>(free_bytes)));
      break;
    }
  }
  // Every rank stops together; the message is rank 0's (ranks of one job see alike memory).
  if (!mpi.all_true(problem.empty())) {
    if (problem.empty()) problem = "GEMM buffers do not fit in another rank's free memory";
    throw usage_error(problem);
  }
}

GemmMeasurement measure_gemm_case(const MpiContext& mpi, Backend& backend, kernels::GemmEngine& engine,
                                  const GemmCase& gc, const GemmRunOptions& o, std::size_t case_index,
                                  const std::function<void(int, int)>& on_iteration) {
  const kernels::GemmProblem& p = gc.problem;
  // The rotation sets leave room for the workspace and, on the host backend, the check's copies.
  const std::uint64_t reserved =
      workspace_bytes(backend) +
      (o.check && backend.kind() == BackendKind::host ? static_cast<std::uint64_t>(check_copy_bytes(p)) : 0);
  const std::uint64_t free_bytes = backend.free_memory_bytes();
  GemmMeasurement m;
  m.sets = rotation_sets(gemm_set_bytes(p), backend.defaults().gemm.cache_bytes,
                         free_bytes > reserved ? free_bytes - reserved : 0);
  const std::uint64_t base =
      derive_seed(derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank())), case_index);
  std::vector<GemmBuffers> sets = make_sets(backend, p, m.sets, base);
  auto run_set = [&](int s) {
    const auto& set = sets[static_cast<std::size_t>(s)];
    engine.run(p, set.a.data(), set.b.data(), set.c.data());
  };

  m.plan = engine.prepare(p, sets[0].a.data(), sets[0].b.data(), sets[0].c.data());
  MeasureLoop loop;
  loop.warmup = o.warmup;
  loop.iters = o.iters;
  loop.buffers = m.sets;
  loop.on_iteration = on_iteration;
  loop.before_timing = [&] {
    backend.synchronize();
    if (o.telemetry) m.timed_from_s = o.telemetry->mark();
  };
  loop.after_timing = [&] {
    backend.synchronize();
    if (o.telemetry) m.timed_to_s = o.telemetry->mark();
  };
  Measurement timed = measure(backend, loop, run_set);
  m.seconds = std::move(timed.seconds);
  m.cpu_seconds = timed.cpu_seconds;

  if (o.check || o.after_run_hook) {
    // Recompute set 0 (autotuning may have left any candidate's output there) and check it.
    run_set(0);
    backend.synchronize();
    if (o.after_run_hook) o.after_run_hook(backend, sets[0].c, p);
  }
  if (o.check) {
    m.check = check_set(backend, p, sets[0], o.check_samples, derive_seed(base, 0xC4EC));
    m.checked = true;
  }
  return m;
}

namespace {

// Rank 0's result of one case from every rank's figures.
reports::Result gemm_result(const GemmCase& gc, const GemmMeasurement& m, const GemmRunOutput& out,
                            const GemmRunOptions& o, const Backend& backend, const DevicePeak& peak,
                            std::span<const double> all_seconds, std::span<const double> rank_tflops,
                            std::span<const double> rank_time_us) {
  const double flops = gemm_flops(gc.problem.m, gc.problem.n, gc.problem.k, gc.problem.batch);
  const auto peak_tflops = peak.for_dtype(std::string(to_string(gc.problem.dtype)));
  const bool autotunes = backend.defaults().gemm.autotunes;
  reports::Result r;
  r.benchmark = "gemm";
  r.name = gc.name;
  r.params = problem_params(gc.problem);
  r.params.update(gc.params);
  r.params["engine"] = out.engine;
  r.params["emulated"] = out.emulated;
  r.params["iters"] = o.iters;
  r.params["warmup"] = o.warmup;
  r.params["buffer_sets"] = m.sets;
  r.params["set_bytes"] = gemm_set_bytes(gc.problem);
  r.params["flops"] = flops;
  r.params["check"] = o.check;
  if (autotunes) {
    r.params["autotune"] = o.autotune;
    r.params["algo"] = m.plan.algo;
  }
  r.params["peak_source"] = peak.source;
  if (peak_tflops) r.params["peak_tflops"] = *peak_tflops;

  std::vector<double> tf, us;
  for (const double s : all_seconds) {
    tf.push_back(tflops(flops, s));
    us.push_back(s * 1e6);
  }
  r.set_metric("tflops", reports::metric_from_samples(tf, "TFLOP/s", reports::Better::higher));
  r.set_metric("time_us", reports::metric_from_samples(us, "us", reports::Better::lower));
  if (peak_tflops && *peak_tflops > 0)
    r.set_metric("mfu", reports::scaled_metric(*r.metric("tflops"), mfu(1.0, *peak_tflops), "fraction",
                                               reports::Better::higher));
  if (m.plan.algo_id >= 0)
    r.set_metric("algo", {static_cast<double>(m.plan.algo_id), "id", reports::Better::none, {}});
  r.set_per_rank("tflops", std::vector<double>(rank_tflops.begin(), rank_tflops.end()));
  r.set_per_rank("time_us", std::vector<double>(rank_time_us.begin(), rank_time_us.end()));
  if (m.checked) {
    r.extra["check"] = {{"samples", m.check.checked},
                        {"tolerance", kernels::gemm_tolerance(gc.problem.dtype)},
                        {"reference", "fp64 on the host"},
                        {"worst_error_ratio", m.check.worst}};
  }
  if (autotunes)
    r.extra["autotune"] = {
        {"candidates", m.plan.candidates}, {"timed", m.plan.timed}, {"best_time_us", m.plan.best_time_us}};
  return r;
}

// A wrong answer on any rank fails the result, naming the first such rank.
void fail_on_mismatch(reports::Result& r, std::span<const double> rank_mismatch,
                      std::span<const std::string> rank_detail, std::size_t samples) {
  for (std::size_t rank = 0; rank < rank_mismatch.size(); ++rank) {
    if (rank_mismatch[rank] > 0) {
      r.fail(fmt::format("rank {}: {} of {} sampled outputs differ from the fp64 reference; first: {}", rank,
                         rank_mismatch[rank], samples, rank_detail[rank]));
      return;
    }
  }
}

nlohmann::json gemm_summary(const GemmRunOutput& out, DType dtype, const DevicePeak& peak,
                            const GemmRunOptions& o, int ranks) {
  nlohmann::json s;
  s["engine"] = out.engine;
  s["emulated"] = out.emulated;
  s["dtype"] = std::string(to_string(dtype));
  s["peak_source"] = peak.source;
  if (const auto p = peak.for_dtype(std::string(to_string(dtype)))) s["peak_tflops"] = *p;
  s["outlier_threshold"] = o.outlier_threshold;
  s["ranks"] = ranks;
  s["results"] = out.results.size();
  s["failed"] = std::count_if(out.results.begin(), out.results.end(),
                              [](const reports::Result& r) { return r.status == reports::Status::failed; });
  const auto rows = [](const std::vector<SlowRank>& flagged) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& sr : flagged)
      list.push_back({{"rank", sr.rank},
                      {"host", sr.host},
                      {"result", sr.result},
                      {"tflops", sr.tflops},
                      {"median_tflops", sr.median_tflops},
                      {"slower_by", sr.slower_by}});
    return list;
  };
  s["slow_ranks"] = rows(out.slow_ranks);
  if (!out.cores_shared.empty())
    s["slow_ranks_not_judged"] = {{"cores_shared", out.cores_shared},
                                  {"below_median", rows(out.below_median)}};
  return s;
}

// The sweep's best shape and mean into the summary, and its answer as a result of its own, `DTYPE/mamf`,
// so it compares by name with the published MAMF figures in configs/references (maximum achievable
// matmul FLOPS: the best shape's median).
void add_sweep(GemmRunOutput& out, DType dtype) {
  const reports::Result* best = nullptr;
  double sum = 0;
  std::size_t counted = 0;
  for (const auto& r : out.results) {
    if (r.status != reports::Status::ok || !r.metric("tflops")) continue;  // a wrong result is no record
    const double v = r.metric("tflops")->value;
    sum += v;
    ++counted;
    if (!best || v > best->metric("tflops")->value) best = &r;
  }
  if (!best) return;
  const double mean = sum / static_cast<double>(counted);
  out.summary["sweep"] = {{"shapes", out.results.size()},
                          {"best",
                           {{"name", best->name},
                            {"tflops", best->metric("tflops")->value},
                            {"m", best->params["m"]},
                            {"n", best->params["n"]},
                            {"k", best->params["k"]}}},
                          {"mean_tflops", mean}};
  reports::Result m;
  m.benchmark = "gemm";
  m.name = fmt::format("{}/mamf", to_string(dtype));
  m.params = {{"dtype", std::string(to_string(dtype))},
              {"best_shape", best->name},
              {"m", best->params["m"]},
              {"n", best->params["n"]},
              {"k", best->params["k"]},
              {"shapes", counted}};
  m.set_metric("tflops", {best->metric("tflops")->value, "TFLOP/s", reports::Better::higher, std::nullopt});
  m.set_metric("mean_tflops", {mean, "TFLOP/s", reports::Better::higher, std::nullopt});
  if (const auto* f = best->metric("mfu"))
    m.set_metric("mfu", {f->value, "fraction", reports::Better::higher, std::nullopt});
  out.results.push_back(std::move(m));
  out.summary["results"] = out.results.size();  // as the report holds them: the shapes and their MAMF
}

}  // namespace

GemmRunOutput run_gemm_benchmark(const MpiContext& mpi, Backend& backend, const DevicePeak& peak, DType dtype,
                                 std::span<const GemmCase> cases, const GemmRunOptions& o, bool sweep) {
  kernels::GemmEngineOptions eo;
  eo.autotune = o.autotune;
  eo.local_ranks = mpi.local_size();
  eo.workspace_bytes = workspace_bytes(backend);
  auto engine = kernels::make_gemm_engine(backend, dtype, eo);

  GemmRunOutput out;
  out.engine = engine->name();
  out.emulated = engine->emulated();
  out.cores_shared = nodes_sharing_compute(mpi, backend);
  if (o.on_started) o.on_started(out.engine, out.emulated);
  ProgressMeter progress(sweep ? "gemm sweep" : "gemm", static_cast<double>(cases.size()));
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const GemmCase& gc = cases[ci];
    log::debug("gemm {}", gc.name);
    progress.update(static_cast<double>(ci), fmt::format("{}/{} shapes, next {}", ci, cases.size(), gc.name));
    // A call of many seconds (a large shape on the host) moves the progress only when it ends: said up front,
    // so a silent minute reads as work.
    if (const auto pk = peak.for_dtype(std::string(to_string(dtype))); pk && *pk > 0) {
      const double call_s =
          gemm_flops(gc.problem.m, gc.problem.n, gc.problem.k, gc.problem.batch) / (*pk * 1e12);
      if (call_s >= 2)
        log::info(
            "{}: one call takes at least {} at the peak of {:.3g} TFLOP/s; {} call{}, progress after each",
            gc.name, format_duration(call_s), *pk, o.warmup + o.iters, o.warmup + o.iters == 1 ? "" : "s");
    }
    const double window_from = o.telemetry ? o.telemetry->mark() : 0;
    // Progress inside a shape too: on the host one large shape runs for many seconds.
    const auto inside = [&](int done, int total) {
      if (progress.due())
        progress.update(
            static_cast<double>(ci) + static_cast<double>(done) / total,
            fmt::format("{}/{} shapes, {}: iteration {}/{}", ci, cases.size(), gc.name, done, total));
    };
    const GemmMeasurement m = measure_gemm_case(mpi, backend, *engine, gc, o, ci, inside);
    const nlohmann::json window = o.telemetry
                                      ? gather_telemetry(mpi, *o.telemetry, window_from, o.telemetry->mark())
                                      : nlohmann::json();
    const double flops = gemm_flops(gc.problem.m, gc.problem.n, gc.problem.k, gc.problem.batch);
    const double my_median = summarize(m.seconds).median;
    const auto all_seconds = gather_samples(mpi, m.seconds);
    const auto rank_tflops = gather_to_root(mpi, tflops(flops, my_median));
    const auto rank_time_us = gather_to_root(mpi, my_median * 1e6);
    const auto rank_mismatch = gather_to_root(mpi, static_cast<double>(m.check.mismatches));
    const auto rank_detail = gather_to_root(mpi, m.check.detail);
    if (!mpi.is_root()) continue;

    reports::Result r = gemm_result(gc, m, out, o, backend, peak, all_seconds, rank_tflops, rank_time_us);
    fail_on_mismatch(r, rank_mismatch, rank_detail, o.check_samples);
    if (mpi.size() > 1) {
      const double med = median_of(rank_tflops);
      for (const int slow : slow_ranks(rank_tflops, o.outlier_threshold)) {
        const double v = rank_tflops[static_cast<std::size_t>(slow)];
        (out.cores_shared.empty() ? out.slow_ranks : out.below_median)
            .push_back(
                {slow, mpi.hostnames()[static_cast<std::size_t>(slow)], gc.name, v, med, 1.0 - v / med});
      }
    }
    attach_telemetry(r, window);
    if (o.on_result) o.on_result(r);
    out.results.push_back(std::move(r));
  }
  if (!mpi.is_root()) return out;
  out.summary = gemm_summary(out, dtype, peak, o, mpi.size());
  if (sweep) add_sweep(out, dtype);
  return out;
}

}  // namespace fb::workloads
