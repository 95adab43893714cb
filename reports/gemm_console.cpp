#include "reports/gemm_console.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace fb::reports {

void print_gemm_table(std::ostream& out, std::span<const Result> results, const nlohmann::json& summary) {
  std::size_t width = 4;
  for (const auto& r : results) width = std::max(width, r.name.size());
  const bool any_algo =
      std::any_of(results.begin(), results.end(), [](const Result& r) { return r.metric("algo"); });

  // Absent from the summary of a run stopped before its end (the rows so far alone).
  if (summary.contains("engine"))
    out << fmt::format(
        "# engine: {}{}\n", summary.value("engine", "?"),
        summary.value("emulated", false) ? " (emulated: not native throughput of this dtype)" : "");
  if (summary.contains("peak_source")) out << fmt::format("# peak: {}\n", summary.value("peak_source", "?"));
  out << fmt::format("# {:<{}}  {:>10}  {:>21}  {:>12}  {:>7}{}  {}\n", "name", width - 2, "TFLOP/s",
                     "(min - max)", "time (us)", "MFU", any_algo ? "   algo" : "", "check");
  for (const auto& r : results) {
    if (r.params.contains("best_shape")) continue;  // a sweep's DTYPE/mamf: the sweep line below says it
    const Metric* tf = r.metric("tflops");
    const Metric* us = r.metric("time_us");
    const Metric* mfu = r.metric("mfu");
    const Metric* algo = r.metric("algo");
    std::string spread = "-";
    if (tf && tf->stats) spread = fmt::format("{:.4g} - {:.4g}", tf->stats->min, tf->stats->max);
    std::string check =
        r.status == Status::failed ? "FAILED" : (r.params.value("check", false) ? "ok" : "off");
    out << fmt::format(
        "{:<{}}  {:>10.4g}  {:>21}  {:>12.2f}  {:>7}{}  {}\n", r.name, width, tf ? tf->value : 0.0, spread,
        us ? us->value : 0.0, mfu ? fmt::format("{:.1f}%", 100 * mfu->value) : std::string("-"),
        any_algo ? fmt::format("  {:>5}", algo ? fmt::format("{:.0f}", algo->value) : "-") : "", check);
    if (r.status == Status::failed && r.error) out << "#   " << *r.error << "\n";
  }
  if (summary.contains("sweep")) {
    const auto& s = summary["sweep"];
    out << fmt::format(
        "# sweep: best {:.4g} TFLOP/s at {} (m={} n={} k={}); mean over {} shapes {:.4g} TFLOP/s\n",
        s["best"]["tflops"].get<double>(), s["best"]["name"].get<std::string>(),
        s["best"]["m"].get<long long>(), s["best"]["n"].get<long long>(), s["best"]["k"].get<long long>(),
        s["shapes"].get<long long>(), s["mean_tflops"].get<double>());
  }
  const auto slow = summary.value("slow_ranks", nlohmann::json::array());
  const double threshold = summary.value("outlier_threshold", 0.05);
  if (summary.value("ranks", 1) > 1) {
    if (slow.empty())
      out << fmt::format("# slow ranks: none (no rank more than {:.1f}% below the median)\n",
                         100 * threshold);
    for (const auto& s : slow)
      out << fmt::format("# SLOW RANK {} ({}): {:.4g} TFLOP/s in {}, {:.1f}% below the median {:.4g}\n",
                         s["rank"].get<int>(), s["host"].get<std::string>(), s["tflops"].get<double>(),
                         s["result"].get<std::string>(), 100 * s["slower_by"].get<double>(),
                         s["median_tflops"].get<double>());
  }
}

}  // namespace fb::reports
