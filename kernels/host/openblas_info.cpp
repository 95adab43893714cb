#include "kernels/host/openblas_info.hpp"

#include <cblas.h>

#include <string>

namespace fb::kernels {

std::string openblas_version() {
  std::string v = OPENBLAS_VERSION;  // " OpenBLAS 0.3.21 "
  const auto b = v.find_first_not_of(' ');
  const auto e = v.find_last_not_of(' ');
  return b == std::string::npos ? v : v.substr(b, e - b + 1);
}

std::string openblas_config() {
  return openblas_get_config();
}

}  // namespace fb::kernels
