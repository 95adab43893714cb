#include "tools/suite_file.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"
#include "reports/text_format.hpp"
#include "tools/shell_words.hpp"

namespace fb::tools {

Suite parse_suite(const nlohmann::json& j, const std::string& src, const std::string& default_name) {
  const auto bad = [&](const std::string& where, const std::string& what) {
    return input_error(src + ": " + where + ": " + what);
  };
  if (!j.is_object()) throw bad("$", "expected an object with \"steps\"");
  Suite suite;
  // A misspelt field ("descripton", "step") is an error, as in a step: it would be dropped without a word.
  for (const auto& [key, value] : j.items())
    if (key != "name" && key != "description" && key != "steps")
      throw bad("$." + key, "unknown field (known: name, description, steps)");
  for (const char* key : {"name", "description"})
    if (j.contains(key) && !j[key].is_string()) throw bad(std::string("$.") + key, "expected a string");
  suite.name = j.value("name", default_name);
  // The name heads the console and the report's summary: one line (shown escaped in the error).
  if (suite.name.empty() || reports::has_control_character(suite.name))
    throw bad("$.name", fmt::format("{} must be a non-empty line (no control characters)",
                                    nlohmann::json(suite.name).dump()));
  suite.description = j.value("description", "");
  if (!j.contains("steps") || !j["steps"].is_array() || j["steps"].empty())
    throw bad("$.steps", "expected a non-empty array of steps");
  // Each step holds its command's parsed options (about 250 KB): 20,000 steps took 5 GB before one ran.
  if (j["steps"].size() > kMaxSuiteSteps)
    throw bad("$.steps", fmt::format("{} steps; a suite has at most {} (split it into several suites)",
                                     j["steps"].size(), kMaxSuiteSteps));
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
    // One word: a command line there ("health --expect-gpu H100") was reported against the default name.
    if (const auto& c = step.args.front();
        c.empty() || c.find_first_of(" \t") != std::string::npos || reports::has_control_character(c))
      throw bad(where + ".command", fmt::format("{} must be one command name; its options go in \"args\"",
                                                nlohmann::json(c).dump()));
    if (s.contains("args")) {
      const auto& a = s["args"];
      if (a.is_string()) {
        // As a shell splits the line a user would type: quotes group words (--launcher-args "-x A=1").
        std::vector<std::string> words;
        if (a.get<std::string>().find('\0') != std::string::npos)
          throw bad(where + ".args", "a NUL byte: no command-line word can hold one");
        try {
          words = split_shell_words(a.get<std::string>(), "args");
        } catch (const Error& e) {
          throw bad(where + ".args", e.what());
        }
        for (auto& w : words) step.args.push_back(std::move(w));
      } else if (a.is_array()) {
        for (std::size_t k = 0; k < a.size(); ++k) {
          if (!a[k].is_string()) throw bad(fmt::format("{}.args[{}]", where, k), "expected a string");
          if (a[k].get<std::string>().find('\0') != std::string::npos)
            throw bad(fmt::format("{}.args[{}]", where, k), "a NUL byte: no command-line word can hold one");
          step.args.push_back(a[k].get<std::string>());
        }
      } else {
        throw bad(where + ".args", "expected a string or an array of strings");
      }
    }
    if (step.args.front() == "suite") throw bad(where + ".command", "a suite cannot run another suite");
    if (s.contains("name") && !s["name"].is_string()) throw bad(where + ".name", "expected a string");
    step.name = s.value("name", fmt::format("{}-{}", i + 1, step.args.front()));
    // A step's name keys its part of the combined report (summary.steps.NAME): it must be one, and unique.
    const bool word = !step.name.empty() && step.name.find_first_of("/ ") == std::string::npos &&
                      !reports::has_control_character(step.name);
    if (!word)  // named escaped: a newline in it must not break the one-line error
      throw bad(where + ".name",
                fmt::format("{} must be a non-empty word (no spaces, control characters or '/')",
                            nlohmann::json(step.name).dump()));
    for (const auto& other : suite.steps)
      if (other.name == step.name)
        throw bad(where + ".name", fmt::format("'{}' names an earlier step too", step.name));
    suite.steps.push_back(std::move(step));
  }
  return suite;
}

Suite load_suite(const std::string& name_or_path) {
  const auto path = resolve_config("suites", name_or_path);
  return parse_suite(read_json_file(path), path.string(), path.stem().string());
}

namespace {

// CLI11's parse of `args` (a command and its options) into `app`, which holds the global options and every
// command; its errors as usage Errors "WHO: ..." (`what`: what the words are, for a help flag among them).
void parse_command_words(CLI::App& app, const std::vector<std::string>& args, const std::string& who,
                         const std::string& what) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    throw usage_error(
        fmt::format("{}: --help is not {} (run factorybench {} --help)", who, what, args.front()));
  } catch (const CLI::CallForAllHelp&) {
    throw usage_error(fmt::format("{}: --help-all is not {}", who, what));
  } catch (const CLI::CallForVersion&) {
    throw usage_error(fmt::format("{}: --version is not {}", who, what));
  } catch (const CLI::ParseError& e) {
    throw usage_error(fmt::format("{}: {}", who, parse_error_message(e, app)));
  }
  try {
    refuse_empty_values(app);
  } catch (const Error& e) {
    throw usage_error(fmt::format("{}: {}", who, e.what()));
  }
}

}  // namespace

void check_command_words(const std::vector<std::string>& args, const std::string& who) {
  CLI::App app("command words", "factorybench");
  app.require_subcommand(1);
  app.fallthrough();
  GlobalOptions global;
  add_global_options(app, global);
  const auto commands = add_all_commands(app);
  parse_command_words(app, args, who, "an option here");
}

ParsedStep parse_suite_step(const SuiteStep& step) {
  auto app = std::make_unique<CLI::App>("suite step", "factorybench");
  app->require_subcommand(1);
  app->fallthrough();
  GlobalOptions step_global;
  add_global_options(*app, step_global);
  const auto commands = add_all_commands(*app);
  if (!is_command(commands, step.args.front())) {  // as the command line says it (tools/main.cpp)
    std::string names;                             // what a step may run: every command but suite itself
    for (const auto& c : commands)
      if (c.app->get_name() != "suite") names += (names.empty() ? "" : ", ") + c.app->get_name();
    throw usage_error(fmt::format("suite step '{}': unknown command '{}' (expected one of {})", step.name,
                                  step.args.front(), names));
  }
  parse_command_words(*app, step.args, fmt::format("suite step '{}'", step.name), "a step");
  // Global options are the suite's: one backend, one report, one seed, one telemetry sampler and one log
  // for every step. Given in a step they would be ignored (a step's --telemetry full, or even a bad
  // --telemetry-interval, passed silently), so any of them is refused, named.
  for (const CLI::Option* opt : app->get_options())
    if (opt->count() > 0)
      throw usage_error(
          fmt::format("suite step '{}': {} belongs on the suite command line (it applies to every "
                      "step)",
                      step.name, opt->get_name()));
  for (const auto& c : commands)
    if (c.app->parsed()) return {std::move(app), c.action, c.preflight};
  throw usage_error(fmt::format("suite step '{}': no subcommand", step.name));
}

}  // namespace fb::tools
