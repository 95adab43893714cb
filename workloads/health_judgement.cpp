// health's judgements as functions of what was read, per device class: the GEMM's expectation and floor,
// and the GPU's clocks and slowdown reasons from NVML. No MPI, no device work: unit-tested on their own
// (the NVML ones on the scripted NVML in tests/fakes).
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/statistics.hpp"
#include "workloads/health_checks.hpp"

namespace fb::workloads {

using health::metric;
using health::outcome;
using health::percent;
using nlohmann::json;
using reports::Better;
using reports::Metric;

ClockThresholds clock_thresholds(const DevicePeak& peak) {
  ClockThresholds t;
  t.power_limit_fail = peak.health_power_limit_fail.value_or(t.power_limit_fail);
  t.power_limit_warn =
      std::max(peak.health_power_limit_warn.value_or(t.power_limit_warn), t.power_limit_fail);
  t.clock_under_load_warn = peak.health_clock_under_load_warn.value_or(t.clock_under_load_warn);
  return t;
}

// The clocks verdict from what was read: power-limit findings so far, the max clock and the clock under
// load (the GEMM window's median, else a reading now).
CheckOutcome clocks_outcome(const char* unit_name, Verdict verdict, std::vector<std::string> problems,
                            std::vector<std::string> seen, CheckOutcome o, std::optional<double> max_clock,
                            std::optional<double> load_clock, const ClockThresholds& t) {
  if (load_clock) {
    o.metrics.emplace_back("clock_under_load_mhz", metric(*load_clock, "MHz", Better::higher));
    std::string text = fmt::format("{} {:.0f} MHz under load", unit_name, *load_clock);
    if (max_clock && *max_clock > 0) {
      text += fmt::format(" of max {:.0f}", *max_clock);
      if (*load_clock < t.clock_under_load_warn * *max_clock) {
        verdict = std::max(verdict, Verdict::warn);
        problems.push_back(text + fmt::format(" (below {})", percent(t.clock_under_load_warn)));
        text.clear();
      }
    }
    if (!text.empty()) seen.push_back(text);
  }
  if (max_clock) o.metrics.emplace_back("max_clock_mhz", metric(*max_clock, "MHz", Better::none));
  if (problems.empty() && seen.empty())
    return outcome("clocks", Verdict::skip, fmt::format("no {} or power limit readings", unit_name));
  std::vector<std::string> all = problems;
  all.insert(all.end(), seen.begin(), seen.end());
  o.check = "clocks";
  o.verdict = verdict;
  o.reason = fmt::format("{}", fmt::join(all, "; "));
  return o;
}

CheckOutcome gpu_clocks_outcome(const nvml::Device& gpu, const std::optional<json>& window,
                                const ClockThresholds& t) {
  std::vector<std::string> problems, seen;
  Verdict verdict = Verdict::pass;
  CheckOutcome o;
  const auto l = gpu.limits();
  if (l.power_limit_w && l.default_power_limit_w && *l.default_power_limit_w > 0) {
    const double ratio = *l.power_limit_w / *l.default_power_limit_w;
    const std::string text =
        fmt::format("power limit {:.0f} W of default {:.0f} W", *l.power_limit_w, *l.default_power_limit_w);
    if (ratio < t.power_limit_fail) {
      verdict = Verdict::fail;
      problems.push_back(text + fmt::format(" (below {})", percent(t.power_limit_fail)));
    } else if (ratio < t.power_limit_warn) {
      verdict = Verdict::warn;
      problems.push_back(text);
    } else {
      seen.push_back(text);
    }
    o.metrics.emplace_back("power_limit_w", metric(*l.power_limit_w, "W", Better::higher));
    o.metrics.emplace_back("default_power_limit_w", metric(*l.default_power_limit_w, "W", Better::none));
  }
  std::optional<double> load_clock;
  if (window && window->contains("gpu") && (*window)["gpu"].contains("sm_clock_mhz"))
    load_clock = (*window)["gpu"]["sm_clock_mhz"]["median"].get<double>();
  else if (const auto r = gpu.read(false); r.sm_clock_mhz)
    seen.push_back(fmt::format("SM clock {:.0f} MHz idle", *r.sm_clock_mhz));
  return clocks_outcome("SM clock", verdict, std::move(problems), std::move(seen), std::move(o),
                        l.max_sm_clock_mhz, load_clock, t);
}

CheckOutcome gpu_slowdown_outcome(const nvml::Device& gpu, const std::optional<json>& window) {
  const auto now = gpu.read(false).clock_event_reasons;
  std::set<std::string> active, other;
  if (now) {
    for (const auto& n : nvml::clock_event_reason_names(*now & nvml::kSlowdownReasons)) active.insert(n);
    for (const auto& n : nvml::clock_event_reason_names(*now & ~nvml::kSlowdownReasons)) other.insert(n);
  }
  bool during = false;
  if (window && window->contains("gpu") && (*window)["gpu"].contains("slowdown_reasons")) {
    during = true;
    for (const auto& n : (*window)["gpu"]["slowdown_reasons"]) active.insert(n.get<std::string>());
    for (const auto& n : (*window)["gpu"]["clock_event_reasons"]) other.insert(n.get<std::string>());
  }
  if (!now && !during) return outcome("slowdown", Verdict::skip, "clock-event reasons unavailable");
  for (const auto& n : active) other.erase(n);
  CheckOutcome o =
      !active.empty()
          ? outcome("slowdown", Verdict::fail,
                    fmt::format("active hardware slowdown{}: {}", during ? " (now or during the GEMM)" : "",
                                fmt::join(active, ", ")))
          : outcome("slowdown", Verdict::pass,
                    other.empty() ? std::string("no clock-event reasons")
                                  : fmt::format("no slowdown; other reasons: {}", fmt::join(other, ", ")));
  o.metrics.emplace_back("slowdown_reasons",
                         metric(static_cast<double>(active.size()), "count", Better::lower));
  return o;
}

std::optional<GemmExpectation> gemm_expectation(const DevicePeak& peak, const std::string& dtype,
                                                std::span<const double> rank_tflops) {
  if (peak.measured) {
    std::vector<double> measured;
    for (const double v : rank_tflops)
      if (v > 0) measured.push_back(v);
    if (measured.empty()) return std::nullopt;
    return GemmExpectation{summarize(measured).median,
                           fmt::format("median of {} rank(s) running the same GEMM", measured.size())};
  }
  const std::string cls = peak.class_name.empty() ? std::string() : " (" + peak.class_name + ")";
  if (const auto mamf = peak.mamf_tflops.find(dtype); mamf != peak.mamf_tflops.end())
    return GemmExpectation{mamf->second, fmt::format("MAMF {}{}", mamf->second, cls)};
  if (const auto p = peak.for_dtype(dtype); p && *p > 0)
    return GemmExpectation{*p, fmt::format("dense peak {}{}, no MAMF known", *p, cls)};
  return std::nullopt;
}

double gemm_floor(const HealthOptions& options, const DevicePeak& peak) {
  return options.gemm_floor.value_or(peak.health_gemm_floor.value_or(kDefaultGemmFloor));
}

CheckOutcome allreduce_floor_outcome(std::span<const double> rank_busbw_gbps, double floor_gbps) {
  // One rank moves nothing between ranks: its bus factor 2(n-1)/n is 0, so any floor would fail it.
  if (rank_busbw_gbps.size() == 1)
    return outcome("allreduce_floor", Verdict::skip,
                   fmt::format("one rank: an all-reduce moves no data between ranks (busbw factor 2(n-1)/n = "
                               "0), so --allreduce-floor {:.3g} GB/s is not judged; run it under mpirun/srun",
                               floor_gbps));
  std::vector<double> measured;
  for (const double v : rank_busbw_gbps)
    if (std::isfinite(v)) measured.push_back(v);
  if (measured.empty())
    return outcome("allreduce_floor", Verdict::skip,
                   "no rank measured the all-reduce (its check failed on every rank)");
  // Every rank times the same collective; the median keeps one rank's late start from deciding.
  const double median = summarize(measured).median;
  const std::string seen = fmt::format("median busbw {:.3g} GB/s over {} rank(s)", median, measured.size());
  CheckOutcome o =
      median >= floor_gbps
          ? outcome("allreduce_floor", Verdict::pass, fmt::format("{}; floor {:.3g} GB/s", seen, floor_gbps))
          : outcome(
                "allreduce_floor", Verdict::fail,
                // No rank is named: the slow one drags every rank's figure down alike, and the lowest
                // is whichever waited last, a healthy rank as often as not.
                fmt::format("{}, below --allreduce-floor {:.3g} GB/s (ranks {:.3g} to {:.3g} GB/s): a "
                            "slow rank or link slows every rank alike, so no node is failed or named; run "
                            "`factorybench locate` to find it",
                            seen, floor_gbps, *std::min_element(measured.begin(), measured.end()),
                            *std::max_element(measured.begin(), measured.end())));
  o.metrics.emplace_back("busbw_gbps", metric(median, "GB/s", Better::higher));
  o.metrics.emplace_back("floor_gbps", metric(floor_gbps, "GB/s", Better::none));
  o.metrics.emplace_back("fraction_of_floor", metric(median / floor_gbps, "fraction", Better::higher));
  return o;
}

}  // namespace fb::workloads
