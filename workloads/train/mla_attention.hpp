#pragma once
// Multi-head latent attention's projections (DeepSeek-V2/V3, arXiv:2405.04434 §2.1): low-rank query and
// key/value down projections into a latent, up projections to per-head Q, k_nope and V, and a decoupled
// rope key shared by the heads. Shapes: mla_projections in workloads/layer_gemm_shapes.hpp.
#include <memory>

#include "workloads/train/attention_layer.hpp"

namespace fb::workloads::train {

std::unique_ptr<QkvProjection> make_mla_projection(StepContext& c, Region& dense);

}  // namespace fb::workloads::train
