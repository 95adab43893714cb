// Head-block copies between token-major buffers on the host (the reference of
// kernels/cuda/head_copy_cuda.cu): MLA assembles each head's key from its own no-rope part and the shared
// rope part, and sums the heads' rope-part gradients back into one block.
#include "kernels/host/block_kernels_host.hpp"
#include "kernels/host/host_elements.hpp"

namespace fb::kernels::host {

void copy_heads(const void* src, std::int64_t ld_src, std::int64_t src_col0, std::int64_t src_stride,
                void* dst, std::int64_t ld_dst, std::int64_t dst_col0, std::int64_t dst_stride, DType type,
                std::int64_t rows, std::int64_t heads, std::int64_t width, bool accumulate) {
  dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* in = cp<T>(src);
    T* out = mp<T>(dst);
    for (std::int64_t t = 0; t < rows; ++t)
      for (std::int64_t c = 0; c < width; ++c) {
        if (dst_stride == 0) {  // the heads summed into one block, in fp32, rounded once
          const std::int64_t o = t * ld_dst + dst_col0 + c;
          float acc = accumulate ? ld(out, o) : 0.0f;
          for (std::int64_t j = 0; j < heads; ++j) acc += ld(in, t * ld_src + src_col0 + j * src_stride + c);
          st(out, o, acc);
          continue;
        }
        for (std::int64_t j = 0; j < heads; ++j) {
          const std::int64_t o = t * ld_dst + dst_col0 + j * dst_stride + c;
          const float v = ld(in, t * ld_src + src_col0 + j * src_stride + c);
          st(out, o, accumulate ? ld(out, o) + v : v);
        }
      }
  });
}

}  // namespace fb::kernels::host
