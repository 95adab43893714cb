#include "reports/train_extra.hpp"

#include "reports/extra_cursor.hpp"

namespace fb::reports {

using nlohmann::json;

void write_train_extra(Result& r, const TrainExtra& x) {
  const auto& f = x.flops_per_token;
  r.extra["flops_per_token"] = {{"attention_projections", f.attention_projections},
                                {"attention_core", f.attention_core},
                                {"mlp_dense", f.mlp_dense},
                                {"moe_routed", f.moe_routed},
                                {"moe_shared", f.moe_shared},
                                {"mtp_projection", f.mtp_projection},
                                {"logits", f.logits},
                                {"hardware", f.hardware}};
  const auto& m = x.memory_estimate_bytes;
  r.extra["memory_estimate_bytes"] = {{"weights", m.weights},     {"gradients", m.gradients},
                                      {"optimizer", m.optimizer}, {"activations", m.activations},
                                      {"workspace", m.workspace}, {"total", m.total}};
  auto gemms = json::array();
  for (const auto& g : x.gemms)
    gemms.push_back({{"name", g.name},
                     {"pass", g.pass},
                     {"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"batch", g.batch},
                     {"transa", g.transa},
                     {"transb", g.transb},
                     {"calls_per_layer", g.calls_per_layer},
                     {"layers", g.layers},
                     {"note", g.note}});
  r.extra["gemms"] = gemms;
  auto colls = json::array();
  for (const auto& c : x.collectives_plan) {
    colls.push_back({{"name", c.name},
                     {"group", c.group},
                     {"op", c.op},
                     {"group_size", c.group_size},
                     {"bytes_per_call", c.bytes_per_call},
                     {"calls_per_step", c.calls_per_step},
                     {"bytes_per_step", c.bytes_per_step}});
    if (!c.note.empty()) colls.back()["note"] = c.note;
  }
  r.extra["collectives_plan"] = colls;
  if (const auto& p = x.pipeline)
    r.extra["pipeline"] = {{"schedule", p->schedule},
                           {"stages", p->stages},
                           {"layers_per_stage", p->layers_per_stage},
                           {"micro_batches", p->micro_batches},
                           {"ideal_bubble_fraction", p->ideal_bubble_fraction},
                           {"note", p->note}};
  if (!x.run) return;
  const auto& run = *x.run;
  r.extra["peak"] = {
      {"tflops", run.peak.tflops}, {"source", run.peak.source}, {"measured", run.peak.measured}};
  if (run.mfu_note) r.extra["mfu_note"] = *run.mfu_note;
  r.extra["breakdown"] = run.breakdown.seconds;
  r.extra["breakdown_categories"] = run.breakdown.categories;
  r.extra["breakdown_note"] = run.breakdown.note;
  r.extra["collective_bytes_per_step"] = run.collective_bytes_per_step;
  r.extra["collective_calls_per_step"] = run.collective_calls_per_step;
  r.extra["moe_dispatch"] = {{"rows_sent", run.moe_rows_sent}, {"rows_received", run.moe_rows_received}};
  r.extra["gemm_engine"] = run.gemm_engine;
  r.extra["gemm_emulated"] = run.gemm_emulated;
  r.extra["first_step"] = run.first_step;
  r.extra["last_step"] = run.last_step;
  r.extra["step_times_s"] = run.step_times_s;
}

TrainExtra read_train_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    TrainExtra x;
    const auto f = e.at("flops_per_token");
    x.flops_per_token = {f.at("attention_projections").num(),
                         f.at("attention_core").num(),
                         f.at("mlp_dense").num(),
                         f.at("moe_routed").num(),
                         f.at("moe_shared").num(),
                         f.at("mtp_projection").num(),
                         f.at("logits").num(),
                         f.at("hardware").num()};
    const auto m = e.at("memory_estimate_bytes");
    const auto bytes = [&](const char* key) { return m.at(key).integer<std::uint64_t>(); };
    x.memory_estimate_bytes = {bytes("weights"),     bytes("gradients"), bytes("optimizer"),
                               bytes("activations"), bytes("workspace"), bytes("total")};
    x.gemms = e.at("gemms").each([](const ExtraCursor& g) {
      return TrainPlannedGemm{g.at("name").str(),
                              g.at("pass").str(),
                              g.at("m").integer<std::int64_t>(),
                              g.at("n").integer<std::int64_t>(),
                              g.at("k").integer<std::int64_t>(),
                              g.at("batch").integer<std::int64_t>(),
                              g.at("transa").boolean(),
                              g.at("transb").boolean(),
                              g.at("calls_per_layer").integer<std::int64_t>(),
                              g.at("layers").integer<std::int64_t>(),
                              g.at("note").str()};
    });
    x.collectives_plan = e.at("collectives_plan").each([](const ExtraCursor& c) {
      return TrainPlannedCollective{c.at("name").str(),
                                    c.at("group").str(),
                                    c.at("op").str(),
                                    c.at("group_size").integer<std::int64_t>(),
                                    c.at("bytes_per_call").num(),
                                    c.at("calls_per_step").num(),
                                    c.at("bytes_per_step").num(),
                                    c.has("note") ? c.at("note").str() : std::string()};
    });
    if (e.has("pipeline")) {
      const auto p = e.at("pipeline");
      x.pipeline = TrainPipeline{p.at("schedule").str(),
                                 p.at("stages").integer<std::int64_t>(),
                                 p.at("layers_per_stage").integer<std::int64_t>(),
                                 p.at("micro_batches").integer<std::int64_t>(),
                                 p.at("ideal_bubble_fraction").num(),
                                 p.at("note").str()};
    }
    if (!e.has("breakdown")) return x;
    TrainRunExtra run;
    const auto peak = e.at("peak");
    run.peak = {peak.at("tflops").num(), peak.at("source").str(), peak.at("measured").boolean()};
    if (e.has("mfu_note")) run.mfu_note = e.at("mfu_note").str();
    run.breakdown = {e.at("breakdown_categories").strings(), e.at("breakdown").figures(),
                     e.at("breakdown_note").str()};
    run.collective_bytes_per_step = e.at("collective_bytes_per_step").figures();
    if (e.has("collective_calls_per_step"))
      run.collective_calls_per_step = e.at("collective_calls_per_step").figures();
    const auto moe = e.at("moe_dispatch");
    run.moe_rows_sent = moe.at("rows_sent").integer<std::int64_t>();
    run.moe_rows_received = moe.at("rows_received").integer<std::int64_t>();
    run.gemm_engine = e.at("gemm_engine").str();
    run.gemm_emulated = e.at("gemm_emulated").boolean();
    run.first_step = e.at("first_step").integer<std::int64_t>();
    run.last_step = e.at("last_step").integer<std::int64_t>();
    run.step_times_s = e.at("step_times_s").numbers();
    x.run = std::move(run);
    return x;
  });
}

std::optional<TrainBreakdown> find_train_breakdown(const Result& r) {
  const json& x = r.extra;
  if (!x.is_object() || !x.contains("breakdown") || !x.at("breakdown").is_object()) return std::nullopt;
  TrainBreakdown b;
  if (x.contains("breakdown_categories") && x.at("breakdown_categories").is_array())
    for (const auto& cat : x.at("breakdown_categories"))
      if (cat.is_string()) b.categories.push_back(cat.get<std::string>());
  for (const auto& [cat, v] : x.at("breakdown").items())
    if (v.is_number()) b.seconds[cat] = v.get<double>();
  if (x.contains("breakdown_note") && x.at("breakdown_note").is_string())
    b.note = x.at("breakdown_note").get<std::string>();
  return b;
}

}  // namespace fb::reports
