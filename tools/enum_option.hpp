#pragma once
// A CLI option whose value is an enum, parsed once with the enum's name table (core/enum_names.hpp): the help
// lists the names, the default is printed by name, and a bad value is one line naming the option and the
// accepted names ("invalid --launcher 'x': expected mpirun, srun or none"), exit 2.
#include <cstddef>
#include <string>

#include <CLI/CLI.hpp>

#include "core/enum_names.hpp"

namespace fb::tools {

// `list_names` false: the help text lists the names the command takes itself (a subset of the table's, the
// others refused with their own reason).
template <class E, std::size_t N>
CLI::Option* add_enum_option(CLI::App& app, const std::string& name, E& value, const EnumNames<E, N>& names,
                             const std::string& help, bool list_names = true) {
  auto* option = app.add_option_function<std::string>(
      name,
      [&value, &names, name](const std::string& text) {
        const auto v = enum_value(names, text);
        // CLI11 reports a ValidationError from a callback as a usage error with exactly this message.
        if (!v) throw CLI::ValidationError(invalid_enum_message(names, text, name));
        value = *v;
      },
      list_names ? help + " (" + enum_choices(names) + ")" : help);
  option->default_str(std::string(enum_name(names, value)));
  option->type_name("NAME");
  return option;
}

}  // namespace fb::tools
