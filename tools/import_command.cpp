// factorybench import nccl-tests FILE... | mlperf LOG...: other tools' results as factorybench reports, so
// they compare (factorybench compare) and render (factorybench report) like ours. Needs no device.
#include <iostream>

#include "core/atomic_file.hpp"
#include "core/logging.hpp"
#include "reports/import_mlperf.hpp"
#include "reports/import_nccl_tests.hpp"
#include "reports/report_json.hpp"
#include "tools/commands.hpp"

namespace fb::tools {
namespace {

struct ImportOptions {
  std::vector<std::string> nccl_files;
  std::vector<std::string> mlperf_logs;
  CLI::App* nccl = nullptr;
  CLI::App* mlperf = nullptr;
};

// The imported run keeps what the file says (world size, hosts, devices); the header says who imported it.
int finish_import(Session& session, reports::Report imported) {
  reports::Report report = session.begin_report(false);
  report.results = std::move(imported.results);
  report.events = std::move(imported.events);
  report.summary = std::move(imported.summary);
  for (const char* key : {"world_size", "hosts", "backend"})
    if (imported.run.contains(key)) report.run[key] = imported.run[key];
  report.system = std::move(imported.system);
  const int rc = session.finish(report);
  if (session.options().output.empty() && session.is_root())
    std::cout << reports::to_json(report).dump(2) << "\n";
  return rc;
}

int run_import(const ImportOptions& opt, Session& session) {
  if (opt.nccl->parsed()) {
    reports::Report merged;
    for (const auto& path : opt.nccl_files) {
      auto one = reports::import_nccl_tests(read_text_file(path), path);
      if (merged.results.empty() && merged.run.empty()) {
        merged = std::move(one);
        merged.summary = {{"import", nlohmann::json::array({merged.summary["import"]})}};
        continue;
      }
      for (auto& r : one.results) merged.results.push_back(std::move(r));
      merged.summary["import"].push_back(one.summary["import"]);
    }
    return finish_import(session, std::move(merged));
  }
  std::vector<reports::MlperfLog> logs;
  for (const auto& path : opt.mlperf_logs) logs.push_back({path, read_text_file(path)});
  return finish_import(session, reports::import_mlperf(logs));
}

}  // namespace

Command add_import_command(CLI::App& app) {
  auto opt = std::make_shared<ImportOptions>();
  auto* sub =
      app.add_subcommand("import", "Turn nccl-tests or MLPerf Training output into a factorybench report");
  sub->require_subcommand(1);
  opt->nccl = sub->add_subcommand("nccl-tests", "nccl-tests output: its text table or its -J JSON file");
  opt->nccl->add_option("files", opt->nccl_files, "nccl-tests output files (several: one report)")
      ->required()
      ->check(CLI::ExistingFile);
  opt->mlperf = sub->add_subcommand("mlperf", "MLPerf Training logs (:::MLLOG lines), one log per run");
  opt->mlperf->add_option("logs", opt->mlperf_logs, "MLPerf log files, one per run")
      ->required()
      ->check(CLI::ExistingFile);
  sub->footer(
      "Output: the JSON report on stdout, or with -o/--output FILE written to FILE (atomically).\n"
      "Exit status: 0 imported; 1 a result failed (nccl-tests wrong elements, an MLPerf run that did not "
      "succeed);\n"
      "2 usage or input error (naming FILE:LINE or the JSON path).");
  return {sub, [opt](Session& s) { return run_import(*opt, s); }};
}

}  // namespace fb::tools
