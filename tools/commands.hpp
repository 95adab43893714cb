#pragma once
// One function per subcommand, each in its own <name>_command.cpp: it declares the subcommand's options on
// `app` and returns it with what runs when it is chosen. main.cpp lists them.
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/session.hpp"

namespace fb::tools {

struct Command {
  CLI::App* app;           // the subcommand
  CommandAction action;    // runs when it was chosen
  bool preflight = false;  // the action honours Session::checking_only() (a suite validates it first)
};

// The global options (--backend, --output, --seed, --quiet, --log-level) and every subcommand, in
// tools/command_table.cpp.
void add_global_options(CLI::App& app, GlobalOptions& global);
std::vector<Command> add_all_commands(CLI::App& app);
// For the message that names an unknown word as what the user meant (CLI11 alone calls it "extra
// arguments" or "a subcommand is required"): whether `name` is a command, and all of them, comma-separated.
bool is_command(const std::vector<Command>& commands, std::string_view name);
std::string command_names(const std::vector<Command>& commands);
// After a parse: an option given an empty value (--dtype '', -o "$UNSET") is a usage error naming it, not a
// silent request for the default. Flags take no value; --launcher-args and --preflight-args may be empty.
void refuse_empty_values(const CLI::App& app);
// After a parse on the command line (not a suite's, whose global options set every step): a global option
// given to a command it does nothing for (--seed to report, --backend to compare) is a usage error naming
// both, as the commands refuse their own options that would not act.
void refuse_idle_global_options(const CLI::App& app);
// A CLI11 parse error in the project's words (its conversion errors name neither the problem nor the
// expected form); other errors as CLI11 wrote them.
std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app);

Command add_info_command(CLI::App& app);
Command add_simulate_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_import_command(CLI::App& app);
Command add_collective_command(CLI::App& app);
Command add_gemm_command(CLI::App& app);
Command add_attention_command(CLI::App& app);
Command add_suite_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_health_command(CLI::App& app);
Command add_resilience_command(CLI::App& app);
Command add_locate_command(CLI::App& app);
Command add_burnin_command(CLI::App& app);

}  // namespace fb::tools
