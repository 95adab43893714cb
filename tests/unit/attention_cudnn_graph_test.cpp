// cuDNN's own checks of the SDPA graphs the cuDNN engine describes (kernels/cuda/attention_cudnn.cpp), run
// without a GPU: the frontend's Graph::validate against its support surface for Hopper (sm 90) and Blackwell
// (sm 100). The shapes are those `train` runs for every shipped model (bf16, the model's sequence length,
// Q/K/V read in place from the fused QKV rows), on one rank and with the heads split over TP 8. A graph the
// engine describes wrongly (a dim, a stride, a tensor's type) fails here, in CI, instead of in a GPU session.
// What only a GPU finds (an engine or plan for a shape that passes) stays with tests/gpu.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/cudnn_library.hpp"
#include "core/error.hpp"
#include "kernels/attention_engine.hpp"
#include "workloads/model_config.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/train/attention_core.hpp"
#ifdef FB_HAVE_CUDNN
#include "kernels/cuda/attention_cudnn.hpp"
#endif

namespace fb::kernels {
namespace {

#ifdef FB_HAVE_CUDNN

#define REQUIRE_CUDNN() \
  if (!cudnn_library().handle) GTEST_SKIP() << "libcudnn.so.9 did not load here: " << cudnn_library().error

AttentionShape packed(std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                      std::int64_t value_dim) {
  AttentionShape s;
  s.seq = 256;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.head_dim = head_dim;
  s.value_dim = value_dim;
  s.scale = 0.125f;
  return s;
}

TEST(CudnnAttentionGraph, EveryShippedModelsStepPassesOnHopperAndBlackwell) {
  REQUIRE_CUDNN();
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FB_SOURCE_DIR "/configs/models")) {
    if (entry.path().extension() != ".json") continue;
    const auto model = workloads::load_model(entry.path().string());
    ++models;
    for (const std::int64_t tp : {1, 8}) {
      if (model.heads % tp != 0) continue;
      workloads::StepShape step;
      step.fused_attention = true;
      workloads::TrainPlan plan;
      try {
        plan = workloads::make_plan(model, {tp, 1, 1, 1}, step);
      } catch (const Error&) {  // a layout this model cannot take (kv heads and TP 8)
        continue;
      }
      const AttentionShape s = workloads::train::attention_shape(plan);
      ASSERT_EQ(s.seq, model.seq) << model.name;
      for (const int sm : {90, 100})
        EXPECT_EQ(cudnn_attention_graph_check(s, DType::bf16, sm), "")
            << model.name << " tp " << tp << " on sm " << sm << ": " << s.heads << "/" << s.kv_heads
            << " heads, head dim " << s.head_dim << "/" << s.value_dim;
    }
  }
  EXPECT_GE(models, 10);
}

// fp8: cuDNN's fp8 SDPA on Hopper takes head dim 128 (llama3-8b's GQA heads), and its backward refuses
// DeepSeek-V3's 192/128 there; fp16 takes what bf16 does.
TEST(CudnnAttentionGraph, Fp8AndFp16) {
  REQUIRE_CUDNN();
  EXPECT_EQ(cudnn_attention_graph_check(packed(32, 8, 128, 128), DType::fp8_e4m3, 90), "");
  const std::string mla = cudnn_attention_graph_check(packed(16, 16, 192, 128), DType::fp8_e4m3, 90);
  EXPECT_EQ(mla.rfind("backward: ", 0), 0u) << mla;
  EXPECT_EQ(cudnn_attention_graph_check(packed(16, 16, 192, 128), DType::bf16, 90), "");
  EXPECT_EQ(cudnn_attention_graph_check(packed(8, 2, 64, 64), DType::fp16, 90), "");
}

// What cuDNN rejects comes back in its words, naming the direction; a type the engine has no cuDNN graph for
// is named by the engine.
TEST(CudnnAttentionGraph, NamesWhatCudnnRejects) {
  REQUIRE_CUDNN();
  const std::string odd = cudnn_attention_graph_check(packed(4, 4, 36, 36), DType::bf16, 90);
  EXPECT_EQ(odd.rfind("forward: ", 0), 0u) << odd;
  EXPECT_NE(odd.find("multiple of 8"), std::string::npos) << odd;
  const std::string fp32 = cudnn_attention_graph_check(packed(4, 4, 64, 64), DType::fp32, 90);
  EXPECT_NE(fp32.find("supports bf16, fp16 and fp8_e4m3, not fp32"), std::string::npos) << fp32;
  // An inconsistent shape is the caller's error, before cuDNN is asked.
  EXPECT_THROW(cudnn_attention_graph_check(packed(8, 3, 64, 64), DType::bf16, 90), Error);
}

#else

TEST(CudnnAttentionGraph, NotInThisBuild) {
  GTEST_SKIP() << "built without the cuDNN attention engine (FACTORYBENCH_CUDNN)";
}

#endif

}  // namespace
}  // namespace fb::kernels
