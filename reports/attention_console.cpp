#include "reports/attention_console.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

namespace fb::reports {

namespace {

// Megatron halves the causal score and context FLOPs; a --no-causal shape counts them whole.
const char* flops_counted(bool any_causal, bool any_full) {
  return any_causal && any_full ? "causal halved, full whole"
         : any_full             ? "full, not causal: whole"
                                : "causal halved";
}

void print_head(std::ostream& out, const std::string* engine, const char* counted) {
  if (engine)
    out << fmt::format("# engine: {}; FLOPs counted as Megatron counts them ({})\n", *engine, counted);
  else
    out << fmt::format("# FLOPs counted as Megatron counts them ({})\n", counted);
}

void print_columns(std::ostream& out, std::size_t width) {
  out << fmt::format("# {:<{}}  {:>10}  {:>21}  {:>10}  {:>10}  {:>10}  {:>10}  {:>6}  {}\n", "name",
                     width - 2, "TFLOP/s", "(min - max)", "fwd TF/s", "bwd TF/s", "fwd (us)", "bwd (us)",
                     "MFU", "check");
}

void print_row(std::ostream& out, const Result& r, std::size_t width) {
  const auto value = [&r](const char* name) {
    const Metric* m = r.metric(name);
    return m ? m->value : 0.0;
  };
  const Metric* tf = r.metric("tflops");
  const Metric* mfu = r.metric("mfu");
  const std::string spread =
      tf && tf->stats ? fmt::format("{:.4g} - {:.4g}", tf->stats->min, tf->stats->max) : "-";
  const std::string check =
      r.status == Status::failed ? "FAILED" : (r.params.value("check", false) ? "ok" : "off");
  out << fmt::format("{:<{}}  {:>10.4g}  {:>21}  {:>10.4g}  {:>10.4g}  {:>10.1f}  {:>10.1f}  {:>6}  {}\n",
                     r.name, width, value("tflops"), spread, value("forward_tflops"),
                     value("backward_tflops"), value("forward_time_us"), value("backward_time_us"),
                     mfu ? fmt::format("{:.1f}%", 100 * mfu->value) : std::string("-"), check);
  if (r.status == Status::failed && r.error) out << "#   " << *r.error << "\n";
}

}  // namespace

void print_attention_table(std::ostream& out, std::span<const Result> results,
                           const nlohmann::json& summary) {
  std::size_t width = 4;
  for (const auto& r : results) width = std::max(width, r.name.size());
  const auto causal = [&](bool want) {
    return std::any_of(results.begin(), results.end(), [&](const Result& r) {
      const auto it = r.params.find("causal");  // (a hand-edited report: anything)
      const bool is = it == r.params.end() || !it->is_boolean() || it->get<bool>();
      return is == want;
    });
  };
  // No engine in the summary of a run stopped before its end (the rows so far alone).
  const std::string engine = summary.value("engine", "?");
  print_head(out, summary.contains("engine") ? &engine : nullptr, flops_counted(causal(true), causal(false)));
  print_columns(out, width);
  for (const auto& r : results) print_row(out, r, width);
}

AttentionTableStream::AttentionTableStream(std::ostream& out, std::span<const std::string> names,
                                           bool any_causal, bool any_full)
    : out_(out), counted_(flops_counted(any_causal, any_full)) {
  for (const auto& n : names) width_ = std::max(width_, n.size());
}

void AttentionTableStream::begin(const std::string& engine) {
  print_head(out_, &engine, counted_.c_str());
  out_.flush();
}

void AttentionTableStream::add(const Result& r) {
  if (finished_) return;
  if (!started_) {
    started_ = true;
    print_columns(out_, width_);
  }
  print_row(out_, r, width_);
  out_.flush();  // a log read while the run goes on shows the shape now
}

void AttentionTableStream::finish() {
  if (finished_) return;
  finished_ = true;
  out_.flush();
}

}  // namespace fb::reports
