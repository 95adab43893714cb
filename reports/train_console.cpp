#include "reports/train_console.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "reports/train_extra.hpp"

namespace fb::reports {

void print_train_result(std::ostream& out, const Result& r) {
  const auto value = [&](const char* name) {
    const auto* m = r.metric(name);
    return m ? m->value : 0.0;
  };
  const auto extra = read_train_extra(r);
  if (!extra.run) throw input_error("result train/" + r.name + ": a plan (--dry-run), no steps to print");
  const TrainRunExtra& run = *extra.run;
  const auto* st = r.metric("step_time_s");
  const std::string attention = r.params.is_object() && r.params.contains("attention_engine") &&
                                        r.params["attention_engine"].is_string()
                                    ? ", attention " + r.params["attention_engine"].get<std::string>()
                                    : std::string();
  out << fmt::format("\n{}: {} steps{}, gemm engine {}{}\n", r.name, value("steps_completed"),
                     value("steps_completed") > 0 ? fmt::format(" ({} to {})", run.first_step, run.last_step)
                                                  : std::string(),
                     run.gemm_engine, attention);
  if (st && st->stats)
    out << fmt::format("step time: median {:.4f} s, p99 {:.4f} s, min {:.4f} s over {} measured steps\n",
                       st->value, st->stats->p99, st->stats->min, st->stats->n);
  if (st)
    out << fmt::format("throughput: {} tokens/s, {} tokens/s per GPU, {:.3f} model TFLOP/s per GPU\n",
                       format_si(value("tokens_per_s"), ""), format_si(value("tokens_per_s_per_gpu"), ""),
                       value("model_tflops_per_gpu"));
  if (r.metric("mfu"))
    out << fmt::format("MFU {:.1f}%, HFU {:.1f}% (peak {:.3f} TFLOP/s, {})\n", 100 * value("mfu"),
                       100 * value("hfu"), run.peak.tflops, run.peak.source);
  // A run stopped before its end has no allocation figure yet (the ranks agree it at the end): the estimate.
  out << fmt::format(
      "{}memory {} per rank\n",
      r.metric("loss") ? fmt::format("loss {:.6g}, grad norm {:.6g}; ", value("loss"), value("grad_norm"))
                       : std::string(),
      r.metric("memory_allocated_bytes_per_rank")
          ? fmt::format("allocated {} (estimate {})",
                        format_bytes(static_cast<std::uint64_t>(value("memory_allocated_bytes_per_rank"))),
                        format_bytes(static_cast<std::uint64_t>(value("memory_bytes_per_rank"))))
          : fmt::format("estimate {}",
                        format_bytes(static_cast<std::uint64_t>(value("memory_bytes_per_rank")))));
  if (r.metric("moe_load_imbalance"))
    out << fmt::format(
        "MoE load imbalance (max/mean tokens per expert): {:.3f}; dispatch rows sent {}, "
        "received {}\n",
        value("moe_load_imbalance"), run.moe_rows_sent, run.moe_rows_received);
  if (std::any_of(run.breakdown.seconds.begin(), run.breakdown.seconds.end(),
                  [](const auto& kv) { return kv.second > 0; }))
    out << "breakdown per step (rank 0):\n";
  for (const auto& [k, v] : run.breakdown.seconds)
    if (v > 0) out << fmt::format("  {:<22} {:.6f} s\n", k, v);
  if (!run.collective_bytes_per_step.empty()) {
    out << (extra.pipeline ? "collectives per step (a rank of the last pipeline stage):\n"
                           : "collectives per step (rank 0):\n");
    for (const auto& [k, v] : run.collective_bytes_per_step) {
      const auto calls = run.collective_calls_per_step.find(k);
      out << fmt::format("  {:<30} {}{}\n", k, format_bytes(static_cast<std::uint64_t>(v)),
                         calls == run.collective_calls_per_step.end()
                             ? std::string()
                             : fmt::format(" in {} call{}", calls->second, calls->second == 1 ? "" : "s"));
    }
  }
  if (r.error) out << (r.status == Status::skipped ? "SKIPPED: " : "FAILED: ") << *r.error << "\n";
}

}  // namespace fb::reports
