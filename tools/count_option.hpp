#pragma once
// Count options whose unset value, 0, stands for "the default" (--seq: the model's, --layers: all of them,
// --dp: world / (tp · pp)). A value below 1 typed on the command line is refused rather than silently read
// as that default: "invalid --seq 0: must be at least 1 (leave the option out for the default)", exit 2.
// A count may carry a binary suffix, as sizes do elsewhere (--seq 8K = 8192, 1M = 1048576).
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace fb::tools {

// "8192", "8K", "1m" → the count; nullopt when the text is not a whole number with an optional K/M/G.
inline std::optional<std::int64_t> parse_count_text(const std::string& text) {
  std::string digits = text;
  std::int64_t scale = 1;
  if (!digits.empty()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    if (unit == 'K' || unit == 'M' || unit == 'G') {
      scale = std::int64_t{1} << (unit == 'K' ? 10 : unit == 'M' ? 20 : 30);
      digits.pop_back();
    }
  }
  const bool negative = !digits.empty() && digits.front() == '-';
  const char* first = digits.data() + (negative ? 1 : 0);
  const char* last = digits.data() + digits.size();
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (first == last || end != last || ec != std::errc() ||
      v > std::numeric_limits<std::int64_t>::max() / scale)
    return std::nullopt;
  return (negative ? -v : v) * scale;
}

template <class T>
CLI::Option* add_count_option(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  auto* option = app.add_option_function<std::string>(
      name,
      [&value, name](const std::string& text) {
        // CLI11 reports a ValidationError from a callback as a usage error with exactly this message.
        const auto v = parse_count_text(text);
        if (!v || *v > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
          throw CLI::ValidationError("invalid " + name + " '" + text +
                                     "': expected a whole number (a K, M or G suffix multiplies by 1024, "
                                     "1024^2, 1024^3)");
        if (*v < 1)
          throw CLI::ValidationError("invalid " + name + " " + std::to_string(*v) +
                                     ": must be at least 1 (leave the option out for the default)");
        value = static_cast<T>(*v);
      },
      help);
  option->type_name("N");
  return option;
}

}  // namespace fb::tools
