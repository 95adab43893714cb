#include "reports/info_console.hpp"

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "core/units.hpp"

namespace fb::reports {

void print_info(std::ostream& out, const Report& report, std::string_view version_line) {
  out << version_line << "\n";
  const auto& run = report.run;
  out << fmt::format("run: {} rank(s) on {} host(s), {} backend\n", run["world_size"].get<int>(),
                     run["hosts"].size(), run["backend"].get<std::string>());
  const auto& sys = report.system;
  out << fmt::format("host: {}, {} cores, {} memory, {}\n", sys["cpu"]["model"].get<std::string>(),
                     sys["cpu"]["cores"].get<int>(), format_bytes(sys["memory_bytes"].get<std::uint64_t>()),
                     sys["os"].get<std::string>());
  // A cuda build on a machine without the NVIDIA driver: the versions above are the libraries it was built
  // with, not a usable GPU stack; say so here rather than only in the JSON.
  if (sys.contains("driver") && sys["driver"].is_string()) {
    const auto driver = sys["driver"].get<std::string>();
    out << fmt::format("cuda: runtime {}, driver {}{}\n", sys.value("cuda", std::string("?")), driver,
                       driver == "none" ? " (no NVIDIA driver: the cuda backend cannot run here)" : "");
  }
  for (const auto& rank : sys["ranks"]) {
    const auto& d = rank["device"];
    std::string line = fmt::format("rank {} ({}, local {}): {} {}", rank["rank"].get<int>(),
                                   rank["host"].get<std::string>(), rank["local_rank"].get<int>(),
                                   d["kind"].get<std::string>(), d["name"].get<std::string>());
    if (d["kind"] == "gpu")
      line += fmt::format(", {} SMs, {}, cc {}", d["multiprocessors"].get<int>(),
                          format_bytes(d["memory_bytes"].get<std::uint64_t>()),
                          d.value("compute_capability", "?"));
    out << line << "\n";
  }
  // The peaks are the "peak" result: its source in params, peak_DTYPE_tflops metrics in the probe's order.
  for (const auto& r : report.results) {
    if (r.benchmark != "info" || r.name != "peak") continue;
    out << "peak (" << r.params.value("source", std::string()) << "):\n";
    constexpr std::string_view prefix = "peak_", suffix = "_tflops";
    for (const auto& [name, m] : r.metrics) {
      if (!name.starts_with(prefix) || !name.ends_with(suffix)) continue;
      const auto dtype =
          std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - suffix.size());
      out << fmt::format("  {:<6} {:>10.3f} TFLOP/s\n", dtype, m.value);
    }
    break;
  }
}

}  // namespace fb::reports
