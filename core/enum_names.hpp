#pragma once
// One table of names per enum: the CLI parses with it, reports and relaunch command lines print with it, and
// error messages list its names, so the accepted set cannot differ from one place to another (issue 14).
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace fb {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

template <class E, std::size_t N>
constexpr std::string_view enum_name(const EnumNames<E, N>& table, E value) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return "?";
}

template <class E, std::size_t N>
constexpr std::optional<E> enum_value(const EnumNames<E, N>& table, std::string_view name) {
  for (const auto& e : table)
    if (e.name == name) return e.value;
  return std::nullopt;
}

// "a, b or c"
template <class E, std::size_t N>
std::string enum_choices(const EnumNames<E, N>& table) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i)
    out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(table[i].name);
  return out;
}

// "invalid --option 'text': expected a, b or c"
template <class E, std::size_t N>
std::string invalid_enum_message(const EnumNames<E, N>& table, std::string_view text,
                                 std::string_view option) {
  return "invalid " + std::string(option) + " '" + std::string(text) + "': expected " + enum_choices(table);
}

// The value named `text`; a usage Error naming `option` and the accepted names otherwise.
template <class E, std::size_t N>
E parse_enum(const EnumNames<E, N>& table, std::string_view text, std::string_view option) {
  if (const auto v = enum_value(table, text)) return *v;
  throw usage_error(invalid_enum_message(table, text, option));
}

}  // namespace fb
