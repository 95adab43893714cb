#include "workloads/attention_benchmark.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "workloads/attention_check.hpp"
#include "workloads/attention_flops.hpp"
#include "workloads/attention_fp8_scaling.hpp"
#include "workloads/gemm_flops.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/telemetry_report.hpp"

namespace fb::workloads {

std::string attention_case_name(const kernels::AttentionShape& s, DType dtype) {
  return fmt::format("{}/b{}/s{}/h{}-kv{}/d{}{}{}", to_string(dtype), s.batch, s.seq, s.heads, s.kv_heads,
                     s.head_dim, s.value_dim != s.head_dim ? fmt::format("/v{}", s.value_dim) : "",
                     s.causal ? "" : "/full");
}

namespace {

// Elements of each tensor (packed layout).
struct Sizes {
  double q, kv, v, o, stats;
};
Sizes sizes(const kernels::AttentionShape& s) {
  const double tokens = static_cast<double>(s.batch) * static_cast<double>(s.seq);
  return {tokens * static_cast<double>(s.heads * s.head_dim),
          tokens * static_cast<double>(s.kv_heads * s.head_dim),
          tokens * static_cast<double>(s.kv_heads * s.value_dim),
          tokens * static_cast<double>(s.heads * s.value_dim), tokens * static_cast<double>(s.heads)};
}

double set_bytes_exact(const kernels::AttentionShape& s, DType dtype) {
  const Sizes n = sizes(s);
  // q, k, v, o, d_o and their gradients dq, dk, dv; fp32 statistics.
  return (2 * n.q + 2 * n.kv + 2 * n.v + 2 * n.o) * static_cast<double>(dtype_bytes(dtype)) + 4 * n.stats;
}

struct AttentionBuffers {
  DeviceBuffer q, k, v, o, d_o, dq, dk, dv, stats;
  DeviceBuffer scaling;  // fp8: the set's own scaling block (kernels/attention_engine.hpp)
  float* fp8() { return scaling.bytes() ? scaling.as<float>() : nullptr; }
};

bool is_fp8(DType type) {
  return type == DType::fp8_e4m3;
}
// fill_random's values lie in ±[1/16, 1]: the fp8 inputs are stored unscaled.
constexpr double kInputAmax = 1.0;

std::vector<float> read_scaling(Backend& backend, const DeviceBuffer& block) {
  std::vector<float> out(kernels::kFp8ScalingFloats);
  backend.copy_to_host(out.data(), block, out.size() * sizeof(float));
  return out;
}

std::vector<AttentionBuffers> make_sets(Backend& backend, const AttentionCase& c, int count,
                                        std::uint64_t base) {
  const Sizes n = sizes(c.shape);
  const std::size_t e = dtype_bytes(c.dtype);
  auto bytes = [&](double elements) { return static_cast<std::size_t>(elements) * e; };
  std::vector<AttentionBuffers> sets(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < sets.size(); ++i) {
    auto& s = sets[i];
    s.q = backend.allocate(bytes(n.q)), s.dq = backend.allocate(bytes(n.q));
    s.k = backend.allocate(bytes(n.kv)), s.dk = backend.allocate(bytes(n.kv));
    s.v = backend.allocate(bytes(n.v)), s.dv = backend.allocate(bytes(n.v));
    s.o = backend.allocate(bytes(n.o)), s.d_o = backend.allocate(bytes(n.o));
    s.stats = backend.allocate(static_cast<std::size_t>(n.stats) * 4);
    std::uint64_t stream = 8 * i;
    // Inputs random; outputs too, so an output the engine never wrote fails the check.
    for (auto* b : {&s.q, &s.k, &s.v, &s.d_o, &s.o, &s.dq, &s.dk, &s.dv})
      backend.fill_random(*b, c.dtype, derive_seed(base, stream++));
    backend.fill_random(s.stats, DType::fp32, derive_seed(base, stream));
    if (is_fp8(c.dtype)) {
      const auto block = fp8_initial_scaling(c.shape, kInputAmax);
      s.scaling = backend.allocate(block.size() * sizeof(float));
      backend.copy_to_device(s.scaling, block.data(), block.size() * sizeof(float));
    }
  }
  return sets;
}

// The values a buffer holds: stored · descale (descale 1 unless fp8).
std::vector<float> to_host(Backend& backend, const DeviceBuffer& buffer, DType type, double elements,
                           float descale = 1) {
  const auto n = static_cast<std::size_t>(elements);
  std::vector<unsigned char> raw(n * dtype_bytes(type));
  backend.copy_to_host(raw.data(), buffer, raw.size());
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(load_element(raw.data(), type, i)) * descale;
  return out;
}

AttentionCheck check_set(Backend& backend, const AttentionCase& c, const AttentionBuffers& set,
                         std::size_t rows, std::uint64_t seed) {
  const Sizes n = sizes(c.shape);
  using T = kernels::Fp8Tensor;
  const auto block = is_fp8(c.dtype) ? read_scaling(backend, set.scaling)
                                     : std::vector<float>(kernels::kFp8ScalingFloats, 1.0f);
  auto descale = [&](T t) { return block[kernels::fp8_slot(t, kernels::Fp8Field::descale)]; };
  AttentionTensors t;
  t.q = to_host(backend, set.q, c.dtype, n.q, descale(T::q));
  t.k = to_host(backend, set.k, c.dtype, n.kv, descale(T::k));
  t.v = to_host(backend, set.v, c.dtype, n.v, descale(T::v));
  t.o = to_host(backend, set.o, c.dtype, n.o, descale(T::o));
  t.d_o = to_host(backend, set.d_o, c.dtype, n.o, descale(T::d_o));
  t.dq = to_host(backend, set.dq, c.dtype, n.q, descale(T::dq));
  t.dk = to_host(backend, set.dk, c.dtype, n.kv, descale(T::dk));
  t.dv = to_host(backend, set.dv, c.dtype, n.v, descale(T::dv));
  t.stats = to_host(backend, set.stats, DType::fp32, n.stats);
  const auto picked = attention_check_rows(c.shape, rows, seed);
  return check_attention_rows(c.shape, t, picked, attention_tolerance(c.dtype));
}

struct CaseMeasurement {
  std::vector<double> forward, backward;  // seconds per timed iteration
  int sets = 0;
  AttentionCheck check;
  bool checked = false;
  std::vector<float> scaling;  // fp8: set 0's scaling block after the last call
};

// fp8: one untimed forward and backward per set with the bound scales, then each set's scales from the
// amax that pass measured (workloads/attention_fp8_scaling.hpp).
void calibrate_fp8(Backend& backend, std::vector<AttentionBuffers>& sets,
                   const std::function<void(int)>& forward, const std::function<void(int)>& backward) {
  for (std::size_t i = 0; i < sets.size(); ++i) {
    forward(static_cast<int>(i));
    backward(static_cast<int>(i));
  }
  backend.synchronize();
  for (auto& set : sets) {
    auto block = read_scaling(backend, set.scaling);
    fp8_calibrate(block);
    backend.copy_to_device(set.scaling, block.data(), block.size() * sizeof(float));
  }
}

CaseMeasurement measure_case(const MpiContext& mpi, Backend& backend, kernels::FusedAttention& engine,
                             const AttentionCase& c, const AttentionRunOptions& o, std::size_t index,
                             const std::function<void(int, int)>& on_iteration) {
  CaseMeasurement m;
  m.sets = rotation_sets(attention_set_bytes(c.shape, c.dtype), backend.defaults().gemm.cache_bytes,
                         backend.free_memory_bytes());
  const std::uint64_t base = derive_seed(derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank())), index);
  auto sets = make_sets(backend, c, m.sets, base);
  const auto& s = c.shape;
  auto forward = [&](int i) {
    auto& b = sets[static_cast<std::size_t>(i)];
    engine.forward(s, c.dtype, b.q.data(), b.k.data(), b.v.data(), b.o.data(), b.stats.as<float>(), b.fp8());
  };
  auto backward = [&](int i) {
    auto& b = sets[static_cast<std::size_t>(i)];
    engine.backward(s, c.dtype, b.q.data(), b.k.data(), b.v.data(), b.o.data(), b.d_o.data(),
                    b.stats.as<float>(), b.dq.data(), b.dk.data(), b.dv.data(), b.fp8());
  };
  if (is_fp8(c.dtype)) calibrate_fp8(backend, sets, forward, backward);
  MeasureLoop loop;
  loop.warmup = o.warmup;
  loop.iters = o.iters;
  loop.buffers = m.sets;
  // Progress over both loops: forward's iterations, then backward's.
  if (on_iteration) loop.on_iteration = [&](int done, int total) { on_iteration(done, 2 * total); };
  m.forward = measure(backend, loop, forward).seconds;
  // Every set the backward loop will use (iteration i uses set i mod sets, as the forward loop did) holds a
  // forward's output and statistics, which its backward reads; sets past warmup + iters are never used, and
  // their forwards were minutes of the host's reference engine at long sequences.
  const int used = static_cast<int>(std::min<long long>(m.sets, static_cast<long long>(o.warmup) + o.iters));
  for (int i = 0; i < used; ++i) forward(i);
  if (on_iteration) loop.on_iteration = [&](int done, int total) { on_iteration(total + done, 2 * total); };
  m.backward = measure(backend, loop, backward).seconds;
  if (o.check || o.after_run_hook) {
    forward(0);
    backward(0);
    backend.synchronize();
    if (o.after_run_hook) o.after_run_hook(backend, sets[0].o, s, c.dtype);
  }
  if (o.check) {
    m.check = check_set(backend, c, sets[0], o.check_rows, derive_seed(base, 0xA77E));
    m.checked = true;
  }
  if (is_fp8(c.dtype)) m.scaling = read_scaling(backend, sets[0].scaling);
  return m;
}

