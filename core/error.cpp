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

void throw_call_failure(const char* library, const char* call, const std::string& status, const char* file,
                        int line) {
  throw Error(ErrorKind::runtime, std::string(library) + " call " + call + " failed: " + status + " (" +
                                      std::filesystem::path(file).filename().string() + ":" +
                                      std::to_string(line) + ")");
}

}  // namespace fb
