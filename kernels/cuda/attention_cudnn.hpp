#pragma once
// Fused attention through cuDNN's scaled-dot-product-attention graphs (the cuDNN frontend graph API), behind
// kernels/attention_engine.hpp. No cuDNN or CUDA types here. Built only with FACTORYBENCH_CUDNN.
#include <memory>

#include "kernels/attention_engine.hpp"

namespace fb::kernels {

// `backend` must be the cuda backend and cudnn_library() loaded; graphs run on its native_stream().
std::unique_ptr<FusedAttention> make_cudnn_attention(Backend& backend);

}  // namespace fb::kernels
