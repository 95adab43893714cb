#pragma once
// One exception type for the whole tool. Library code throws fb::Error; only main turns it into an exit code.
#include <stdexcept>
#include <string>
#include <string_view>

namespace fb {

enum class ErrorKind {
  usage,        // bad option or argument (exit 2)
  input,        // bad file: malformed JSON, unknown model, missing file (exit 2)
  unsupported,  // valid request this build or backend cannot do, e.g. fp8 on host (exit 2)
  runtime,      // a failing MPI/CUDA/NCCL/cuBLAS call or I/O error (exit 3)
};

// The text with its control characters written as escapes (\n, \r, \t, \0, \x1b...), so that an error
// or warning quoting a path, an option value or a JSON key stays one line and shows what it quotes: a
// newline in a file name would split the line, a carriage return would hide the text before it, and a NUL
// would end a C string early.
std::string one_line(std::string_view text);

// The message is kept one line (one_line): what() is a C string, and main prints it as one line.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(one_line(message)), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

inline Error usage_error(const std::string& message) {
  return Error(ErrorKind::usage, message);
}
inline Error input_error(const std::string& message) {
  return Error(ErrorKind::input, message);
}
inline Error unsupported_error(const std::string& message) {
  return Error(ErrorKind::unsupported, message);
}
inline Error runtime_error(const std::string& message) {
  return Error(ErrorKind::runtime, message);
}

// Exit status for an error kind: 2 for anything the user can fix in the command line or files, 3 otherwise.
int exit_code_for(ErrorKind kind) noexcept;

// "call failed: status text (file:line)" as a runtime Error; used by the MPI/CUDA/NCCL/cuBLAS check macros.
[[noreturn]] void throw_call_failure(const char* library, const char* call, const std::string& status,
                                     const char* file, int line);

}  // namespace fb
