#include "kernels/attention_engine.hpp"

#include <string>
#include <tuple>
#include <utility>

#include "core/cudnn_library.hpp"
#include "core/error.hpp"
#include "kernels/host/attention_reference.hpp"
#ifdef FB_HAVE_CUDNN
#include "kernels/cuda/attention_cudnn.hpp"
#endif

namespace fb::kernels {

AttentionEngineChoice parse_attention_engine_choice(std::string_view text) {
  return parse_enum(kAttentionEngineNames, text, "--attention-engine");
}

std::string_view to_string(AttentionEngineChoice choice) {
  return enum_name(kAttentionEngineNames, choice);
}

void check_attention_shape(const AttentionShape& s) {
  const std::pair<const char*, std::int64_t> sizes[] = {{"batch", s.batch},       {"seq", s.seq},
                                                        {"heads", s.heads},       {"kv_heads", s.kv_heads},
                                                        {"head_dim", s.head_dim}, {"value_dim", s.value_dim}};
  for (const auto& [name, value] : sizes)
    if (value <= 0)
      throw usage_error(std::string("attention: ") + name + " must be positive, not " +
                        std::to_string(value));
  if (s.heads % s.kv_heads != 0)
    throw usage_error("attention: heads (" + std::to_string(s.heads) + ") must be a multiple of kv_heads (" +
                      std::to_string(s.kv_heads) + ")");
  if (!(s.scale > 0)) throw usage_error("attention: scale must be positive");
  const std::tuple<const char*, std::int64_t, std::int64_t> rows[] = {
      {"q_row", s.q_row, s.heads * s.head_dim},
      {"k_row", s.k_row, s.kv_heads * s.head_dim},
      {"v_row", s.v_row, s.kv_heads * s.value_dim},
      {"o_row", s.o_row, s.heads * s.value_dim}};
  for (const auto& [name, row, packed] : rows)
    if (row != 0 && row < packed)
      throw usage_error(std::string("attention: ") + name + " (" + std::to_string(row) +
                        ") is less than the tensor's row width (" + std::to_string(packed) + ")");
}

namespace {

// Why the cuDNN engine cannot run on a `kind` backend of this build. The backend first: on the host it is
// the reason whatever the build (the message does not change with FACTORYBENCH_CUDNN).
std::string cudnn_unbuildable(BackendKind kind) {
  if (kind != BackendKind::cuda) return "cuDNN attention needs the cuda backend";
  if (!cudnn_attention_compiled_in()) return "this build has no cuDNN attention engine (FACTORYBENCH_CUDNN)";
  return {};
}

// Why the cuDNN engine cannot be used on this backend, or empty when it can be tried.
std::string cudnn_unusable(const Backend& backend) {
  if (auto why = cudnn_unbuildable(backend.kind()); !why.empty()) return why;
  const auto& lib = cudnn_library();
  if (!lib.handle) return "cuDNN did not load: " + lib.error;
  return {};
}

}  // namespace

std::string attention_engine_unsupported(BackendKind kind, AttentionEngineChoice choice) {
  if (choice == AttentionEngineChoice::reference && kind != BackendKind::host)
    return "--attention-engine reference runs on the host backend only";
  if (choice == AttentionEngineChoice::cudnn)
    if (const auto why = cudnn_unbuildable(kind); !why.empty()) return "--attention-engine cudnn: " + why;
  return {};
}

std::optional<std::string> cudnn_graph_check_here(const AttentionShape& s, DType type, int sm) {
#ifdef FB_HAVE_CUDNN
  if (!cudnn_library().handle) return std::nullopt;
  return cudnn_attention_graph_check(s, type, sm);
#else
  (void)s, (void)type, (void)sm;
  return std::nullopt;
#endif
}

AttentionEngineSelection make_attention_engine(Backend& backend, AttentionEngineChoice choice,
                                               const AttentionShape* shape, DType type) {
  AttentionEngineSelection out;
  out.engine = "gemm";
  if (choice == AttentionEngineChoice::gemm) return out;
  if (choice == AttentionEngineChoice::reference) {
    if (const auto why = attention_engine_unsupported(backend.kind(), choice); !why.empty())
      throw unsupported_error(why);
    out.engine = "reference";
    out.fused = make_reference_attention();
    return out;
  }
  std::string reason = cudnn_unusable(backend);
#ifdef FB_HAVE_CUDNN
  if (reason.empty()) {
    try {
      auto fused = make_cudnn_attention(backend);
      if (!shape || fused->supports(*shape, type, reason)) {
        out.engine = "cudnn";
        out.fused = std::move(fused);
        return out;
      }
    } catch (const Error& e) {
      reason = e.what();
    }
  }
#else
  (void)shape, (void)type;
#endif
  if (choice == AttentionEngineChoice::cudnn) throw unsupported_error("--attention-engine cudnn: " + reason);
  out.notice = "attention engine: gemm (" + reason + ")";
  return out;
}

}  // namespace fb::kernels