// Rank 0's set 0: each fp8 tensor's scale, and the amax of each one the kernels produced.
nlohmann::json fp8_scaling_json(const std::vector<float>& block) {
  static constexpr const char* kNames[] = {"q", "k", "v", "o", "d_o", "s", "dp", "dq", "dk", "dv"};
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t t = 0; t < std::size(kNames); ++t) {
    const auto tensor = static_cast<kernels::Fp8Tensor>(t);
    nlohmann::json e = {{"scale", block[kernels::fp8_slot(tensor, kernels::Fp8Field::scale)]}};
    if (t >= static_cast<std::size_t>(kernels::Fp8Tensor::s) || tensor == kernels::Fp8Tensor::o)
      e["amax"] = block[kernels::fp8_slot(tensor, kernels::Fp8Field::amax)];
    out[kNames[t]] = std::move(e);
  }
  return out;
}

reports::Metric tflops_metric(double flops, std::span<const double> seconds) {
  std::vector<double> v;
  for (const double t : seconds) v.push_back(tflops(flops, t));
  return reports::metric_from_samples(v, "TFLOP/s", reports::Better::higher);
}

reports::Metric us_metric(std::span<const double> seconds) {
  std::vector<double> v;
  for (const double t : seconds) v.push_back(t * 1e6);
  return reports::metric_from_samples(v, "us", reports::Better::lower);
}

}  // namespace

