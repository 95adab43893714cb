#pragma once
// A suite file: several factorybench command lines run in one MPI job (factorybench suite). Parsed apart from
// the command so the fuzz targets (tests/fuzz) can reach it without MPI.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "tools/commands.hpp"

namespace fb::tools {

struct SuiteStep {
  std::string name;
  std::vector<std::string> args;  // subcommand first
};

struct Suite {
  std::string name, description;
  std::vector<SuiteStep> steps;
};

// The most steps a suite may have: each one's parsed command is held until the suite ends.
inline constexpr std::size_t kMaxSuiteSteps = 1000;

// The suite in `j`; input Errors name `source` and the JSON path. `default_name` when it has no "name".
Suite parse_suite(const nlohmann::json& j, const std::string& source, const std::string& default_name);
// A preset name (configs/suites) or a file.
Suite load_suite(const std::string& name_or_path);
// One step parsed with a fresh command table: what runs, and whether it can validate alone (preflight).
struct ParsedStep {
  std::unique_ptr<CLI::App> app;
  CommandAction action;
  bool preflight = false;
};
// Parses one step (global options belong on the suite's command line); usage Error naming the step
// otherwise.
ParsedStep parse_suite_step(const SuiteStep& step);
// Parses `args` (a command and its options, global ones among them) as the command line would, in a scratch
// command table, and runs nothing: a usage Error "WHO: ..." for an unknown option or a value of the wrong
// form. For option words another process gets later (resilience --preflight-args: health's, checked before
// any launch instead of failing the job at its first pre-flight).
void check_command_words(const std::vector<std::string>& args, const std::string& who);

}  // namespace fb::tools
