#pragma once
// How a training step runs attention (issue 15): `gemm` is the step's blocked-GEMM attention (score strips
// through the GEMM engine and TrainKernels::causal_softmax); `cudnn` is cuDNN's fused scaled-dot-product
// attention (flash-attention style: one kernel per direction, no score matrix in memory). `auto` takes
// cudnn where it is built, cuDNN loads, the backend is cuda and cuDNN supports the shape, else gemm with a
// one-line notice saying why.
//
// Tensor layout (the step's activation layout: token rows, heads side by side in a row):
//   q [batch, seq, heads, head_dim]        k [batch, seq, kv_heads, head_dim]
//   v [batch, seq, kv_heads, value_dim]    o [batch, seq, heads, value_dim]
// Each tensor's token rows are `*_row` elements apart (0 = packed, heads × dim), so Q, K and V can be column
// blocks of one fused QKV projection output; dq/dk/dv have the strides of q/k/v, d_o that of o.
//   stats [batch, heads, seq] fp32: log Σ_j exp(scale·q·k_j) over the keys the query sees (natural log),
//   written by forward for backward.
// Query head h reads key/value head h / (heads / kv_heads) (grouped-query attention; heads % kv_heads == 0).
//
// fp8 (fp8_e4m3: cuDNN's per-tensor-scaled fp8 SDPA, the recipe Transformer Engine trains with): an fp8
// tensor X holds e4m3(X · scale_X) and is read back as stored · descale_X, descale_X = 1 / scale_X. Q, K, V,
// O, dO, dQ, dK and dV are fp8 in memory; S (the softmax probabilities) and dP (the gradient of the scaled
// scores, scale · P ⊙ (dO·Vᵀ − D), as cuDNN names it) are rounded to fp8 inside the kernels for the GEMMs
// that read them. Every call reads the scales it needs from `fp8_scaling` and writes the amax (largest |X|
// before scaling) of what it produced: forward S and O, backward dP, dQ, dK and dV. The next call's scales
// come from those (delayed scaling: workloads/attention_fp8_scaling.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/enum_names.hpp"

namespace fb::kernels {

// reference: the fp64 host reference (kernels/host/attention_reference.hpp) as an engine, on the host
// backend only: slow, for checking the fused-attention path of the step where no GPU is.
enum class AttentionEngineChoice { automatic, cudnn, gemm, reference };
inline constexpr EnumNames<AttentionEngineChoice, 4> kAttentionEngineNames{
    {{AttentionEngineChoice::automatic, "auto"},
     {AttentionEngineChoice::cudnn, "cudnn"},
     {AttentionEngineChoice::gemm, "gemm"},
     {AttentionEngineChoice::reference, "reference"}}};

AttentionEngineChoice parse_attention_engine_choice(std::string_view text);  // auto|cudnn|gemm|reference
std::string_view to_string(AttentionEngineChoice choice);

struct AttentionShape {
  std::int64_t batch = 1, seq = 0, heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0;
  bool causal = true;  // query i sees keys 0..i
  float scale = 0;     // applied to q·k; 1/sqrt(head_dim) in a transformer
  std::int64_t q_row = 0, k_row = 0, v_row = 0, o_row = 0;  // elements between token rows; 0 = packed
  std::int64_t q_row_stride() const { return q_row ? q_row : heads * head_dim; }
  std::int64_t k_row_stride() const { return k_row ? k_row : kv_heads * head_dim; }
  std::int64_t v_row_stride() const { return v_row ? v_row : kv_heads * value_dim; }
  std::int64_t o_row_stride() const { return o_row ? o_row : heads * value_dim; }
};

enum class Fp8Tensor : std::size_t { q, k, v, o, d_o, s, dp, dq, dk, dv, count };
enum class Fp8Field : std::size_t { scale, descale, amax, count };
// The fp8 scaling block: one float per (tensor, field), each 16 bytes from the next (cuDNN's alignment for
// a tensor's address), kFp8ScalingFloats floats in all.
inline constexpr std::size_t kFp8SlotFloats = 4;
constexpr std::size_t fp8_slot(Fp8Tensor t, Fp8Field f) {
  return (static_cast<std::size_t>(t) * static_cast<std::size_t>(Fp8Field::count) +
          static_cast<std::size_t>(f)) *
         kFp8SlotFloats;
}
inline constexpr std::size_t kFp8ScalingFloats = fp8_slot(Fp8Tensor::count, Fp8Field::scale);
inline constexpr double kFp8E4m3Max = 448;  // largest finite e4m3 (OCP FP8)

// Throws a usage Error naming the first inconsistent field (non-positive size, heads % kv_heads != 0).
void check_attention_shape(const AttentionShape& s);

// Fused attention on backend memory, on the backend's stream. q, k, v, o, d_o, dq, dk, dv in `type`;
// `fp8_scaling` is backend memory holding the fp8 scaling block when `type` is fp8_e4m3, else nullptr.
class FusedAttention {
 public:
  virtual ~FusedAttention() = default;
  virtual std::string_view name() const = 0;
  // Builds (once per shape and type, then cached) what forward/backward need; false with `reason` when the
  // engine cannot run this shape.
  virtual bool supports(const AttentionShape& s, DType type, std::string& reason) = 0;
  virtual void forward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                       void* o, float* stats, float* fp8_scaling) = 0;
  // dq, dk, dv are overwritten (not accumulated).
  virtual void backward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                        const void* o, const void* d_o, const float* stats, void* dq, void* dk, void* dv,
                        float* fp8_scaling) = 0;
};

struct AttentionEngineSelection {
  std::string engine;  // "cudnn", "gemm" or "reference": what a report records as params.attention_engine
  std::unique_ptr<FusedAttention> fused;  // set unless engine is "gemm" (the step's own blocked path)
  std::string notice;                     // one line when `auto` fell back to gemm, saying why; else empty
};

// Why `choice` cannot run on a `kind` backend of this build, known without a device or a library: reference
// off the host backend, cudnn off the cuda backend or not built in. Empty when it may run (cuDNN may still
// fail to load, or refuse the shape). Worded as make_attention_engine's errors, which use it, so that a
// check before the run (a suite's preflight) says what the run would.
std::string attention_engine_unsupported(BackendKind kind, AttentionEngineChoice choice);

// cuDNN's own checks (the frontend's graph validation, no GPU needed) of the graphs the cudnn engine would
// build for `s` in `type` on a GPU of compute capability `sm` (90 Hopper, 100 Blackwell): "" where cuDNN
// accepts them, else its reason ("backward: ..."); nullopt where this machine cannot check (a build without
// the engine, or libcudnn.so.9 not loadable). kernels/cuda/attention_cudnn.hpp, cudnn_attention_graph_check.
std::optional<std::string> cudnn_graph_check_here(const AttentionShape& s, DType type, int sm);

// Resolves `choice` on `backend`. With `shape`, `auto` also falls back when cuDNN rejects that shape and
// type. `cudnn` that cannot be honoured is an unsupported Error carrying the reason, as is `reference` on a
// backend other than host.
AttentionEngineSelection make_attention_engine(Backend& backend, AttentionEngineChoice choice,
                                               const AttentionShape* shape = nullptr,
                                               DType type = DType::bf16);

}  // namespace fb::kernels
