#include "reports/attention_console.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace fb::reports {

void print_attention_table(std::ostream& out, std::span<const Result> results,
                           const nlohmann::json& summary) {
  std::size_t width = 4;
  for (const auto& r : results) width = std::max(width, r.name.size());
  // Megatron halves the causal score and context FLOPs; a --no-causal shape counts them whole.
  const auto causal = [&](bool want) {
    return std::any_of(results.begin(), results.end(), [&](const Result& r) {
      const auto it = r.params.find("causal");  // (a hand-edited report: anything)
      const bool is = it == r.params.end() || !it->is_boolean() || it->get<bool>();
      return is == want;
    });
  };
  const char* counted = causal(true) && causal(false) ? "causal halved, full whole"
                        : causal(false)               ? "full, not causal: whole"
                                                      : "causal halved";
  // No engine in the summary of a run stopped before its end (the rows so far alone).
  if (summary.contains("engine"))
    out << fmt::format("# engine: {}; FLOPs counted as Megatron counts them ({})\n",
                       summary.value("engine", "?"), counted);
  else
    out << fmt::format("# FLOPs counted as Megatron counts them ({})\n", counted);
  out << fmt::format("# {:<{}}  {:>10}  {:>21}  {:>10}  {:>10}  {:>10}  {:>10}  {:>6}  {}\n", "name",
                     width - 2, "TFLOP/s", "(min - max)", "fwd TF/s", "bwd TF/s", "fwd (us)", "bwd (us)",
                     "MFU", "check");
  auto value = [](const Result& r, const char* name) {
    const Metric* m = r.metric(name);
    return m ? m->value : 0.0;
  };
  for (const auto& r : results) {
    const Metric* tf = r.metric("tflops");
    const Metric* mfu = r.metric("mfu");
    const std::string spread =
        tf && tf->stats ? fmt::format("{:.4g} - {:.4g}", tf->stats->min, tf->stats->max) : "-";
    const std::string check =
        r.status == Status::failed ? "FAILED" : (r.params.value("check", false) ? "ok" : "off");
    out << fmt::format("{:<{}}  {:>10.4g}  {:>21}  {:>10.4g}  {:>10.4g}  {:>10.1f}  {:>10.1f}  {:>6}  {}\n",
                       r.name, width, value(r, "tflops"), spread, value(r, "forward_tflops"),
                       value(r, "backward_tflops"), value(r, "forward_time_us"), value(r, "backward_time_us"),
                       mfu ? fmt::format("{:.1f}%", 100 * mfu->value) : std::string("-"), check);
    if (r.status == Status::failed && r.error) out << "#   " << *r.error << "\n";
  }
}

}  // namespace fb::reports
