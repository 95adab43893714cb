// factorybench info: devices, peaks and versions of every rank (the environment fingerprint).
#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <limits>
#include <span>
#include <vector>

#include "core/rank_collectives.hpp"
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
  // One result with rank 0's peaks and every rank's beside them (per_rank), so a slow CPU or an unexpected
  // device on any rank shows up in compare. The hardware table's dtype keys, in one order on every rank;
  // NaN where a rank has no peak for one.
  static constexpr std::array<const char*, 7> kKeys = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4"};
  std::array<double, kKeys.size()> mine{};
  for (std::size_t i = 0; i < kKeys.size(); ++i)
    mine[i] = peak.for_dtype(kKeys[i]).value_or(std::numeric_limits<double>::quiet_NaN());
  const std::vector<double> all = allgather(mpi, std::span<const double>(mine));
  reports::Result r;
  r.benchmark = "info";
  r.name = "peak";
  r.params = {{"source", peak.source}, {"measured", peak.measured}};
  for (const auto& [dtype, tflops] : peak.tflops) {
    r.set_metric("peak_" + dtype + "_tflops", {tflops, "TFLOP/s", reports::Better::higher, std::nullopt});
    const auto key = std::find(kKeys.begin(), kKeys.end(), dtype);
    if (key == kKeys.end()) continue;
    std::vector<double> ranks;
    for (std::size_t rank = 0; rank < all.size() / kKeys.size(); ++rank)
      ranks.push_back(all[rank * kKeys.size() + static_cast<std::size_t>(key - kKeys.begin())]);
    // A report holds numbers only: a dtype some rank has no peak for (another device) is rank 0's alone.
    if (std::all_of(ranks.begin(), ranks.end(), [](double v) { return std::isfinite(v); }))
      r.set_per_rank("peak_" + dtype + "_tflops", std::move(ranks));
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
