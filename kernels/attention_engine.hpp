#pragma once
// How a training step runs attention (issue 15): `gemm` is the step's blocked-GEMM attention (score strips
// through the GEMM engine and TrainKernels::causal_softmax); `cudnn` is cuDNN's fused scaled-dot-product
// attention (flash-attention style: one kernel per direction, no score matrix in memory). `auto` takes
// cudnn where it is built, cuDNN loads, the backend is cuda and cuDNN supports the shape, else gemm with a
// one-line notice saying why.
//
// Tensor layout (the step's activation layout: token rows contiguous, heads side by side in a row):
//   q [batch, seq, heads, head_dim]        k [batch, seq, kv_heads, head_dim]
//   v [batch, seq, kv_heads, value_dim]    o [batch, seq, heads, value_dim]
//   stats [batch, heads, seq] fp32: log Σ_j exp(scale·q·k_j) over the keys the query sees (natural log),
//   written by forward for backward.
// Query head h reads key/value head h / (heads / kv_heads) (grouped-query attention; heads % kv_heads == 0).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/backend.hpp"
#include "core/dtype.hpp"

namespace fb::kernels {

enum class AttentionEngineChoice { automatic, cudnn, gemm };

AttentionEngineChoice parse_attention_engine_choice(std::string_view text);  // auto|cudnn|gemm; usage Error
std::string_view to_string(AttentionEngineChoice choice);

struct AttentionShape {
  std::int64_t batch = 1, seq = 0, heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0;
  bool causal = true;  // query i sees keys 0..i
  float scale = 0;     // applied to q·k; 1/sqrt(head_dim) in a transformer
};

// Throws a usage Error naming the first inconsistent field (non-positive size, heads % kv_heads != 0).
void check_attention_shape(const AttentionShape& s);

// Fused attention on backend memory, on the backend's stream. q, k, v, o, d_o, dq, dk, dv in `type`.
class FusedAttention {
 public:
  virtual ~FusedAttention() = default;
  virtual std::string_view name() const = 0;
  // Builds (once per shape and type, then cached) what forward/backward need; false with `reason` when the
  // engine cannot run this shape.
  virtual bool supports(const AttentionShape& s, DType type, std::string& reason) = 0;
  virtual void forward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                       void* o, float* stats) = 0;
  // dq, dk, dv are overwritten (not accumulated).
  virtual void backward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                        const void* o, const void* d_o, const float* stats, void* dq, void* dk, void* dv) = 0;
};

struct AttentionEngineSelection {
  std::string engine;  // "cudnn" or "gemm": what a report records as params.attention_engine
  std::unique_ptr<FusedAttention> fused;  // set when engine is "cudnn"; "gemm" is the step's own blocked path
  std::string notice;                     // one line when `auto` fell back to gemm, saying why; else empty
};

// Resolves `choice` on `backend`. With `shape`, `auto` also falls back when cuDNN rejects that shape and
// type. `cudnn` that cannot be honoured is an unsupported Error carrying the reason.
AttentionEngineSelection make_attention_engine(Backend& backend, AttentionEngineChoice choice,
                                               const AttentionShape* shape = nullptr,
                                               DType type = DType::bf16);

}  // namespace fb::kernels
