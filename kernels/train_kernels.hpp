#pragma once
// The non-GEMM kernels of a transformer training step: MoE top-k routing, permute / weighted un-permute,
// causal softmax over attention score strips, SwiGLU / GeLU, residual add, row-block copies and the Adam
// update. Two implementations with the same algorithms: kernels/host (C++, the reference in tests) and
// kernels/cuda (CUDA kernels on the backend's stream). Workloads code against this interface only.
//
// Storage conventions (column-major, as the GEMM engine): an activation of T tokens and width w is a w×T
// matrix, token t at element t·w (token rows are contiguous). Element types: `type` is fp32 or bf16 (the
// step's dtype) for activations; router weights, Adam state and indices have fixed types as declared.
// All pointers are backend memory. Counts returned to the host are noted.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/dtype.hpp"

namespace fb::kernels {

// RMSNorm's weight gradient is summed in fp32 over blocks of this many rows, then the blocks in order: the
// same order on host and cuda, so the sum is deterministic.
inline constexpr std::int64_t kNormRowBlock = 64;

// RoPE's inverse frequencies θ^(−2i/rot_dim), i < rot_dim/2, computed in fp64 and rounded to fp32.
std::vector<float> rope_inverse_frequencies(std::int64_t rot_dim, float theta);

// RoPE's rotation table, the one every implementation uses: for position p < seq and pair i < rot_dim/2,
// cos and sin of the fp32 angle p·inv_freq[i], at [p·rot_dim/2 + i] of each.
struct RopeTable {
  std::vector<float> cos, sin;
};
RopeTable rope_table(std::int64_t rot_dim, std::int64_t seq, float theta);

struct AdamParams {
  float lr = 1e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
  std::int64_t step = 1;    // 1-based, for bias correction
  float grad_scale = 1.0f;  // gradients are multiplied by this first (1 / micro-batches)
};

class TrainKernels {
 public:
  virtual ~TrainKernels() = default;

  // Router: logits (experts×tokens, `type`) + bias[e] (fp32, may be null) → softmax over experts; the k
  // largest probabilities (ties to the lower expert) → expert_idx[t·k + j] (int32, descending probability)
  // and weight[t·k + j] (fp32, renormalised to sum 1 over the k).
  virtual void route_topk(const void* logits, DType type, std::int64_t tokens, std::int64_t experts,
                          std::int64_t k, const float* bias, std::int32_t* expert_idx, float* weight) = 0;

  // Backward of the renormalised top-k weights (a softmax over the selected logits): for the selected
  // experts d_logits[e + t·experts] = w ⊙ (d_weight − Σ_j w_j·d_weight_j), 0 for the others (`type`).
  virtual void topk_softmax_backward(const std::int32_t* expert_idx, const float* weight,
                                     const float* d_weight, std::int64_t tokens, std::int64_t experts,
                                     std::int64_t k, void* d_logits, DType type) = 0;

  // Stable counting sort of the slots (t·k + j) by expert: counts[e] (int64, copied to `host_counts` too,
  // which must hold `experts` values) and row_of_slot[slot] = position of the slot in expert order.
  virtual void build_permutation(const std::int32_t* expert_idx, std::int64_t slots, std::int64_t experts,
                                 std::int64_t* counts, std::int32_t* row_of_slot,
                                 std::int64_t* host_counts) = 0;

  // out[row_of_slot[t·k+j]] = scale(t,j) · x[t] for every slot; scale = weight (or 1 when weight is null).
  virtual void permute(const void* x, DType type, std::int64_t tokens, std::int64_t k, std::int64_t width,
                       const std::int32_t* row_of_slot, const float* weight, void* out) = 0;
  // y[t] = (accumulate ? y[t] : 0) + Σ_j scale(t,j) · in[row_of_slot[t·k+j]]; scale = weight or 1.
  virtual void unpermute(const void* in, DType type, std::int64_t tokens, std::int64_t k, std::int64_t width,
                         const std::int32_t* row_of_slot, const float* weight, void* y, bool accumulate) = 0;
  // d_weight[t·k+j] = <dy[t], in[row_of_slot[t·k+j]]> (the routing-weight gradient of unpermute).
  virtual void routing_weight_grad(const void* dy, const void* in, DType type, std::int64_t tokens,
                                   std::int64_t k, std::int64_t width, const std::int32_t* row_of_slot,
                                   float* d_weight) = 0;

  // Causal softmax in place over `batch` strips of scores (keys×queries each, column = one query, strips
  // `batch_stride` elements apart): query c of the strip is token first_query + c and sees keys
  // [0, first_query + c]; scores are multiplied by `scale` first; masked keys become 0.
  virtual void causal_softmax(void* scores, DType type, std::int64_t keys, std::int64_t queries,
                              std::int64_t first_query, std::int64_t batch, std::int64_t batch_stride,
                              float scale) = 0;
  // In place: d = scale · p ⊙ (d − Σ_keys p ⊙ d) (softmax backward; masked entries of p are 0).
  virtual void softmax_backward(const void* probs, void* d, DType type, std::int64_t keys,
                                std::int64_t queries, std::int64_t batch, std::int64_t batch_stride,
                                float scale) = 0;

  // SwiGLU: up is (2f)×n (rows [0,f) gate, [f,2f) up); out (f×n) = silu(gate) ⊙ up.
  // GeLU (tanh form): up is f×n; out = gelu(up).
  virtual void activation_forward(bool swiglu, const void* up, DType type, std::int64_t f, std::int64_t n,
                                  void* out) = 0;
  // d_up (same shape as up) from d_out (f×n).
  virtual void activation_backward(bool swiglu, const void* up, const void* d_out, DType type, std::int64_t f,
                                   std::int64_t n, void* d_up) = 0;

