#pragma once
// Count options whose unset value, 0, stands for "the default" (--seq: the model's, --layers: all of them,
// --dp: world / (tp · pp)). A value below 1 typed on the command line is refused rather than silently read
// as that default: "invalid --seq 0: must be at least 1 (leave the option out for the default)", exit 2.
#include <string>

#include <CLI/CLI.hpp>

namespace fb::tools {

template <class T>
CLI::Option* add_count_option(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  auto* option = app.add_option_function<T>(
      name,
      [&value, name](const T& v) {
        // CLI11 reports a ValidationError from a callback as a usage error with exactly this message.
        if (v < 1)
          throw CLI::ValidationError("invalid " + name + " " + std::to_string(v) +
                                     ": must be at least 1 (leave the option out for the default)");
        value = v;
      },
      help);
  option->type_name("N");
  return option;
}

}  // namespace fb::tools