std::uint64_t attention_set_bytes(const kernels::AttentionShape& s, DType dtype) {
  const double b = set_bytes_exact(s, dtype);
  return b >= 1.8e19 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(b);
}

void check_benchmark_attention_choice(kernels::AttentionEngineChoice choice) {
  if (choice == kernels::AttentionEngineChoice::gemm)
    throw usage_error(
        "--engine gemm: the blocked-GEMM attention runs inside the training step; time it with 'train "
        "--attention-engine gemm' (its breakdown's attention row)");
}

namespace {

// The engine factory speaks train's flag; this command's is --engine.
std::string in_benchmark_engine_words(std::string error) {
  constexpr std::string_view train_flag = "--attention-engine ";
  if (error.starts_with(train_flag)) error = "--engine " + error.substr(train_flag.size());
  return error;
}

kernels::AttentionEngineChoice benchmark_engine_choice(BackendKind kind,
                                                       kernels::AttentionEngineChoice choice) {
  using kernels::AttentionEngineChoice;
  if (choice != AttentionEngineChoice::automatic) return choice;
  return kind == BackendKind::cuda ? AttentionEngineChoice::cudnn : AttentionEngineChoice::reference;
}

}  // namespace

std::string benchmark_attention_unsupported(BackendKind kind, kernels::AttentionEngineChoice choice) {
  return in_benchmark_engine_words(
      kernels::attention_engine_unsupported(kind, benchmark_engine_choice(kind, choice)));
}

