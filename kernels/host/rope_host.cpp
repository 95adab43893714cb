// Rotary position embedding on the host: the reference of kernels/cuda/rope_cuda.cu. Su et al., "RoFormer"
// (2021), in the rotate-half pairing of GPT-NeoX and Llama: within a head of rot_dim columns, element i and
// i + rot_dim/2 rotate by the angle p·θ^(−2i/rot_dim) at position p.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/host/block_kernels_host.hpp"
#include "kernels/host/host_elements.hpp"
#include "kernels/train_kernels.hpp"

namespace fb::kernels::host {

void rope(void* x, DType type, std::int64_t rows, std::int64_t pitch, std::int64_t col0, std::int64_t heads,
          std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq, float theta, bool inverse) {
  const std::int64_t half = rot_dim / 2;
  const RopeTable table = rope_table(rot_dim, std::min(seq, rows), theta);
  dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T* v = mp<T>(x);
    for (std::int64_t t = 0; t < rows; ++t) {
      const std::size_t p = static_cast<std::size_t>((t % seq) * half);
      for (std::int64_t i = 0; i < half; ++i) {
        const float c = table.cos[p + static_cast<std::size_t>(i)];
        const float s = inverse ? -table.sin[p + static_cast<std::size_t>(i)]
                                : table.sin[p + static_cast<std::size_t>(i)];
        for (std::int64_t j = 0; j < heads; ++j) {
          const std::int64_t at = t * pitch + col0 + j * head_stride + i;
          const float a = ld(v, at), b = ld(v, at + half);
          st(v, at, a * c - b * s);
          st(v, at + half, b * c + a * s);
        }
      }
    }
  });
}

}  // namespace fb::kernels::host
