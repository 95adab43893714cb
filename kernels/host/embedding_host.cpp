// The vocabulary-parallel embedding lookup and its backward scatter-add on the host: the reference of
// kernels/cuda/embedding_cuda.cu. Each TP rank holds rows [vocab_begin, vocab_begin + vocab_rows) of the
// table (Megatron-LM's VocabParallelEmbedding); a token whose id lies elsewhere reads zeros, and the TP sum
// of the ranks' outputs is the embedding.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/host/block_kernels_host.hpp"
#include "kernels/host/host_elements.hpp"

namespace fb::kernels::host {

void embedding_forward(const void* table, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                       std::int64_t width, const std::int32_t* ids, std::int64_t tokens, void* out) {
  dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* w = cp<T>(table);
    T* o = mp<T>(out);
    const auto row_bytes = sizeof(T) * static_cast<std::size_t>(width);
    for (std::int64_t t = 0; t < tokens; ++t) {
      const std::int64_t v = ids[t] - vocab_begin;
      if (v >= 0 && v < vocab_rows)
        std::memcpy(o + t * width, w + v * width, row_bytes);
      else
        for (std::int64_t c = 0; c < width; ++c) st(o, t * width + c, 0.0f);
    }
  });
}

// Tokens in id order (stable: equal ids keep token order), then one fp32 sum per run of equal ids, added to
// the row once: the order the CUDA kernel sums in after its stable radix sort.
void embedding_backward(const void* d_out, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                        std::int64_t width, const std::int32_t* ids, std::int64_t tokens, void* grad) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(tokens));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return ids[a] < ids[b]; });
  dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* g = cp<T>(d_out);
    T* out = mp<T>(grad);
    std::vector<float> acc(static_cast<std::size_t>(width));
    for (std::size_t i = 0; i < order.size();) {
      const std::int32_t id = ids[order[i]];
      std::size_t end = i;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (; end < order.size() && ids[order[end]] == id; ++end)
        for (std::int64_t c = 0; c < width; ++c) acc[c] += ld(g, order[end] * width + c);
      const std::int64_t v = id - vocab_begin;
      if (v >= 0 && v < vocab_rows)
        for (std::int64_t c = 0; c < width; ++c) st(out, v * width + c, ld(out, v * width + c) + acc[c]);
      i = end;
    }
  });
}

}  // namespace fb::kernels::host