std::unique_ptr<kernels::FusedAttention> make_benchmark_attention(const MpiContext& mpi, Backend& backend,
                                                                  kernels::AttentionEngineChoice choice,
                                                                  std::span<const AttentionCase> cases) {
  check_benchmark_attention_choice(choice);
  choice = benchmark_engine_choice(backend.kind(), choice);
  std::unique_ptr<kernels::FusedAttention> engine;
  std::string error;
  try {
    engine = kernels::make_attention_engine(backend, choice).fused;
    for (const auto& c : cases) {
      std::string reason;
      if (!engine->supports(c.shape, c.dtype, reason)) {
        error = fmt::format("attention {}: the {} engine cannot run it: {}", c.name, engine->name(), reason);
        break;
      }
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::usage) throw;
    error = in_benchmark_engine_words(e.what());
  }
  if (!mpi.all_true(error.empty()))
    throw unsupported_error(error.empty() ? "attention: another rank cannot run this engine or shape"
                                          : error);
  return engine;
}

void check_attention_memory(const MpiContext& mpi, const Backend& backend,
                            std::span<const AttentionCase> cases) {
  const double free_bytes = static_cast<double>(backend.free_memory_bytes());
  std::string problem;
  for (const auto& c : cases) {
    if (set_bytes_exact(c.shape, c.dtype) > free_bytes) {
      problem =
          fmt::format("attention {}: Q, K, V, O and their gradients need {} but the {} backend has {} free",
                      c.name, format_bytes(attention_set_bytes(c.shape, c.dtype)), to_string(backend.kind()),
                      format_bytes(static_cast<std::uint64_t>(free_bytes)));
      break;
    }
  }
  if (!mpi.all_true(problem.empty()))
    throw usage_error(problem.empty() ? "attention buffers do not fit in another rank's free memory"
                                      : problem);
}

