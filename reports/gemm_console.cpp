#include "reports/gemm_console.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace fb::reports {

namespace {

// The engine and peak lines above the rows (absent from the summary of a run stopped before its end).
void print_head(std::ostream& out, const nlohmann::json& summary) {
  if (summary.contains("engine"))
    out << fmt::format(
        "# engine: {}{}\n", summary.value("engine", "?"),
        summary.value("emulated", false) ? " (emulated: not native throughput of this dtype)" : "");
  if (summary.contains("peak_source")) out << fmt::format("# peak: {}\n", summary.value("peak_source", "?"));
}

void print_columns(std::ostream& out, std::size_t width, bool algo) {
  out << fmt::format("# {:<{}}  {:>10}  {:>21}  {:>12}  {:>7}{}  {}\n", "name", width - 2, "TFLOP/s",
                     "(min - max)", "time (us)", "MFU", algo ? "   algo" : "", "check");
}

void print_row(std::ostream& out, const Result& r, std::size_t width, bool algo_column) {
  const Metric* tf = r.metric("tflops");
  const Metric* us = r.metric("time_us");
  const Metric* mfu = r.metric("mfu");
  const Metric* algo = r.metric("algo");
  std::string spread = "-";
  if (tf && tf->stats) spread = fmt::format("{:.4g} - {:.4g}", tf->stats->min, tf->stats->max);
  std::string check = r.status == Status::failed ? "FAILED" : (r.params.value("check", false) ? "ok" : "off");
  out << fmt::format(
      "{:<{}}  {:>10.4g}  {:>21}  {:>12.2f}  {:>7}{}  {}\n", r.name, width, tf ? tf->value : 0.0, spread,
      us ? us->value : 0.0, mfu ? fmt::format("{:.1f}%", 100 * mfu->value) : std::string("-"),
      algo_column ? fmt::format("  {:>5}", algo ? fmt::format("{:.0f}", algo->value) : "-") : "", check);
  if (r.status == Status::failed && r.error) out << "#   " << *r.error << "\n";
}

// Below the rows: the sweep's best shape and, with several ranks, the slow ranks.
void print_footer(std::ostream& out, const nlohmann::json& summary) {
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
  if (summary.contains("slow_ranks_not_judged")) {
    // Ranks that take turns on shared cores run at the scheduler's pace: a rank below the median there says
    // nothing about the rank, so it is listed, not flagged.
    const auto& nj = summary["slow_ranks_not_judged"];
    std::string shared, below;
    for (const auto& s : nj["cores_shared"]) shared += (shared.empty() ? "" : ", ") + s.get<std::string>();
    for (const auto& s : nj["below_median"])
      below += fmt::format("{}rank {} in {} ({:.1f}%)", below.empty() ? "" : ", ", s["rank"].get<int>(),
                           s["result"].get<std::string>(), 100 * s["slower_by"].get<double>());
    out << fmt::format(
        "# slow ranks: not judged, since ranks share their compute ({}) and take turns on it\n", shared);
    if (!below.empty())
      out << fmt::format("#   more than {:.1f}% below the median: {}\n", 100 * threshold, below);
  } else if (summary.value("ranks", 1) > 1) {
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

bool is_sweep_line(const Result& r) {
  return r.params.contains("best_shape");  // a sweep's DTYPE/mamf: the sweep line below says it
}

}  // namespace

void print_gemm_table(std::ostream& out, std::span<const Result> results, const nlohmann::json& summary) {
  std::size_t width = 4;
  for (const auto& r : results)
    if (!is_sweep_line(r)) width = std::max(width, r.name.size());
  const bool any_algo =
      std::any_of(results.begin(), results.end(), [](const Result& r) { return r.metric("algo"); });
  print_head(out, summary);
  print_columns(out, width, any_algo);
  for (const auto& r : results)
    if (!is_sweep_line(r)) print_row(out, r, width, any_algo);
  print_footer(out, summary);
}

GemmTableStream::GemmTableStream(std::ostream& out, std::span<const std::string> names) : out_(out) {
  for (const auto& n : names) width_ = std::max(width_, n.size());
}

void GemmTableStream::begin(const nlohmann::json& head) {
  print_head(out_, head);
  out_.flush();
}

void GemmTableStream::add(const Result& r) {
  if (finished_ || is_sweep_line(r)) return;
  if (!started_) {
    started_ = true;
    algo_ = r.metric("algo") != nullptr;  // one engine for the run: every shape has an algorithm or none does
    print_columns(out_, width_, algo_);
  }
  print_row(out_, r, width_, algo_);
  out_.flush();  // a log read while the sweep runs shows the shape now
}

void GemmTableStream::finish(const nlohmann::json& summary) {
  if (finished_) return;
  finished_ = true;
  print_footer(out_, summary);
  out_.flush();
}

}  // namespace fb::reports
