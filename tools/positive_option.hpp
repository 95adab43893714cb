#pragma once
// Count options whose unset value, 0, stands for "the default" (--seq: the model's, --layers: all of them,
// --dp: world / (tp · pp)). A 0 typed on the command line is refused rather than silently read as that
// default: "invalid --seq 0: must be at least 1 (leave the option out for the default)", exit 2.
#include <string>

#include <CLI/CLI.hpp>

namespace fb::tools {

inline CLI::Validator given_at_least_one(const std::string& option) {
  return CLI::Validator(
      [option](std::string& text) -> std::string {
        long long v = 0;
        try {
          std::size_t used = 0;
          v = std::stoll(text, &used);
          if (used != text.size()) return {};  // not an integer: the conversion names it
        } catch (const std::exception&) {
          return {};
        }
        if (v >= 1) return {};
        // CLI11 reports a ValidationError from a validator as a usage error with exactly this message.
        throw CLI::ValidationError("invalid " + option + " " + text +
                                   ": must be at least 1 (leave the option out for the default)");
      },
      "N>=1");
}

}  // namespace fb::tools
