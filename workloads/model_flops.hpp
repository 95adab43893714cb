#pragma once
// Model FLOPs and parameter counts of a transformer (pure functions; formulas in docs/metrics.md).
//
// model_flops_per_token follows Megatron-LM's `num_floating_point_operations` (megatron/training/training.py,
// transformer path) as it stands today: every GEMM counted 3x (forward, dgrad, wgrad) at 2 FLOPs per
// multiply-add; causal attention halved; GQA; SwiGLU factor 3 (GeLU 2) per MLP; MoE top-k routed experts plus
// shared experts, with the dense-layer split; MLA (DeepSeek); MTP layers; logits 6·h·V per output head.
// Norms, router, softmax and elementwise work are not counted (as in Megatron).
#include <cstdint>
#include <string_view>

#include "core/enum_names.hpp"
#include "workloads/model_config.hpp"

namespace fb::workloads {

// causal: only the lower triangle of s×s scores is computed (Megatron-LM today, NeMo ≥ 25.09).
// full:   the legacy s² count (NeMo ≤ 25.07 and the older Megatron formula).
enum class AttentionFlops { causal, full };
inline constexpr EnumNames<AttentionFlops, 2> kAttentionFlopsNames{
    {{AttentionFlops::causal, "causal"}, {AttentionFlops::full, "full"}}};
AttentionFlops parse_attention_flops(std::string_view text);  // causal|full; usage Error otherwise
std::string_view to_string(AttentionFlops a);

// none: nothing recomputed. selective: the attention core (scores, softmax, context) is recomputed in
// backward (Korthikanti et al. 2022). full: every transformer layer's forward is recomputed.
enum class Recompute { none, selective, full };
inline constexpr EnumNames<Recompute, 3> kRecomputeNames{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};
Recompute parse_recompute(std::string_view text);  // none|selective|full; usage Error otherwise
std::string_view to_string(Recompute r);

// Training FLOPs per token (forward + backward), split by where they are spent. Sum = total().
struct FlopsPerToken {
  double attention_projections = 0;  // QKV (or MLA down/up) and output projections
  double attention_core = 0;         // QKᵀ and scores·V
  double mlp_dense = 0;              // dense-layer MLPs
  double moe_routed = 0;             // top-k routed experts
  double moe_shared = 0;             // shared experts
  double mtp_projection = 0;         // MTP eh projection + norms (Megatron counts its norms)
  double logits = 0;                 // output layer(s): 6·h·V per head (main + MTP)
  double total() const {
    return attention_projections + attention_core + mlp_dense + moe_routed + moe_shared + mtp_projection +
           logits;
  }
};

// `seq` is the sequence length the FLOPs are for (the model's training length unless overridden).
FlopsPerToken model_flops_per_token(const ModelConfig& model, std::int64_t seq,
                                    AttentionFlops attention = AttentionFlops::causal);

// Hardware FLOPs per token: model FLOPs plus what recomputation runs again (one more forward = 1/3 of the
// training FLOPs of the recomputed part). The output layer is never recomputed.
double hardware_flops_per_token(const FlopsPerToken& model_flops, Recompute recompute);

struct ParameterCounts {
  double total = 0;      // every weight, including embedding, output layer and MTP modules
  double active = 0;     // weights one token touches (top-k routed experts instead of all)
  double embedding = 0;  // input embedding + output layer (untied)
};

// Weights as the presets define them: untied input embedding and output layer, no biases, RMSNorm/LayerNorm
// gains counted (h per norm), router h·experts per MoE layer. An MTP module = eh projection (2h·h) + two
// input norms + one transformer layer (MoE when the last layer is) + its final norm; it shares the
// embedding and output layer.
ParameterCounts parameter_counts(const ModelConfig& model);

}  // namespace fb::workloads
