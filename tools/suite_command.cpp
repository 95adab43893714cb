// factorybench suite FILE: several benchmarks in one MPI job, one combined report. Each step is parsed
// with the same command table as the command line, so a suite step is exactly what a user would type.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "core/logging.hpp"
#include "reports/headline.hpp"
#include "tools/commands.hpp"

namespace fb::tools {
namespace {

struct SuiteOptions {
  std::string file;
  bool fail_fast = false;
  bool list = false;
};

struct SuiteStep {
  std::string name;
  std::vector<std::string> args;  // subcommand first
};

struct Suite {
  std::string name, description;
  std::vector<SuiteStep> steps;
};

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t') {
      if (!word.empty()) out.push_back(std::move(word)), word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

Suite load_suite(const std::string& name_or_path) {
  const auto path = resolve_config("suites", name_or_path);
  const std::string src = path.string();
  const nlohmann::json j = read_json_file(path);
  const auto bad = [&](const std::string& where, const std::string& what) {
    return input_error(src + ": " + where + ": " + what);
  };
  if (!j.is_object()) throw bad("$", "expected an object with \"steps\"");
  Suite suite;
  suite.name = j.value("name", path.stem().string());
  suite.description = j.value("description", "");
  if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty())
    throw bad("$.steps", "expected a non-empty array of steps");
  for (std::size_t i = 0; i < j["steps"].size(); ++i) {
    const auto& s = j["steps"][i];
    const std::string where = fmt::format("$.steps[{}]", i);
    if (!s.is_object()) throw bad(where, "expected an object with \"command\"");
    for (const auto& [key, value] : s.items())
      if (key != "name" && key != "command" && key != "args") throw bad(where + "." + key, "unknown field");
    if (!s.contains("command") || !s["command"].is_string())
      throw bad(where + ".command", "expected a string");
    SuiteStep step;
    step.args.push_back(s["command"].get<std::string>());
    if (s.contains("args")) {
      const auto& a = s["args"];
      if (a.is_string()) {
        for (auto& w : split_words(a.get<std::string>())) step.args.push_back(std::move(w));
      } else if (a.is_array()) {
        for (std::size_t k = 0; k < a.size(); ++k) {
          if (!a[k].is_string()) throw bad(fmt::format("{}.args[{}]", where, k), "expected a string");
          step.args.push_back(a[k].get<std::string>());
        }
      } else {
        throw bad(where + ".args", "expected a string or an array of strings");
      }
    }
    if (step.args.front() == "suite") throw bad(where + ".command", "a suite cannot run another suite");
    step.name = s.value("name", fmt::format("{}-{}", i + 1, step.args.front()));
    suite.steps.push_back(std::move(step));
  }
  return suite;
}

// Parses one step with a fresh command table. Global options belong on the suite's command line.
std::pair<std::unique_ptr<CLI::App>, CommandAction> parse_step(const SuiteStep& step) {
  auto app = std::make_unique<CLI::App>("suite step", "factorybench");
  app->require_subcommand(1);
  app->fallthrough();
  GlobalOptions step_global;
  add_global_options(*app, step_global);
  const auto commands = add_all_commands(*app);
  std::vector<std::string> reversed(step.args.rbegin(), step.args.rend());  // CLI11 parses a reversed vector
  try {
    app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw usage_error(fmt::format("suite step '{}': {}", step.name, e.what()));
  }
  const GlobalOptions defaults;
  if (step_global.backend != defaults.backend || !step_global.output.empty() ||
      step_global.seed != defaults.seed)
    throw usage_error(fmt::format(
        "suite step '{}': --backend, --output and --seed belong on the suite command line", step.name));
  for (const auto& c : commands)
    if (c.app->parsed()) return {std::move(app), c.action};
  throw usage_error(fmt::format("suite step '{}': no subcommand", step.name));
}

int run_suite(const SuiteOptions& opt, Session& session) {
  const Suite suite = load_suite(opt.file);
  // Parse every step before running any: a typo in step 5 should not cost steps 1-4.
  std::vector<std::pair<std::unique_ptr<CLI::App>, CommandAction>> parsed;
  for (const auto& step : suite.steps) parsed.push_back(parse_step(step));
  if (opt.list) {
    if (session.is_root())
      for (const auto& step : suite.steps) {
        std::string line = "factorybench";
        for (const auto& a : step.args) line += " " + a;
        std::cout << step.name << ": " << line << "\n";
      }
    return 0;
  }

  auto& mpi = session.mpi();
  auto report = session.begin_report(false);
  report.summary["suite"] = {{"name", suite.name}, {"description", suite.description}};
  int rc = 0;
  std::size_t index = 0;
  nlohmann::json step_log = nlohmann::json::array();
  for (const auto& step : suite.steps) {
    ++index;
    log::info("[{}/{}] {}: factorybench {}", index, suite.steps.size(), step.name, fmt::join(step.args, " "));
    const auto t0 = std::chrono::steady_clock::now();
    int step_rc = 0;
    std::string error;
    session.collect_into(&report, step.name);
    try {
      step_rc = parsed[index - 1].second(session);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::runtime) throw;  // may be one rank's alone: main aborts the job
      step_rc = exit_code_for(e.kind());
      error = e.what();
    }
    session.collect_into(nullptr, {});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool ok = step_rc == 0;
    if (!error.empty()) {
      reports::Result failed;
      failed.benchmark = "suite";
      failed.name = step.name;
      failed.params = {{"args", step.args}};
      failed.extra["suite_step"] = step.name;
      failed.fail(error);
      report.results.push_back(std::move(failed));
    }
    step_log.push_back(
        {{"name", step.name}, {"args", step.args}, {"exit_code", step_rc}, {"seconds", seconds}});
    log::info("[{}/{}] {}: {} ({:.1f} s){}", index, suite.steps.size(), step.name, ok ? "ok" : "FAILED",
              seconds, error.empty() ? "" : ": " + error);
    if (!ok) rc = 1;
    if (!ok && opt.fail_fast) {
      log::info("--fail-fast: stopping after the failed step");
      break;
    }
  }
  report.summary["suite"]["steps"] = step_log;
  mpi.barrier();
  const int finish_rc = session.finish(report);
  if (session.is_root())  // one line per step: its headline figure and verdict
    std::cout << fmt::format("suite {}: {} step{}\n", suite.name, suite.steps.size(),
                             suite.steps.size() == 1 ? "" : "s")
              << reports::render_headlines(reports::headlines(report));
  return rc != 0 ? rc : finish_rc;
}

}  // namespace

Command add_suite_command(CLI::App& app) {
  auto opt = std::make_shared<SuiteOptions>();
  auto* sub = app.add_subcommand(
      "suite",
      "Run several benchmarks in one MPI job and write one combined report.\n"
      "FILE is a JSON suite ({\"steps\": [{\"name\", \"command\", \"args\"}]}) or the name of one in\n"
      "configs/suites (quickstart, node-validation-hopper, node-validation-blackwell).");
  sub->add_option("file", opt->file, "Suite file or preset name")->required();
  sub->add_flag("--fail-fast", opt->fail_fast,
                "Stop at the first failing step (default: record it and go on)");
  sub->add_flag("--list", opt->list, "Print the steps and exit");
  return {sub, [opt](Session& s) { return run_suite(*opt, s); }};
}

}  // namespace fb::tools
