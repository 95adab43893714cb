#include "reports/health_console.hpp"

#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"

namespace fb::reports {
namespace {

std::optional<double> metric_of(const Report& report, const nlohmann::json& rank, std::string_view check,
                                std::string_view name) {
  for (const auto& r : report.results)
    if (r.benchmark == "health" && r.params.value("check", std::string()) == check &&
        r.params.value("rank", -1) == rank.at("rank").get<int>()) {
      const auto* m = r.metric(name);
      return m ? std::optional<double>(m->value) : std::nullopt;
    }
  return std::nullopt;
}

}  // namespace

void print_health_report(std::ostream& out, const Report& report) {
  const auto health = report.summary.value("health", nlohmann::json::object());
  const auto ranks = health.value("ranks", nlohmann::json::array());
  // A run that ended before its last check (a hang, a signal): summary.health.checks_done of the checks.
  const std::size_t planned = health.value("checks", nlohmann::json::array()).size();
  const std::size_t done = health.value("checks_done", planned);
  const bool partial = done < planned;
  int pass = 0, warn = 0, fail = 0, unfinished = 0;
  for (const auto& r : ranks) {
    const auto verdict = r.at("verdict").get<std::string>();
    if (partial && verdict != "fail") {  // no verdict yet: what the checks done found
      ++unfinished;
      std::string detail = fmt::format("{} of {} checks, none failed", done, planned);
      if (verdict == "warn") detail += "; warned: " + r.value("reason", std::string());
      if (const auto v = metric_of(report, r, "gemm", "tflops"))
        detail += fmt::format("; gemm {:.2f} TFLOP/s", *v);
      out << fmt::format("rank {} ({}, {}): NOT FINISHED ({})\n", r.at("rank").get<int>(),
                         r.at("host").get<std::string>(), r.at("device").get<std::string>(), detail);
      continue;
    }
    pass += verdict == "pass";
    warn += verdict == "warn";
    fail += verdict == "fail";
    std::string detail;
    if (verdict == "pass") {
      std::vector<std::string> parts;
      if (const auto v = metric_of(report, r, "gemm", "tflops"))
        parts.push_back(fmt::format("gemm {:.2f} TFLOP/s", *v));
      if (const auto v = metric_of(report, r, "allreduce", "busbw_gbps"))
        parts.push_back(fmt::format("allreduce {:.2f} GB/s exact", *v));
      if (const auto v = metric_of(report, r, "checkpoint_dir", "write_gbps"))
        parts.push_back(fmt::format("ckpt write {:.2f} GB/s", *v));
      if (const auto v = metric_of(report, r, "memory", "free_bytes"))
        parts.push_back(fmt::format("{} free", format_bytes(static_cast<std::uint64_t>(*v))));
      detail = fmt::format("{}", fmt::join(parts, ", "));
    } else {
      detail = r.value("reason", std::string());  // the failed checks' reasons, else the warned ones'
    }
    std::string upper = verdict;
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out << fmt::format("rank {} ({}, {}): {} {}\n", r.at("rank").get<int>(), r.at("host").get<std::string>(),
                       r.at("device").get<std::string>(), upper, detail);
  }
  std::string job;
  if (health.contains("job")) {
    const auto& j = health.at("job");
    std::string upper = j.value("verdict", std::string());
    for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out << fmt::format("job: {} {}: {}\n", upper, j.value("check", std::string()),
                       j.value("reason", std::string()));
    job = "; job " + upper;
  }
  std::string tally = fmt::format("{} pass, {} warn, {} fail", pass, warn, fail);
  if (partial) tally += fmt::format(", {} not finished ({} of {} checks done)", unfinished, done, planned);
  out << fmt::format("health: {} rank(s): {}{}\n", ranks.size(), tally, job);
}

}  // namespace fb::reports
