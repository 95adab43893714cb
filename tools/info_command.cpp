// factorybench info: devices, peaks and versions of every rank (the environment fingerprint).
#include <iostream>

#include "reports/info_console.hpp"
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
  if (!session.options().quiet) reports::print_info(std::cout, report, workloads::version_line());
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
