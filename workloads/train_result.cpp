// The report Result of a `train` run or --dry-run plan (workloads/train_step.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "workloads/train/step_breakdown.hpp"
#include "workloads/train_step.hpp"

namespace fb::workloads {
namespace {

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
  r.params = {{"model", plan.model.name},
              {"model_file", plan.model.file},
              {"layers", plan.model.layers},
              {"layers_note",
               o.layers > 0 ? "only --layers layers are instantiated; FLOPs, parameters and MFU are for "
                              "the model that runs"
                            : "all layers"},
              {"tp", c.tp},
              {"dp", c.dp},
              {"ep", c.ep},
              {"pp", c.pp},
              {"sequence_parallel", plan.shape.sequence_parallel},
              {"attention", plan.model.mla ? "mla" : "mha"},
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
              {"bucket_layers", o.bucket_layers},
              {"learning_rate", o.learning_rate},
              {"routing_skew", o.routing_skew},
              {"steps", o.steps},
              {"warmup_steps", o.warmup_steps},
              {"dry_run", dry_run}};
}

// What the plan says before anything runs: FLOPs, parameters and the memory estimate.
void describe_plan(reports::Result& r, const TrainPlan& plan) {
  const auto metric = [&](const std::string& name, double v, const char* unit, Better b) {
    set_metric(r, name, v, unit, b);
  };
  metric("flops_per_token", plan.flops.total(), "FLOP", Better::none);
  metric("flops_per_step", plan.flops_per_step, "FLOP", Better::none);
  metric("params_total", plan.params.total, "count", Better::none);
  metric("params_active", plan.params.active, "count", Better::none);
  metric("memory_bytes_per_rank", static_cast<double>(plan.memory.total()), "B", Better::lower);
  const auto& f = plan.flops;
  r.extra["flops_per_token"] = {{"attention_projections", f.attention_projections},
                                {"attention_core", f.attention_core},
                                {"mlp_dense", f.mlp_dense},
                                {"moe_routed", f.moe_routed},
                                {"moe_shared", f.moe_shared},
                                {"mtp_projection", f.mtp_projection},
                                {"logits", f.logits},
                                {"hardware", plan.hardware_flops_per_token}};
  r.extra["memory_estimate_bytes"] = {
      {"weights", plan.memory.weights},     {"gradients", plan.memory.gradients},
      {"optimizer", plan.memory.optimizer}, {"activations", plan.memory.activations},
      {"workspace", plan.memory.workspace}, {"total", plan.memory.total()}};
}

// The plan's GEMM and collective listings, and the pipeline schedule.
void describe_listings(reports::Result& r, const TrainPlan& plan) {
  const auto& c = plan.parallel;
  auto gemms = nlohmann::json::array();
  for (const auto& g : plan.gemms)
    gemms.push_back({{"name", g.gemm.name},
                     {"pass", g.gemm.pass},
                     {"m", g.gemm.problem.m},
                     {"n", g.gemm.problem.n},
                     {"k", g.gemm.problem.k},
                     {"batch", g.gemm.problem.batch},
                     {"transa", g.gemm.problem.transa},
                     {"transb", g.gemm.problem.transb},
                     {"calls_per_layer", g.calls_per_layer},
                     {"layers", g.layers},
                     {"note", g.note}});
  r.extra["gemms"] = gemms;
  auto colls = nlohmann::json::array();
  for (const auto& cp : plan.collectives)
    colls.push_back({{"name", cp.name},
                     {"group", cp.group},
                     {"op", cp.op},
                     {"group_size", cp.group_size},
                     {"bytes_per_call", cp.bytes_per_call},
                     {"calls_per_step", cp.calls_per_step},
                     {"bytes_per_step", cp.bytes_per_step()}});
  r.extra["collectives_plan"] = colls;
  if (c.pp > 1) {
    const double m = static_cast<double>(plan.shape.grad_accum), p = static_cast<double>(c.pp);
    r.extra["pipeline"] = {{"schedule", "1F1B"},
                           {"stages", c.pp},
                           {"layers_per_stage", plan.local.layers},
                           {"micro_batches", plan.shape.grad_accum},
                           {"ideal_bubble_fraction", (p - 1) / (m + p - 1)},
                           {"note",
                            "each stage runs min(P - stage - 1, micro-batches) warm-up forwards, then "
                            "one forward and one backward, then the remaining backwards; "
                            "pipeline_bubble in the breakdown is the time blocked in point-to-point "
                            "transfers"}};
  }
}

// Step time and the throughput figures derived from it (MFU/HFU need a peak for the dtype).
double throughput_metrics(reports::Result& r, const TrainPlan& plan, const TrainRun& run,
                          const DevicePeak& peak, std::int64_t world) {
  const auto peak_tflops = peak.for_dtype(std::string(to_string(plan.shape.dtype)));
  const auto& st = run.step_seconds;
  const auto step_metric = reports::metric_from_samples(st, "s", Better::lower);
  r.set_metric("step_time_s", step_metric);
  std::vector<double> tps, tflops, mfu, hfu;
  for (double s : st) {
    tps.push_back(plan.tokens_per_step / s);
    tflops.push_back(plan.flops_per_step / s / static_cast<double>(world) / 1e12);
    if (peak_tflops && *peak_tflops > 0) {
      mfu.push_back(std::min(1.0, tflops.back() / *peak_tflops));
      hfu.push_back(std::min(1.0, plan.hardware_flops_per_token * plan.tokens_per_step / s /
                                      static_cast<double>(world) / 1e12 / *peak_tflops));
    }
  }
  r.set_metric("tokens_per_s", reports::metric_from_samples(tps, "tokens/s", Better::higher));
  std::vector<double> per_gpu;
  for (double v : tps) per_gpu.push_back(v / static_cast<double>(world));
  r.set_metric("tokens_per_s_per_gpu", reports::metric_from_samples(per_gpu, "tokens/s", Better::higher));
  r.set_metric("model_tflops_per_gpu", reports::metric_from_samples(tflops, "TFLOP/s", Better::higher));
  if (!mfu.empty()) {
    r.set_metric("mfu", reports::metric_from_samples(mfu, "fraction", Better::higher));
    r.set_metric("hfu", reports::metric_from_samples(hfu, "fraction", Better::higher));
  }
  r.extra["peak"] = {
      {"tflops", peak_tflops ? *peak_tflops : 0.0}, {"source", peak.source}, {"measured", peak.measured}};
  if (!peak_tflops) r.extra["mfu_note"] = "no peak known for this dtype: mfu/hfu omitted";
  return step_metric.value;
}

// What the steps measured besides time: loss, gradient norm, memory, breakdown, traffic, progress.
void run_measurements(reports::Result& r, const TrainPlan& plan, const TrainRun& run, double step_time) {
  const auto metric = [&](const std::string& name, double v, const char* unit, Better b) {
    set_metric(r, name, v, unit, b);
  };
  r.set_per_rank("steps_completed", run.per_rank_steps);
  r.set_per_rank("last_step", run.per_rank_last_step);
  metric("memory_allocated_bytes_per_rank", static_cast<double>(run.allocated_bytes), "B", Better::lower);
  metric("loss", run.loss, "value", Better::none);
  metric("grad_norm", run.grad_norm, "value", Better::none);
  metric("steps_completed", static_cast<double>(run.steps_run), "count", Better::none);
  if (plan.model.moe) metric("moe_load_imbalance", run.moe_imbalance, "ratio", Better::lower);
  r.extra["breakdown"] = run.breakdown_seconds;
  r.extra["breakdown_categories"] = train::breakdown_categories();  // stacking order for printers
  double parts = 0;
  for (const auto& [k, v] : run.breakdown_seconds) parts += v;
  r.extra["breakdown_note"] = fmt::format(
      "seconds per step by category (median over measured steps); sum {:.6g} s vs step time {:.6g} s", parts,
      step_time);
  r.extra["collective_bytes_per_step"] = run.collective_bytes;
  r.extra["moe_dispatch"] = {{"rows_sent", run.dispatch_sent_rows},
                             {"rows_received", run.dispatch_received_rows}};
  r.extra["gemm_engine"] = run.gemm_engine;
  r.extra["gemm_emulated"] = run.gemm_emulated;
  r.extra["first_step"] = run.first_step;
  r.extra["last_step"] = run.last_step;
  r.extra["step_times_s"] = run.step_seconds;
  if (!std::isfinite(run.loss))
    r.fail(fmt::format("loss is not finite ({}) at step {}", run.loss, run.last_step));
}

}  // namespace

reports::Result train_result(const TrainOptions& o, const TrainPlan& plan, const TrainRun* run,
                             const DevicePeak& peak, std::int64_t world) {
  reports::Result r;
  r.benchmark = "train";
  describe_run(r, o, plan, run);
  describe_plan(r, plan);
  describe_listings(r, plan);
  if (!run) return r;
  const double step_time = throughput_metrics(r, plan, *run, peak, world);
  run_measurements(r, plan, *run, step_time);
  return r;
}

}  // namespace fb::workloads
