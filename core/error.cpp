#include "core/error.hpp"

#include <filesystem>

namespace fb {

int exit_code_for(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::usage:
    case ErrorKind::input:
    case ErrorKind::unsupported:
      return 2;
    case ErrorKind::runtime:
      return 3;
  }
  return 3;
}

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\0':
        out += "\\0";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        out += kHex[byte >> 4];
        out += kHex[byte & 15];
      }
    }
  }
  return out;
}

void throw_call_failure(const char* library, const char* call, const std::string& status, const char* file,
                        int line) {
  throw Error(ErrorKind::runtime, std::string(library) + " call " + call + " failed: " + status + " (" +
                                      std::filesystem::path(file).filename().string() + ":" +
                                      std::to_string(line) + ")");
}

}  // namespace fb
