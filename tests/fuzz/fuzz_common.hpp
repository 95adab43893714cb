#pragma once
// Shared by the libFuzzer targets (issue 16). A parser may turn an input down only with an fb::Error of a
// user-facing kind (usage, input, unsupported): main prints it as one line and exits 2. Anything else is a
// finding and aborts the run: a runtime Error from a pure parser, a library exception escaping (main would
// print "internal error: [json.exception.type_error...]" and exit 3), a crash, a hang or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_file.hpp"

namespace fb::fuzz {

template <typename F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::runtime) return;
    std::fprintf(stderr, "fuzz: a parser threw a runtime error: %s\n", e.what());
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: an exception escaped (the CLI would print \"internal error\"): %s\n",
                 e.what());
    std::abort();
  }
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The input as JSON through the readers' own parse (core/json_file), or nothing when they reject it.
inline std::optional<nlohmann::json> json(const std::uint8_t* data, std::size_t size) {
  std::optional<nlohmann::json> j;
  expect_clean([&] { j = parse_json_text(text(data, size), "fuzz.json"); });
  return j;
}

}  // namespace fb::fuzz
