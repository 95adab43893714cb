// The report Result of a `train` run or --dry-run plan (workloads/train_step.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reports/train_extra.hpp"
#include "workloads/train/step_breakdown.hpp"
#include "workloads/train_step.hpp"

namespace fb::workloads {
namespace {

// The fp32 value as its shortest decimal, read as a double: --lr 1e-4 is applied as the float nearest 1e-4,
// and recorded as 0.0001 rather than that float's exact 9.999999747378752e-05.
double shortest_decimal(float v) {
  return std::stod(fmt::format("{}", v));
}

using reports::Better;

void set_metric(reports::Result& r, const std::string& name, double v, const char* unit, Better b) {
  r.set_metric(name, {v, unit, b, std::nullopt});
}

// The run's identity: name and parameters.
void describe_run(reports::Result& r, const TrainOptions& o, const TrainPlan& plan, const TrainRun* run) {
  const bool dry_run = run == nullptr;
  const auto& c = plan.parallel;
  r.name = fmt::format("{}{}/tp{}-dp{}-ep{}-pp{}{}/{}/seq{}-mb{}-ga{}", plan.model.name,
                       o.layers > 0 ? fmt::format("-{}layers", plan.model.layers) : std::string(), c.tp, c.dp,
                       c.ep, c.pp, plan.shape.sequence_parallel ? "-sp" : "", to_string(plan.shape.dtype),
                       plan.local.seq, plan.shape.micro_batch, plan.shape.grad_accum);
  r.params = {
      {"model", plan.model.name},
      {"model_file", plan.model.file},
      {"layers", plan.model.layers},
      {"layers_note",
       o.layers > 0
           ? "only --layers layers are instantiated; FLOPs, parameters and MFU are for the model that "
             "runs" +
                 (plan.model.moe
                      ? fmt::format("; {} of them MoE (first_dense_layers {}; a prefix keeps "
                                    "at least one MoE layer)",
                                    plan.model.moe_layer_count(), plan.model.moe->first_dense_layers)
                      : std::string())
           : "all layers"},
      {"tp", c.tp},
      {"dp", c.dp},
      {"ep", c.ep},
      {"pp", c.pp},
      {"sequence_parallel", plan.shape.sequence_parallel},
      // The attention's kind: multi-latent, or by its K/V heads multi-head, grouped-query or multi-query.
      {"attention", plan.model.mla                            ? "mla"
                    : plan.model.kv_heads == plan.model.heads ? "mha"
                    : plan.model.kv_heads == 1                ? "mqa"
                                                              : "gqa"},
      // What ran the attention core (a dry run: what was asked for).
      {"attention_engine", run ? run->attention_engine : std::string(to_string(o.attention_engine))},
      {"seq", plan.local.seq},
      {"micro_batch", plan.shape.micro_batch},
      {"grad_accum", plan.shape.grad_accum},
      {"dtype", std::string(to_string(plan.shape.dtype))},
      {"attention_flops", std::string(to_string(plan.shape.attention))},
      {"recompute", std::string(to_string(plan.shape.recompute))},
      {"distributed_optimizer", plan.shape.distributed_optimizer},
      {"overlap", o.overlap},
      {"bucket_layers", o.shape.bucket_layers},
      {"learning_rate", shortest_decimal(o.learning_rate)},
      {"routing_skew", o.routing_skew},
      {"steps", o.steps},
      {"warmup_steps", run ? run->warmup_steps : o.warmup_steps},  // as run (a resume has fewer left)
      {"dry_run", dry_run}};
}

// What the plan says before anything runs: FLOPs, parameters and the memory estimate.
void describe_plan(reports::Result& r, reports::TrainExtra& x, const TrainPlan& plan) {
  const auto metric = [&](const std::string& name, double v, const char* unit, Better b) {
    set_metric(r, name, v, unit, b);
  };
  metric("flops_per_token", plan.flops.total(), "FLOP", Better::none);
  metric("flops_per_step", plan.flops_per_step, "FLOP", Better::none);
  metric("params_total", plan.params.total, "count", Better::none);
  metric("params_active", plan.params.active, "count", Better::none);
  metric("memory_bytes_per_rank", static_cast<double>(plan.memory.total()), "B", Better::lower);
  const auto& f = plan.flops;
  x.flops_per_token = {f.attention_projections,
                       f.attention_core,
                       f.mlp_dense,
                       f.moe_routed,
                       f.moe_shared,
                       f.mtp_projection,
                       f.logits,
                       plan.hardware_flops_per_token};
  const auto& m = plan.memory;
  x.memory_estimate_bytes = {m.weights, m.gradients, m.optimizer, m.activations, m.workspace, m.total()};
}

// The plan's GEMM and collective listings, and the pipeline schedule.
void describe_listings(reports::TrainExtra& x, const TrainPlan& plan) {
  const auto& c = plan.parallel;
  for (const auto& g : plan.gemms) {
    const auto& p = g.gemm.problem;
    x.gemms.push_back({g.gemm.name, g.gemm.pass, p.m, p.n, p.k, p.batch, p.transa, p.transb,
                       g.calls_per_layer, g.layers, g.note});
  }
  for (const auto& cp : plan.collectives)
    x.collectives_plan.push_back({cp.name, cp.group, cp.op, cp.group_size, cp.bytes_per_call,
                                  cp.calls_per_step, cp.bytes_per_step(), cp.note});
  if (c.pp > 1) {
    const double m = static_cast<double>(plan.shape.grad_accum), p = static_cast<double>(c.pp);
    x.pipeline = reports::TrainPipeline{"1F1B",
                                        c.pp,
                                        plan.local.layers,
                                        plan.shape.grad_accum,
                                        (p - 1) / (m + p - 1),
                                        "each stage runs min(P - stage - 1, micro-batches) warm-up forwards, "
                                        "then one forward and one backward, then the remaining backwards; "
                                        "pipeline_bubble in the breakdown is the time blocked in "
                                        "point-to-point transfers"};
  }
}

// Step time and the throughput figures derived from it (MFU/HFU need a peak for the dtype).
double throughput_metrics(reports::Result& r, reports::TrainRunExtra& x, const TrainPlan& plan,
                          const TrainRun& run, const DevicePeak& peak, std::int64_t world) {
  const auto peak_tflops = peak.for_dtype(std::string(to_string(plan.shape.dtype)));
  const auto& st = run.step_seconds;
  const auto step_metric = reports::metric_from_samples(st, "s", Better::lower);
  r.set_metric("step_time_s", step_metric);
  std::vector<double> tps, tflops, mfu, hfu;
  for (double s : st) {
    tps.push_back(plan.tokens_per_step / s);
    tflops.push_back(plan.flops_per_step / s / static_cast<double>(world) / 1e12);
    if (peak_tflops && *peak_tflops > 0) {
      mfu.push_back(tflops.back() / *peak_tflops);
      hfu.push_back(plan.hardware_flops_per_token * plan.tokens_per_step / s / static_cast<double>(world) /
                    1e12 / *peak_tflops);
    }
  }
  // Each rate is a function of the step time, decreasing: its value is that function of the median step
  // time (so tokens_per_s = tokens per step / step_time_s, as docs/metrics.md defines it), which is also a
  // median of the per-step rates (with an even count it lies between the middle two); the spread is theirs.
  const double t = step_metric.value;
  const auto rate = [&](const char* name, const std::vector<double>& samples, const char* unit,
                        double at_median) {
    auto m = reports::metric_from_samples(samples, unit, Better::higher);
    m.value = at_median;
    if (m.stats) m.stats->median = at_median;
    r.set_metric(name, std::move(m));
  };
  const double w = static_cast<double>(world);
  rate("tokens_per_s", tps, "tokens/s", plan.tokens_per_step / t);
  std::vector<double> per_gpu;
  for (double v : tps) per_gpu.push_back(v / w);
  rate("tokens_per_s_per_gpu", per_gpu, "tokens/s", plan.tokens_per_step / t / w);
  rate("model_tflops_per_gpu", tflops, "TFLOP/s", plan.flops_per_step / t / w / 1e12);
  if (!mfu.empty()) {
    // The plain ratio (docs/metrics.md), as gemm reports it: above 1 it says the peak is wrong, which a
    // cap at 1 would hide as a perfect 100%.
    const double m = plan.flops_per_step / t / w / 1e12 / *peak_tflops;
    rate("mfu", mfu, "fraction", m);
    rate("hfu", hfu, "fraction",
         plan.hardware_flops_per_token * plan.tokens_per_step / t / w / 1e12 / *peak_tflops);
    if (m > 1)
      x.mfu_note = fmt::format("MFU {:.2f} is above 1: the peak {:.4g} TFLOP/s ({}) is below what ran", m,
                               *peak_tflops, peak.source);
  }
  x.peak = {peak_tflops ? *peak_tflops : 0.0, peak.source, peak.measured};
  if (!peak_tflops) x.mfu_note = "no peak known for this dtype: mfu/hfu omitted";
  return step_metric.value;
}

// What the steps measured besides time: loss, gradient norm, memory, breakdown, traffic, progress.
void run_measurements(reports::Result& r, reports::TrainRunExtra& x, const TrainPlan& plan,
                      const TrainRun& run, double step_time) {
  const auto metric = [&](const std::string& name, double v, const char* unit, Better b) {
    set_metric(r, name, v, unit, b);
  };
  r.set_per_rank("steps_completed", run.per_rank_steps);
  r.set_per_rank("last_step", run.per_rank_last_step);
  metric("memory_allocated_bytes_per_rank", static_cast<double>(run.allocated_bytes), "B", Better::lower);
  if (run.steps_run > 0) {  // a resumed run with nothing left to train has no loss of its own
    metric("loss", run.loss, "value", Better::none);
    metric("grad_norm", run.grad_norm, "value", Better::none);
  }
  metric("steps_completed", static_cast<double>(run.steps_run), "count", Better::none);
  if (plan.model.moe) metric("moe_load_imbalance", run.moe_imbalance, "ratio", Better::lower);
  double parts = 0;
  for (const auto& [k, v] : run.breakdown_seconds) parts += v;
  x.breakdown = {train::breakdown_categories(),  // stacking order for printers
                 run.breakdown_seconds,
                 fmt::format("seconds per step by category (median over measured steps); sum {:.6g} s vs "
                             "step time {:.6g} s",
                             parts, step_time)};
  x.collective_bytes_per_step = run.collective_bytes;
  x.collective_calls_per_step = run.collective_calls;
  x.moe_rows_sent = run.dispatch_sent_rows;
  x.moe_rows_received = run.dispatch_received_rows;
  x.gemm_engine = run.gemm_engine;
  x.gemm_emulated = run.gemm_emulated;
  x.first_step = run.first_step;
  x.last_step = run.last_step;
  x.step_times_s = run.step_seconds;
  if (!std::isfinite(run.loss))
    r.fail(fmt::format("loss is not finite ({}) at step {}", run.loss, run.last_step));
}

}  // namespace

reports::Result train_result(const TrainOptions& o, const TrainPlan& plan, const TrainRun* run,
                             const DevicePeak& peak, std::int64_t world) {
  reports::Result r;
  r.benchmark = "train";
  describe_run(r, o, plan, run);
  reports::TrainExtra extra;
  describe_plan(r, extra, plan);
  describe_listings(extra, plan);
  if (run) {
    auto& measured = extra.run.emplace();
    // No measured step (a resume at or past --steps, or only warm-up steps left): no figures rather than
    // zeros, and the result says why.
    const bool timed = !run->step_seconds.empty();
    const double step_time = timed ? throughput_metrics(r, measured, plan, *run, peak, world) : 0.0;
    run_measurements(r, measured, plan, *run, step_time);
    // A failure (a loss that is not finite, even in a warm-up step) stays a failure: skipped would pass.
    if (!timed && r.status != reports::Status::failed) {
      r.status = reports::Status::skipped;
      r.error = run->steps_run == 0
                    ? fmt::format("nothing to train: the run resumed at step {} and --steps is {}",
                                  run->first_step - 1, o.steps)
                    : fmt::format(
                          "no measured step: the {} step(s) after step {} were all warm-up "
                          "(--warmup-steps {})",
                          run->steps_run, run->first_step - 1, run->warmup_steps);
    }
  }
  reports::write_train_extra(r, extra);
  return r;
}

}  // namespace fb::workloads
