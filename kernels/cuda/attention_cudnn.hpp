#pragma once
// Fused attention through cuDNN's scaled-dot-product-attention graphs (the cuDNN frontend graph API), behind
// kernels/attention_engine.hpp. No cuDNN or CUDA types here. Built only with FACTORYBENCH_CUDNN.
#include <memory>
#include <string>

#include "kernels/attention_engine.hpp"

namespace fb::kernels {

// `backend` must be the cuda backend and cudnn_library() loaded; graphs run on its native_stream().
std::unique_ptr<FusedAttention> make_cudnn_attention(Backend& backend);

// The cuDNN frontend's own checks (Graph::validate: its support surface for the shape, layout and type) of
// the forward and backward graphs the engine describes for `s` in `type`, as for a GPU of compute capability
// `sm` (90 Hopper, 100 Blackwell). Needs libcudnn (for its version), not a GPU: no handle or plan is made.
// Empty where both pass, else "forward: REASON" or "backward: REASON" in cuDNN's words. What only a GPU
// finds (no engine or plan for a shape that passes) is left to the engine's supports().
std::string cudnn_attention_graph_check(const AttentionShape& s, DType type, int sm);

}  // namespace fb::kernels
