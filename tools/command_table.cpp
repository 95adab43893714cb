// The list of subcommands and the global options, shared by main and by `suite` (which parses each step
// with the same table). To add a subcommand: declare add_X_command in commands.hpp and list it here.
#include "tools/commands.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace fb::tools {

namespace {

// CLI11 2.1 reads a signed integer beyond 2^63-1 as 2^63-1 (strtoll saturates), so an absurd count reached
// our checks as 9223372036854775807 and the message named a number nobody typed. Every value that is a plain
// integer must fit in a signed 64-bit integer as typed; --seed has its own check (it allows up to 2^64-1).
std::string integer_out_of_range(const std::string& text) {
  std::string_view digits = text;
  if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits.remove_prefix(1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return {};
  std::int64_t v = 0;
  const char* first = text.data() + (text.front() == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size()) return {};
  return "'" + text + "' is out of range (at most 9223372036854775807 in magnitude)";
}

void refuse_integers_out_of_range(CLI::App& app) {
  for (CLI::Option* opt : app.get_options({})) {
    if (opt->get_type_size_min() == 0 || opt->get_name() == "--seed") continue;  // flags; seed checks itself
    if (opt->get_type_name() == "FLOAT") continue;  // 1e20 days is a number, not an overflowed integer
    opt->check(CLI::Validator(integer_out_of_range, "", "integer range"));
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_integers_out_of_range(*sub);
}

// The option named `name` ("--gpus") in `app` or its subcommands; nullptr when none.
const CLI::Option* find_option(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* opt : app.get_options())
    if (opt->check_name(name)) return opt;
  for (const CLI::App* sub : app.get_subcommands({}))
    if (const auto* found = find_option(*sub, name)) return found;
  return nullptr;
}

// The positional argument named `name` ("file") of `app` or its subcommands, with the command that takes it.
std::pair<const CLI::App*, const CLI::Option*> find_positional(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* opt : app.get_options())
    if (opt->get_positional() && opt->get_name() == name) return {&app, opt};
  for (const CLI::App* sub : app.get_subcommands({}))
    if (const auto found = find_positional(*sub, name); found.second) return found;
  return {nullptr, nullptr};
}

}  // namespace

std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app) {
  // CLI11's "Could not convert: --gpus = 1.5", in the words of every other bad value.
  const std::string text = e.what();
  // CLI11's "--check excludes --no-check" and "--steps: At Most 1 required but received 2", plainly.
  if (const auto at = text.find(" excludes "); at != std::string::npos && text.starts_with("-"))
    return fmt::format("{} and {} are exclusive: give one", text.substr(0, at), text.substr(at + 10));
  constexpr std::string_view kTwice = ": At Most 1 required but received ";
  if (const auto at = text.find(kTwice); at != std::string::npos)
    return fmt::format("{} given {} times: give it once", text.substr(0, at),
                       text.substr(at + kTwice.size()));
  // CLI11 lists the extra words last first (it parses a reversed vector): in the order they were typed.
  for (const std::string_view lead :
       {"The following argument was not expected: ", "The following arguments were not expected: "})
    if (text.starts_with(lead)) {
      std::vector<std::string> words;
      for (std::size_t at = lead.size(); at < text.size();) {
        const auto space = std::min(text.find(' ', at), text.size());
        words.push_back(text.substr(at, space - at));
        at = space + 1;
      }
      return fmt::format("{}{}", lead, fmt::join(words.rbegin(), words.rend(), " "));
    }
  // CLI11's "file is required" for a missing positional: which command wants what, and where to read more.
  constexpr std::string_view kRequired = " is required";
  if (text.ends_with(kRequired) && !text.starts_with("-")) {
    const auto [command, opt] = find_positional(app, text.substr(0, text.size() - kRequired.size()));
    if (command && opt) {
      std::string path = command->get_name();
      for (const CLI::App* up = command->get_parent(); up && up->get_parent(); up = up->get_parent())
        path = up->get_name() + " " + path;
      return fmt::format("{}: missing {}: {}; see factorybench {} --help", path, opt->get_name(),
                         opt->get_description(), path);
    }
  }
  // A hidden option's validation error has no name in front (CLI11 names hidden options ""): its message,
  // which names the option itself, without the stray ": ".
  if (text.starts_with(": ")) return text.substr(2);
  constexpr std::string_view kPrefix = "Could not convert: ";
  const auto eq = text.find(" = ");
  if (!text.starts_with(kPrefix) || eq == std::string::npos) return text;
  const std::string name = text.substr(kPrefix.size(), eq - kPrefix.size());
  const std::string value = text.substr(eq + 3);
  const CLI::Option* opt = find_option(app, name);
  const std::string type = opt ? opt->get_type_name() : "";
  const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  if ((type == "INT" || type == "UINT") && digits)
    return fmt::format("invalid {} {}: out of range for this option", name, value);
  if (type == "INT" || type == "UINT")
    return fmt::format("invalid {} '{}': expected a whole number", name, value);
  if (type == "FLOAT") return fmt::format("invalid {} '{}': expected a number", name, value);
  return fmt::format("invalid {} '{}'", name, value);
}

