#include "reports/train_console.hpp"

#include <fmt/format.h>

#include "core/units.hpp"

namespace fb::reports {

void print_train_result(std::ostream& out, const Result& r) {
  const auto value = [&](const char* name) {
    const auto* m = r.metric(name);
    return m ? m->value : 0.0;
  };
  const auto* st = r.metric("step_time_s");
  out << fmt::format("\n{}: {} steps ({} to {}), gemm engine {}\n", r.name, value("steps_completed"),
                     r.extra.value("first_step", 0), r.extra.value("last_step", 0),
                     r.extra.value("gemm_engine", std::string()));
  if (st && st->stats)
    out << fmt::format("step time: median {:.4f} s, p99 {:.4f} s, min {:.4f} s over {} measured steps\n",
                       st->value, st->stats->p99, st->stats->min, st->stats->n);
  out << fmt::format("throughput: {} tokens/s, {} tokens/s per GPU, {:.3f} model TFLOP/s per GPU\n",
                     format_si(value("tokens_per_s"), ""), format_si(value("tokens_per_s_per_gpu"), ""),
                     value("model_tflops_per_gpu"));
  if (r.metric("mfu"))
    out << fmt::format("MFU {:.1f}%, HFU {:.1f}% (peak {:.3f} TFLOP/s, {})\n", 100 * value("mfu"),
                       100 * value("hfu"), r.extra["peak"].value("tflops", 0.0),
                       r.extra["peak"].value("source", std::string()));
  out << fmt::format("loss {:.6g}, grad norm {:.6g}; memory allocated {} per rank (estimate {})\n",
                     value("loss"), value("grad_norm"),
                     format_bytes(static_cast<std::uint64_t>(value("memory_allocated_bytes_per_rank"))),
                     format_bytes(static_cast<std::uint64_t>(value("memory_bytes_per_rank"))));
  if (r.metric("moe_load_imbalance"))
    out << fmt::format(
        "MoE load imbalance (max/mean tokens per expert): {:.3f}; dispatch rows sent {}, "
        "received {}\n",
        value("moe_load_imbalance"), r.extra["moe_dispatch"].value("rows_sent", 0),
        r.extra["moe_dispatch"].value("rows_received", 0));
  out << "breakdown per step (rank 0):\n";
  for (const auto& [k, v] : r.extra["breakdown"].items())
    if (v.get<double>() > 0) out << fmt::format("  {:<22} {:.6f} s\n", k, v.get<double>());
  if (!r.extra["collective_bytes_per_step"].empty()) {
    out << "bytes per step (rank 0):\n";
    for (const auto& [k, v] : r.extra["collective_bytes_per_step"].items())
      out << fmt::format("  {:<30} {}\n", k, format_bytes(static_cast<std::uint64_t>(v.get<double>())));
  }
  if (r.error) out << "FAILED: " << *r.error << "\n";
}

}  // namespace fb::reports
