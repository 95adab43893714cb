// factorybench info: devices, peaks and versions of every rank (the environment fingerprint).
#include <iostream>

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/report_json.hpp"
#include "tools/commands.hpp"
#include "workloads/run_environment.hpp"

namespace fb::tools {
namespace {

struct InfoOptions {
  bool json = false;
};

int run_info(const InfoOptions& opt, Session& session) {
  auto report = session.begin_report();
  auto& mpi = session.mpi();
  const auto& peak = session.peak();
  // One result per rank with its peaks, so a slow CPU or an unexpected device shows up in compare.
  reports::Result r;
  r.benchmark = "info";
  r.name = "peak";
  r.params = {{"source", peak.source}, {"measured", peak.measured}};
  for (const auto& [dtype, tflops] : peak.tflops) {
    r.set_metric("peak_" + dtype + "_tflops", {tflops, "TFLOP/s", reports::Better::higher, std::nullopt});
  }
  report.results.push_back(std::move(r));
  const int rc = session.finish(report);
  if (!mpi.is_root()) return rc;

  if (opt.json) {
    std::cout << reports::to_json(report).dump(2) << "\n";
    return rc;
  }
  std::cout << workloads::version_line() << "\n";
  const auto& run = report.run;
  std::cout << fmt::format("run: {} rank(s) on {} host(s), {} backend\n", run["world_size"].get<int>(),
                           run["hosts"].size(), run["backend"].get<std::string>());
  const auto& sys = report.system;
  std::cout << fmt::format("host: {}, {} cores, {} memory, {}\n", sys["cpu"]["model"].get<std::string>(),
                           sys["cpu"]["cores"].get<int>(),
                           format_bytes(sys["memory_bytes"].get<std::uint64_t>()),
                           sys["os"].get<std::string>());
  for (const auto& rank : sys["ranks"]) {
    const auto& d = rank["device"];
    std::string line = fmt::format("rank {} ({}, local {}): {} {}", rank["rank"].get<int>(),
                                   rank["host"].get<std::string>(), rank["local_rank"].get<int>(),
                                   d["kind"].get<std::string>(), d["name"].get<std::string>());
    if (d["kind"] == "gpu")
      line += fmt::format(", {} SMs, {}, cc {}", d["multiprocessors"].get<int>(),
                          format_bytes(d["memory_bytes"].get<std::uint64_t>()),
                          d.value("compute_capability", "?"));
    std::cout << line << "\n";
  }
  std::cout << "peak (" << peak.source << "):\n";
  for (const auto& [dtype, tflops] : peak.tflops)
    std::cout << fmt::format("  {:<6} {:>10.3f} TFLOP/s\n", dtype, tflops);
  return rc;
}

}  // namespace

Command add_info_command(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  auto* sub = app.add_subcommand("info", "Devices, peaks and library versions of every rank");
  sub->add_flag("--json", opt->json, "Print the JSON report instead of the human summary");
  return {sub, [opt](Session& s) { return run_info(*opt, s); }};
}

}  // namespace fb::tools