AttentionRunOutput run_attention_benchmark(const MpiContext& mpi, Backend& backend, const DevicePeak& peak,
                                           std::span<const AttentionCase> cases,
                                           const AttentionRunOptions& o) {
  auto engine = make_benchmark_attention(mpi, backend, o.engine, cases);
  AttentionRunOutput out;
  out.engine = std::string(engine->name());
  if (o.on_started) o.on_started(out.engine);
  ProgressMeter progress("attention", static_cast<double>(cases.size()));
  std::size_t failed = 0;
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const AttentionCase& c = cases[ci];
    log::debug("attention {}", c.name);
    progress.update(static_cast<double>(ci), fmt::format("{}/{} shapes, next {}", ci, cases.size(), c.name));
    const double window_from = o.telemetry ? o.telemetry->mark() : 0;
    // Progress inside a shape too: the host's fp64 reference runs seconds an iteration at long sequences.
    const auto inside = [&](int done, int total) {
      if (progress.due())
        progress.update(static_cast<double>(ci) + static_cast<double>(done) / total,
                        fmt::format("{}/{} shapes, {}: {} {}/{}", ci, cases.size(), c.name,
                                    2 * done <= total ? "forward" : "backward", done, total));
    };
    const CaseMeasurement m = measure_case(mpi, backend, *engine, c, o, ci, inside);
    const nlohmann::json window = o.telemetry
                                      ? gather_telemetry(mpi, *o.telemetry, window_from, o.telemetry->mark())
                                      : nlohmann::json();
    const AttentionFlopCount flops = attention_flops(c.shape);
    // One fwd+bwd sample per timed iteration pair: what a training step's attention costs.
    std::vector<double> both(m.forward.size());
    for (std::size_t i = 0; i < both.size(); ++i) both[i] = m.forward[i] + m.backward[i];
    const auto all_fwd = gather_samples(mpi, m.forward), all_bwd = gather_samples(mpi, m.backward),
               all_both = gather_samples(mpi, both);
    const double my_median = summarize(both).median;
    const auto rank_tflops = gather_to_root(mpi, tflops(flops.total(), my_median));
    const auto rank_time_us = gather_to_root(mpi, my_median * 1e6);
    const auto rank_mismatch = gather_to_root(mpi, static_cast<double>(m.check.mismatches));
    const auto rank_detail = gather_to_root(mpi, m.check.detail);
    if (!mpi.is_root()) continue;

    reports::Result r;
    r.benchmark = "attention";
    r.name = c.name;
    const auto& s = c.shape;
    r.params = {{"dtype", std::string(to_string(c.dtype))},
                {"batch", s.batch},
                {"seq", s.seq},
                {"heads", s.heads},
                {"kv_heads", s.kv_heads},
                {"head_dim", s.head_dim},
                {"value_dim", s.value_dim},
                {"causal", s.causal},
                {"engine", out.engine},
                {"iters", o.iters},
                {"warmup", o.warmup},
                {"buffer_sets", m.sets},
                {"set_bytes", attention_set_bytes(s, c.dtype)},
                {"flops_forward", flops.forward},
                {"flops_backward", flops.backward},
                {"flops_counting", "megatron"},
                {"check", o.check}};
    r.params.update(c.params);
    r.set_metric("tflops", tflops_metric(flops.total(), all_both));
    r.set_metric("forward_tflops", tflops_metric(flops.forward, all_fwd));
    r.set_metric("backward_tflops", tflops_metric(flops.backward, all_bwd));
    r.set_metric("time_us", us_metric(all_both));
    r.set_metric("forward_time_us", us_metric(all_fwd));
    r.set_metric("backward_time_us", us_metric(all_bwd));
    if (const auto p = peak.for_dtype(std::string(to_string(c.dtype))); p && *p > 0) {
      r.params["peak_tflops"] = *p;
      r.set_metric("mfu", reports::scaled_metric(*r.metric("tflops"), mfu(1.0, *p), "fraction",
                                                 reports::Better::higher));
    }
    r.set_per_rank("tflops", rank_tflops);
    r.set_per_rank("time_us", rank_time_us);
    if (m.checked) {
      r.extra["check"] = {{"rows", m.check.rows},
                          {"heads", s.heads},
                          {"quantities",
                           "output, log-sum-exp and query gradient of each row; key and value gradients of "
                           "the same tokens as keys"},
                          {"tolerance", attention_tolerance(c.dtype)},
                          {"reference", "fp64 on the host"},
                          {"worst_error_ratio", m.check.worst}};
      for (std::size_t rank = 0; rank < rank_mismatch.size(); ++rank)
        if (rank_mismatch[rank] > 0) {
          r.fail(fmt::format("rank {}: {} sampled values differ from the fp64 reference; first: {}", rank,
                             rank_mismatch[rank], rank_detail[rank]));
          ++failed;
          break;
        }
    }
    if (!m.scaling.empty()) {
      r.params["fp8_scaling"] = "per-tensor, power-of-two, delayed: one calibration pass";
      r.extra["fp8_scaling"] = fp8_scaling_json(m.scaling);
    }
    attach_telemetry(r, window);
    if (o.on_result) o.on_result(r);
    out.results.push_back(std::move(r));
  }
  if (!mpi.is_root()) return out;
  out.summary = {{"engine", out.engine},
                 {"ranks", mpi.size()},
                 {"results", out.results.size()},
                 {"failed", failed},
                 {"peak_source", peak.source}};
  return out;
}

}  // namespace fb::workloads
