#include "reports/simulate_console.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/simulate_extra.hpp"

namespace fb::reports {

void print_simulation(std::ostream& out, const Report& report, std::span<const std::string_view> time_parts) {
  if (report.results.empty()) return;
  const auto& p0 = report.results.front().params;
  const bool work = p0.contains("work_days") && p0["work_days"].is_number();
  out << fmt::format("simulate: failure model {} ({}, {} trials, seed {})\n",
                     p0["failure_model"].get<std::string>(),
                     work ? fmt::format("a fixed work of {} d of compute", p0["work_days"].get<double>())
                          : fmt::format("{} d window", p0["days"].get<double>()),
                     p0["trials"].get<int>(), p0["seed"].get<std::uint64_t>());
  const auto& src = p0["cost_sources"];
  out << fmt::format(
      "costs: checkpoint {} ({}){}, detection {} ({}), relaunch {} ({}), restore {} ({}); spares {}, policy "
      "{}\n",
      format_duration(p0["checkpoint_s"].get<double>()), src["checkpoint"].get<std::string>(),
      // Asynchronous saves only (a report of an earlier version has no commit time: synchronous).
      p0.value("commit_s", 0.0) > 0 ? fmt::format(" + an asynchronous write of {} ({}) until durable",
                                                  format_duration(p0["commit_s"].get<double>()),
                                                  src.value("commit", std::string("option")))
                                    : std::string(),
      format_duration(p0["detection_s"].get<double>()), src["detection"].get<std::string>(),
      format_duration(p0["relaunch_s"].get<double>()), src["relaunch"].get<std::string>(),
      format_duration(p0["restore_s"].get<double>()), src["restore"].get<std::string>(), p0["spares"].dump(),
      p0["policy"].get<std::string>());
  out << fmt::format(
      "{:>8} {:>9} {:>8} {:>10} {:>10} | {:>8} {:>6} {:>6} {:>6} {:>6} | {:>10} {:>10} {:>8} {:>8}\n", "gpus",
      "mtbf_h", "failures", "interval", "policy", "goodput%", "p5", "p50", "p95", "ettr", "1st-order%",
      "exp-model%", "young", "daly");
  for (const auto& r : report.results) {
    const auto& p = r.params;
    const auto pc = read_simulate_extra(r).goodput_pct;
    out << fmt::format(
        "{:>8} {:>9.3f} {:>8.1f} {:>10} {:>10} | {:>8.2f} {:>6.2f} {:>6.2f} {:>6.2f} {:>6.3f} | {:>10.2f} "
        "{:>10} {:>8} {:>8}\n",
        p["gpus"].get<std::int64_t>(),
        r.metric("job_mtbf_h") ? r.metric("job_mtbf_h")->value : INFINITY,  // no failure simulated
        r.metric("failures_mean")->value, format_duration(r.metric("interval_s")->value),
        p["interval_policy"].get<std::string>(), r.metric("goodput_pct")->value, pc.p5, pc.p50, pc.p95,
        r.metric("ettr")->value, r.metric("analytic_goodput_pct")->value,
        // A report of an earlier version has no exponential figure.
        r.metric("exponential_goodput_pct")
            ? fmt::format("{:.2f}", r.metric("exponential_goodput_pct")->value)
            : std::string("-"),
        format_duration(p["young_interval_s"].get<double>()),
        format_duration(p["daly_interval_s"].get<double>()));
  }
  out << "analytic: 1st-order = 1 - C/T - T/2M - R/M (Young); exp-model = Daly 2006, failures also striking "
         "saves and restarts (docs/simulator.md)\n";
  if (p0.value("commit_s", 0.0) > 0)
    out << "analytic, with the write W: 1st-order = T/max(T, W) x (1 - C/max(T, W) - (T/2 + min(W, T) + "
           "max(0, W-T)/2)/M - R/M);\n"
           "  exp-model needs C + max(T, W) without a failure per save, T + C + W after one\n";
  const auto notes = [&](const char* key, const char* what) {
    for (const auto& r : report.results)
      if (r.params.contains(key) && r.params[key].is_string())
        out << fmt::format("{} at {} GPUs: {}\n", what, r.params["gpus"].get<std::int64_t>(),
                           r.params[key].get<std::string>());
  };
  notes("analytic_note", "analytic");
  notes("window_note", "window");
  if (work) {
    out << "time to train (days over trials; analytic: work / the analytic goodput):\n";
    out << fmt::format("{:>8} {:>10} | {:>8} {:>8} {:>8} {:>8} | {:>10} {:>10} {:>10}\n", "gpus", "interval",
                       "mean", "p5", "p50", "p95", "1st-order", "exp-model", "unfinished");
    for (const auto& r : report.results) {
      const auto w = read_simulate_extra(r).wall_h;
      const auto days = [&](const char* key) {
        const auto it = r.params.find(key);
        return it != r.params.end() && it->is_number() ? fmt::format("{:.2f}", it->get<double>() / 24) : "-";
      };
      out << fmt::format("{:>8} {:>10} | {:>8.2f} {:>8.2f} {:>8.2f} {:>8.2f} | {:>10} {:>10} {:>10}\n",
                         r.params["gpus"].get<std::int64_t>(), format_duration(r.metric("interval_s")->value),
                         w.mean / 24, w.p5 / 24, w.p50 / 24, w.p95 / 24, days("analytic_time_to_train_h"),
                         days("exponential_time_to_train_h"), r.params["unfinished_trials"].get<int>());
    }
    notes("time_to_train_note", "time to train");
  }
  out << "badput (% of wall time, mean over trials):\n";
  out << fmt::format("{:>8} {:>10}", "gpus", "interval");
  for (std::size_t i = 1; i < time_parts.size(); ++i) out << fmt::format(" {:>10}", time_parts[i]);
  out << "\n";
  for (const auto& r : report.results) {
    const auto badput_pct = read_simulate_extra(r).badput_pct;
    out << fmt::format("{:>8} {:>10}", r.params["gpus"].get<std::int64_t>(),
                       format_duration(r.metric("interval_s")->value));
    for (std::size_t i = 1; i < time_parts.size(); ++i)
      out << fmt::format(" {:>10.2f}", badput_pct.at(std::string(time_parts[i])));
    out << "\n";
  }
}

}  // namespace fb::reports
