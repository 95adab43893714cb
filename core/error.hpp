#pragma once
// One exception type for the whole tool. Library code throws fb::Error; only main turns it into an exit code.
#include <stdexcept>
#include <string>

namespace fb {

enum class ErrorKind {
  usage,        // bad option or argument (exit 2)
  input,        // bad file: malformed JSON, unknown model, missing file (exit 2)
  unsupported,  // valid request this build or backend cannot do, e.g. fp8 on host (exit 2)
  runtime,      // a failing MPI/CUDA/NCCL/cuBLAS call or I/O error (exit 3)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
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