void refuse_idle_global_options(const CLI::App& app) {
  // Commands that measure nothing (they read files, or compute from models): no device, no random data,
  // no telemetry. info reads the device (its backend and peak) but draws nothing at random.
  struct Idle {
    std::string_view command, why;
    std::array<std::string_view, 4> options;
  };
  static constexpr std::array kIdle{
      Idle{"report", "it renders reports", {"--backend", "--seed", "--telemetry", "--telemetry-interval"}},
      Idle{"compare", "it compares reports", {"--backend", "--seed", "--telemetry", "--telemetry-interval"}},
      Idle{"import",
           "it reads other tools' output",
           {"--backend", "--seed", "--telemetry", "--telemetry-interval"}},
      Idle{"simulate",
           "it computes from failure models, on no device",
           {"--backend", "--telemetry", "--telemetry-interval", ""}},
      Idle{"info", "it draws nothing at random", {"--seed", "", "", ""}},
  };
  for (const CLI::App* sub : app.get_subcommands())
    for (const auto& idle : kIdle) {
      if (sub->get_name() != idle.command) continue;
      for (const auto name : idle.options)
        if (!name.empty() && app.count(std::string(name)) > 0)
          throw usage_error(fmt::format("{} does nothing for {}: {}", name, idle.command, idle.why));
    }
}

void refuse_empty_values(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->count() == 0 || opt->get_type_size_min() == 0) continue;  // not given, or a flag
    const std::string name = opt->get_name();
    if (name == "--launcher-args" || name == "--preflight-args") continue;  // no words is a value
    for (const auto& value : opt->results()) {
      if (value.empty()) throw usage_error(fmt::format("invalid {} '': expected a value", name));
      // CLI11 reads "-1" into an unsigned option as 2^64-1 ("invalid -f/--stepfactor 18446744073709551615").
      if (opt->get_type_name() == "UINT" && value.find_first_not_of(" \t") != std::string::npos &&
          value[value.find_first_not_of(" \t")] == '-') {
        std::string names = opt->get_name(false, true);  // every name: "-f,--stepfactor"
        std::replace(names.begin(), names.end(), ',', '/');
        throw usage_error(fmt::format("invalid {} {}: must not be negative", names, value));
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands()) refuse_empty_values(*sub);
}

void add_global_options(CLI::App& app, GlobalOptions& global) {
  app.add_option("--backend", global.backend,
                 "Device backend: auto (cuda when a GPU is visible), cuda or host")
      ->check(CLI::IsMember({"auto", "cuda", "host"}));
  app.add_option("-o,--output", global.output, "Write the JSON report to this file (rank 0, atomically)");
  // CLI11 2.1 would read "-1" into the unsigned seed as 2^64-1; a seed is a non-negative integer.
  app.add_option("--seed", global.seed, "Seed for all random data and random fault plans")
      ->check(CLI::Validator(
          [](const std::string& text) {
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
              return "'" + text + "' is not a non-negative integer";
            // CLI11 would clamp 2^64 and beyond to 2^64-1: different seeds, the same run.
            std::uint64_t v = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            return ec == std::errc() && end == text.data() + text.size()
                       ? std::string()
                       : "'" + text + "' is beyond the largest seed, 2^64-1";
          },
          "", "seed"));  // no description: the help shows the type once ("--seed UINT")
  auto* quiet = app.add_flag(
      "-q,--quiet", global.quiet,
      "Print errors only: no result tables, progress or log lines (--log-level error drops the log lines "
      "and keeps the tables)");
  // Exclusive: -q would silence the level asked for without a word.
  app.add_option("--log-level", global.log_level, "error, warn, info or debug (debug: every rank logs)")
      ->check(CLI::IsMember({"error", "warn", "info", "debug"}))
      ->excludes(quiet);
  app.add_option(
         "--telemetry", global.telemetry,
         "GPU (NVML) and host telemetry during the run: off, summary (per result) or full (plus the time "
         "series); see docs/health.md")
      ->check(CLI::IsMember({"off", "summary", "full"}));
  app.add_option("--telemetry-interval", global.telemetry_interval,
                 "Telemetry sampling period (default 100ms; not with --telemetry off)");
}

std::vector<Command> add_all_commands(CLI::App& app) {
  std::vector<Command> commands;
  commands.push_back(add_info_command(app));
  commands.push_back(add_simulate_command(app));
  commands.push_back(add_compare_command(app));
  commands.push_back(add_report_command(app));
  commands.push_back(add_import_command(app));
  commands.push_back(add_collective_command(app));
  commands.push_back(add_gemm_command(app));
  commands.push_back(add_attention_command(app));
  commands.push_back(add_suite_command(app));
  commands.push_back(add_train_command(app));
  commands.push_back(add_health_command(app));
  commands.push_back(add_resilience_command(app));
  commands.push_back(add_locate_command(app));
  commands.push_back(add_burnin_command(app));
  refuse_integers_out_of_range(app);
  return commands;
}

bool is_command(const std::vector<Command>& commands, std::string_view name) {
  for (const auto& c : commands)
    if (c.app->get_name() == name) return true;
  return false;
}

std::string command_names(const std::vector<Command>& commands) {
  std::string names;
  for (const auto& c : commands) names += (names.empty() ? "" : ", ") + c.app->get_name();
  return names;
}

}  // namespace fb::tools