  // y = alpha · y (count elements); alpha = 0 writes zeros (whatever y held).
  virtual void scale(void* y, DType type, std::int64_t count, float alpha) = 0;
  // y += x (count elements).
  virtual void add(void* y, const void* x, DType type, std::int64_t count) = 0;
  // Copies `blocks` row blocks of `width`: rows [src_row[b], +rows[b]) of src → [dst_row[b], …) of dst.
  // The offset tables are host arrays.
  virtual void copy_row_blocks(const void* src, void* dst, DType type, std::int64_t width,
                               std::int64_t blocks, const std::int64_t* src_row, const std::int64_t* dst_row,
                               const std::int64_t* rows) = 0;

  // --- The transformer block's elementwise work. Token-major operands (token t's row at t·ld; ld ≥ the
  // columns used); `type` is the step's activation type.

  // RMSNorm (Zhang & Sennrich 2019) with the residual add fused in front: s = x + delta, stored to `sum`
  // (both given; sum may be x) or s = x (delta and sum null); rstd[r] = 1/sqrt(mean_c s² + eps) (fp32, saved
  // for backward); y = s·rstd·gamma. gamma has `width` elements of `type`.
  virtual void rmsnorm_forward(const void* x, const void* delta, void* sum, const void* gamma, void* y,
                               float* rstd, DType type, std::int64_t rows, std::int64_t width,
                               std::int64_t ld, float eps) = 0;
  // Its backward, with the residual gradient fused: x̂ = s·rstd, g = dy·gamma,
  // dx = rstd·(g − x̂·mean_c(g·x̂)) + d_residual (null: nothing added; dx may alias d_residual, not dy or s);
  // d_gamma += Σ_rows dy·x̂ (fp32 sums in blocks of kNormRowBlock rows, then the blocks in order).
  virtual void rmsnorm_backward(const void* dy, const void* s, const void* gamma, const float* rstd,
                                const void* d_residual, void* dx, void* d_gamma, DType type,
                                std::int64_t rows, std::int64_t width, std::int64_t ld) = 0;

  // Rotary position embedding (Su et al. 2021, RoFormer) in place, rotate-half pairing (GPT-NeoX, Llama):
  // in head j (columns col0 + j·head_stride …, rot_dim of them) of row t, at position p = t mod seq, columns
  // i and i + rot_dim/2 rotate by p·inv_freq[i] (rope_table's cos and sin). `inverse` rotates back: the
  // backward pass (the rotation is orthogonal).
  virtual void rope(void* x, DType type, std::int64_t rows, std::int64_t ld, std::int64_t col0,
                    std::int64_t heads, std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq,
                    float theta, bool inverse) = 0;

  // Vocabulary-parallel embedding lookup (Megatron-LM's VocabParallelEmbedding): out[t] = table[ids[t] −
  // vocab_begin] when that row is in [0, vocab_rows), else zeros. table is vocab_rows × width, out
  // tokens × width (`type`); ids int32.
  virtual void embedding_forward(const void* table, DType type, std::int64_t vocab_begin,
                                 std::int64_t vocab_rows, std::int64_t width, const std::int32_t* ids,
                                 std::int64_t tokens, void* out) = 0;
  // Its backward scatter-add: grad[v] += Σ_{t: ids[t] = vocab_begin + v} d_out[t], summed in fp32 over the
  // tokens in token order and added once per row (deterministic).
  virtual void embedding_backward(const void* d_out, DType type, std::int64_t vocab_begin,
                                  std::int64_t vocab_rows, std::int64_t width, const std::int32_t* ids,
                                  std::int64_t tokens, void* grad) = 0;

  // Head blocks between token-major buffers: for every row and head j < heads, the `width` columns at
  // src_col0 + j·src_stride of src go to dst_col0 + j·dst_stride of dst (added when `accumulate`).
  // dst_stride = 0 sums the heads into one block (fp32, rounded once); src_stride = 0 broadcasts one block
  // to every head. src and dst may be one buffer when the column ranges do not overlap.
  virtual void copy_heads(const void* src, std::int64_t ld_src, std::int64_t src_col0,
                          std::int64_t src_stride, void* dst, std::int64_t ld_dst, std::int64_t dst_col0,
                          std::int64_t dst_stride, DType type, std::int64_t rows, std::int64_t heads,
                          std::int64_t width, bool accumulate) = 0;

  // Adam (AdamW when weight_decay > 0) on `count` parameters: fp32 master, m, v; grad and param in `type`.
  virtual void adam_update(void* param, const void* grad, DType type, float* master, float* m, float* v,
                           std::int64_t count, const AdamParams& p) = 0;
  // Σ grad² in fp64 (returned to the host): the gradient norm input.
  virtual double sum_squares(const void* x, DType type, std::int64_t count) = 0;
  // Converts fp32 → `type` (for initialising weights from fp32 master copies).
  virtual void convert_from_fp32(const float* src, void* dst, DType type, std::int64_t count) = 0;
};

// Host kernels for a host backend, CUDA kernels (on the backend's stream) for a cuda backend. Throws an
// unsupported Error for activation types other than fp32 and bf16.
std::unique_ptr<TrainKernels> make_train_kernels(Backend& backend);

}  // namespace fb::kernels
