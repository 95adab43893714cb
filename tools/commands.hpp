#pragma once
// One function per subcommand, each in its own <name>_command.cpp: it declares the subcommand's options on
// `app` and returns it with what runs when it is chosen. main.cpp lists them.
#include <CLI/CLI.hpp>

#include "tools/session.hpp"

namespace fb::tools {

struct Command {
  CLI::App* app;         // the subcommand
  CommandAction action;  // runs when it was chosen
};

Command add_info_command(CLI::App& app);

}  // namespace fb::tools
