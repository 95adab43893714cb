// factorybench import nccl-tests FILE... | mlperf LOG...: other tools' results as factorybench reports, so
// they compare (factorybench compare) and render (factorybench report) like ours. Needs no device.
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "reports/import_mlperf.hpp"
#include "reports/import_nccl_tests.hpp"
#include "reports/report_json.hpp"
#include "tools/commands.hpp"

namespace fb::tools {
namespace {

struct ImportOptions {
  std::vector<std::string> nccl_files;
  std::string op;
  std::vector<std::string> mlperf_logs;
  bool no_scaling = false;
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
  // The features line names this build's libraries (its NCCL among them); nothing imported ran with them.
  report.tool.erase("features");
  report.run.erase("seed");  // nothing here was drawn at random
  const int rc = session.finish(report);
  // Import prints no table: a run it imports as failed says why here (finish says it under --quiet).
  if (!session.options().quiet) session.say_failed_results(report);
  if (session.options().output.empty() && session.is_root())
    std::cout << reports::to_json(report).dump(2) << "\n";
  return rc;
}

std::vector<std::string> import_inputs(const ImportOptions& opt) {
  auto all = opt.nccl_files;
  all.insert(all.end(), opt.mlperf_logs.begin(), opt.mlperf_logs.end());
  return all;
}

// One file named twice would be counted as two runs (mlperf) or its rows as repeats (nccl-tests): a median
// and spread made of copies.
void refuse_repeated_inputs(const std::vector<std::string>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (std::size_t j = i + 1; j < inputs.size(); ++j) {
      std::error_code ec;
      if (inputs[i] == inputs[j] || std::filesystem::equivalent(inputs[i], inputs[j], ec))
        throw usage_error(fmt::format(
            "{} is given twice{}: each file is one run, and a copy would count as another; give it once",
            inputs[i], inputs[i] == inputs[j] ? "" : fmt::format(" (also as {})", inputs[j])));
    }
}

int run_import(const ImportOptions& opt, Session& session) {
  refuse_repeated_inputs(import_inputs(opt));
  if (session.is_root()) session.check_output_writable(import_inputs(opt));
  if (opt.nccl->parsed()) {
    std::vector<reports::NcclTestsFile> files;
    for (const auto& path : opt.nccl_files) files.push_back({path, read_text_file(path)});
    reports::NcclTestsImportOptions options;
    if (!opt.op.empty()) options.op = opt.op;
    auto imported = reports::import_nccl_tests(files, options);
    // A table without its closing lines may be a run that died with its error on stderr, or a file cut
    // short: the rows are kept, and the doubt is said.
    if (session.is_root())
      for (const auto& file : imported.summary["import"]) {
        if (file.contains("newer_format"))
          log::warn("{}: {} is {}", file["source"].get<std::string>(), file["format"].get<std::string>(),
                    file["newer_format"].get<std::string>());
        for (const auto& op : file["ops"]) {
          if (op.contains("shape_says"))
            log::warn(
                "{}: --op {}, but the table's shape (size/count, redop, root, busbw/algbw) is {}'s; "
                "imported as {}, as asked",
                op["at"].get<std::string>(), opt.op, op["shape_says"].get<std::string>(),
                op["op"].get<std::string>());
          if (op.contains("unfinished"))
            log::warn(
                "{}: the {} table has no closing average (its \"Avg bus bandwidth\" line, or the -J file's "
                "average_bus_bandwidth): {} did not finish it, or the file is cut; its rows are "
                "imported, the sizes after them are missing",
                op["unfinished"].get<std::string>(), op.value("name", op["op"].get<std::string>()),
                file["format"] == "factorybench collective console" ? "factorybench collective"
                                                                    : "nccl-tests");
        }
      }
    return finish_import(session, std::move(imported));
  }
  std::vector<reports::MlperfLog> logs;
  // Each folder's scaling.json, read once for all the logs in it.
  std::map<std::filesystem::path, std::optional<reports::MlperfScaling>> scaling_of_folder;
  for (const auto& path : opt.mlperf_logs) {
    reports::MlperfLog log{path, read_text_file(path), std::nullopt};
    // The results folder's scaling.json (a submission's benchmark folder holds its result_*.txt logs and,
    // when the review committee scaled the score, this file), as the summarizer looks for it.
    const auto parent = std::filesystem::path(path).parent_path();
    const auto folder = parent.empty() ? std::filesystem::path(".") : parent;
    if (!opt.no_scaling) {
      auto [it, first] = scaling_of_folder.try_emplace(folder);
      const auto scaling = folder / "scaling.json";
      std::error_code ec;
      if (first && std::filesystem::is_regular_file(scaling, ec))
        it->second = reports::parse_mlperf_scaling(scaling.string(), read_text_file(scaling.string()));
      log.scaling = it->second;
    }
    logs.push_back(std::move(log));
  }
  auto imported = reports::import_mlperf(logs);
  if (session.is_root())
    for (const auto& r : imported.results)
      if (r.params.contains("scaling_factor"))
        log::info(
            "{}: times the scaling factor {} of {} (as MLCommons' result summarizer scales it; "
            "--no-scaling leaves it out)",
            r.name, r.params["scaling_factor"].get<double>(), r.params["scaling_file"].get<std::string>());
  // The score of fewer runs than a submission holds is the summarizer's arithmetic, not an MLPerf result.
  if (session.is_root())
    for (const auto& r : imported.results)
      if (r.name.ends_with("/score") && r.params.value("runs_required", nlohmann::json()).is_number() &&
          r.params["runs"].get<std::size_t>() < r.params["runs_required"].get<std::size_t>())
        log::warn("{}: {} runs; an MLPerf submission of {} holds {} (mlcommons/logging benchmark_meta.py)",
                  r.name, r.params["runs"].get<std::size_t>(), r.name.substr(0, r.name.size() - 6),
                  r.params["runs_required"].get<std::size_t>());
  return finish_import(session, std::move(imported));
}

}  // namespace

Command add_import_command(CLI::App& app) {
  auto opt = std::make_shared<ImportOptions>();
  auto* sub =
      app.add_subcommand("import", "Turn nccl-tests or MLPerf Training output into a factorybench report");
  sub->require_subcommand(1);
  opt->nccl = sub->add_subcommand("nccl-tests",
                                  "nccl-tests output: its text table or its -J JSON file (or the table "
                                  "`factorybench collective` prints)");
  // Missing files and directories are named by the reader, in the words every other input uses.
  opt->nccl->add_option("files", opt->nccl_files, "nccl-tests output files (several: one report)")
      ->required();
  opt->nccl->add_option(
      "--op", opt->op,
      "The collective (allreduce, allgather, reducescatter, alltoall, broadcast, reduce, "
      "sendrecv, ...; nccl-tests names like all_reduce_perf_mpi work too). Default: from the "
      "output (\"Collective test starting\", a program name, or the table's shape)");
  opt->mlperf = sub->add_subcommand("mlperf", "MLPerf Training logs (:::MLLOG lines), one log per run");
  opt->mlperf->add_option("logs", opt->mlperf_logs, "MLPerf log files, one per run")->required();
  opt->mlperf->add_flag("--no-scaling", opt->no_scaling,
                        "Leave out the scaling.json factor of the logs' folder (the score as measured)");
  const std::string output =
      "Output: the JSON report on stdout, or with -o/--output FILE written to FILE (atomically).\n";
  const std::string nccl =
      "Several nccl-tests files make one report: a size measured more than once (repetitions, or files of\n"
      "the same test) is one result with the median and spread of its repeats. factorybench collective's\n"
      "console (its stdout) is read too: results named and judged as the report its run wrote (-o).\n";
  const std::string mlperf =
      "Each log is one run: its time to train (run_start to run_stop) and, from enough successful runs,\n"
      "the benchmark's score (the olympic mean, as MLPerf's result summarizer computes it). A scaling.json\n"
      "beside the logs (a submission's benchmark folder, {\"scaling_factor\": X}) scales the score by X, as\n"
      "the summarizer does; --no-scaling leaves it out.\n";
  const auto exits = [](const char* failed, const char* input) {
    return fmt::format(
        "Exit status:\n"
        "  0  imported, every result ok\n"
        "  1  imported, a result failed: {}\n"
        "  2  usage or input error, one line naming FILE:LINE or the JSON path: {}\n"
        "  3  writing the report failed (-o FILE or stdout; an -o directory that is missing or not writable "
        "is 2)\n",
        failed, input);
  };
  const char* nccl_failed =
      "nccl-tests counted wrong elements (or, in older versions, a max error\n"
      "     above its bound for the type), or stopped with an error; factorybench's console counted\n"
      "     wrong elements, failed --min-busbw, or ended in a hang or a signal";
  const char* nccl_input =
      "no result table, a\n"
      "     malformed row, a time that is not a finite number, a row whose figures do not follow from\n"
      "     one another as nccl-tests computes them (an edited busbw, a size that is not its count), an\n"
      "     average that is not its table's mean busbw (rows dropped), a collective that cannot be told\n"
      "     from the output (give --op), the same size on different rank counts; in factorybench's\n"
      "     console, a table without its section line or a footer that is not its tables' sum and mean";
  const char* mlperf_failed = "a run did not succeed, or too many runs failed for a score";
  const char* mlperf_input =
      "no :::MLLOG line, a\n"
      "     malformed one, a time that is not a finite number, run_stop not after run_start, a\n"
      "     malformed scaling.json, runs of one benchmark from folders scaled differently";
  opt->nccl->footer(output + nccl + exits(nccl_failed, nccl_input));
  opt->mlperf->footer(output + mlperf + exits(mlperf_failed, mlperf_input));
  sub->footer(output +
              exits("nccl-tests counted wrong elements or stopped, or an MLPerf run did not succeed",
                    "a malformed\n     input (each format's help lists the cases)") +
              "See `import nccl-tests --help` and `import mlperf --help`.\n");
  return {sub, [opt](Session& s) { return run_import(*opt, s); }};
}

}  // namespace fb::tools
