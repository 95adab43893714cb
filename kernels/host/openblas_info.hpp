#pragma once
#include <string>

namespace fb::kernels {
// "OpenBLAS 0.3.21" and the library's build configuration (core type, threading).
std::string openblas_version();
std::string openblas_config();
}  // namespace fb::kernels
