#pragma once
// Element access of the two activation types the host train kernels store (fp32, bf16); compute is fp32, as
// in the CUDA kernels. Shared by kernels/host/*.cpp; not part of any interface.
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/numeric_formats.hpp"

namespace fb::kernels::host {

struct Bf16 {
  std::uint16_t bits;
};
inline float ld(const float* p, std::int64_t i) {
  return p[i];
}
inline float ld(const Bf16* p, std::int64_t i) {
  return bf16_to_float(p[i].bits);
}
inline void st(float* p, std::int64_t i, float v) {
  p[i] = v;
}
inline void st(Bf16* p, std::int64_t i, float v) {
  p[i].bits = float_to_bf16(v);
}

// Calls f with a null pointer of the element type: f(static_cast<float*>(nullptr)) or Bf16*.
template <typename F>
void dispatch(DType type, F&& f) {
  if (type == DType::fp32)
    f(static_cast<float*>(nullptr));
  else if (type == DType::bf16)
    f(static_cast<Bf16*>(nullptr));
  else
    throw unsupported_error("train kernels support fp32 and bf16 activations, not " +
                            std::string(to_string(type)));
}

template <typename T>
const T* cp(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* mp(void* p) {
  return static_cast<T*>(p);
}

}  // namespace fb::kernels::host
