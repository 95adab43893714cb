// The host kernels of the training step against PyTorch's answers (tests/data/torch_golden.json, written by
// scripts/torch_golden.py: torch's own operators and autograd in float64 from the same fp32 inputs). The
// GPU tests hold the cuda kernels to these host kernels, so this checks both against the framework users
// train with: RMSNorm and its backward, rotate-half RoPE (Hugging Face's Llama), causal GQA and MLA-shaped
// attention forward and backward (F.scaled_dot_product_attention), SwiGLU and tanh-GeLU, AdamW over three
// steps (torch.optim.AdamW), the embedding and its scatter-add, top-k routing with its backward, the blocked
// attention's causal softmax and its backward, and the MoE permutation, weighted combine and their gradients.
// The kernels compute in fp32 (attention in fp64): each value must be within fp32's error of torch's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/attention_engine.hpp"
#include "kernels/host/adam_reference.hpp"
#include "kernels/host/attention_reference.hpp"
#include "kernels/host/train_kernels_host.hpp"

namespace fb::kernels {
namespace {

using nlohmann::json;

const json& golden() {
  static const json data = [] {
    std::ifstream in(std::filesystem::path(FB_SOURCE_DIR) / "tests/data/torch_golden.json");
    if (!in) throw std::runtime_error("cannot read tests/data/torch_golden.json");
    return json::parse(in);
  }();
  return data;
}

// An fp32 input: the file prints each with the 9 digits that read back as the same fp32.
std::vector<float> floats(const json& values) {
  std::vector<float> out;
  for (const auto& v : values) out.push_back(static_cast<float>(v.get<double>()));
  return out;
}

// Every value within atol + rtol·|torch's|; the first few misses and the largest error are named.
void expect_close(const std::string& what, const std::vector<float>& got, const json& want, double rtol,
                  double atol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int misses = 0;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double w = want[i].get<double>();
    const double err = std::abs(got[i] - w);
    worst = std::max(worst, err / (atol + rtol * std::abs(w)));
    if (!(err <= atol + rtol * std::abs(w)) && ++misses <= 5)
      ADD_FAILURE() << fmt::format("{}[{}]: {} against torch's {} (error {:.3g})", what, i, got[i], w, err);
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << got.size() << " values off; the worst is at "
                       << worst << " of its tolerance";
}

constexpr double kRtol = 1e-5, kAtol = 1e-6;  // fp32 arithmetic against float64
// The attention reference computes in fp64: only its fp32 inputs, scale and outputs are rounded.
constexpr double kAttentionRtol = 1e-6, kAttentionAtol = 1e-8;

TEST(TorchGolden, RmsNormForwardAndBackward) {
  // At values of 1, and of 3e-3, where the mean square is about eps and the epsilon's place shows.
  for (const json& c : golden()["rmsnorm"]) {
    const std::int64_t rows = c["rows"], width = c["width"];
    const auto x = floats(c["x"]), delta = floats(c["delta"]), gamma = floats(c["gamma"]),
               dy = floats(c["dy"]), d_residual = floats(c["d_residual"]);
    auto k = make_host_train_kernels();
    std::vector<float> sum(x.size()), y(x.size()), rstd(rows), dx(x.size()), d_gamma(width, 0.0f);
    k->rmsnorm_forward(x.data(), delta.data(), sum.data(), gamma.data(), y.data(), rstd.data(), DType::fp32,
                       rows, width, width, c["eps"].get<float>());
    expect_close("sum", sum, c["sum"], kRtol, 0);
    expect_close("y", y, c["y"], kRtol, kAtol);
    expect_close("rstd", rstd, c["rstd"], kRtol, 0);
    k->rmsnorm_backward(dy.data(), sum.data(), gamma.data(), rstd.data(), d_residual.data(), dx.data(),
                        d_gamma.data(), DType::fp32, rows, width, width);
    expect_close("dx", dx, c["dx"], kRtol, kAtol);
    expect_close("d_gamma", d_gamma, c["d_gamma"], kRtol, kAtol);
  }
}

TEST(TorchGolden, RopeRotateHalfFullAndPartial) {
  for (const json& c : golden()["rope"]) {
    const std::int64_t rot_dim = c["rot_dim"], heads = c["heads"], head_dim = c["head_dim"];
    SCOPED_TRACE(fmt::format("rot_dim {} of {}", rot_dim, head_dim));
    // Forward, and the rotation back that the backward pass runs.
    for (const bool inverse : {false, true}) {
      auto x = floats(c["x"]);
      make_host_train_kernels()->rope(x.data(), DType::fp32, c["rows"], heads * head_dim, 0, heads, head_dim,
                                      rot_dim, c["seq"], c["theta"].get<float>(), inverse);
      expect_close(inverse ? "rope(x, inverse)" : "rope(x)", x, c[inverse ? "y_inverse" : "y"], kRtol, kAtol);
    }
  }
}

TEST(TorchGolden, AttentionCausalGqaAndMlaHeads) {
  for (const json& c : golden()["attention"]) {
    AttentionShape s;
    s.batch = c["batch"];
    s.seq = c["seq"];
    s.heads = c["heads"];
    s.kv_heads = c["kv_heads"];
    s.head_dim = c["head_dim"];
    s.value_dim = c["value_dim"];
    s.scale = c["scale"].get<float>();
    SCOPED_TRACE(fmt::format("batch {}, {}/{} heads, dims {}/{}", s.batch, s.heads, s.kv_heads, s.head_dim,
                             s.value_dim));
    const auto q = floats(c["q"]), kk = floats(c["k"]), v = floats(c["v"]), d_o = floats(c["d_o"]);
    std::vector<float> o(s.batch * s.seq * s.heads * s.value_dim), stats(s.batch * s.heads * s.seq),
        dq(q.size()), dk(kk.size()), dv(v.size());
    attention_forward_reference(s, q.data(), kk.data(), v.data(), o.data(), stats.data());
    // The scale is fp32 here and float64 in torch (1/√24 differs in the 8th digit): the scores carry it.
    expect_close("o", o, c["o"], kAttentionRtol, kAttentionAtol);
    expect_close("stats", stats, c["stats"], kAttentionRtol, kAttentionAtol);
    attention_backward_reference(s, q.data(), kk.data(), v.data(), o.data(), d_o.data(), dq.data(), dk.data(),
                                 dv.data());
    expect_close("dq", dq, c["dq"], kAttentionRtol, kAttentionAtol);
    expect_close("dk", dk, c["dk"], kAttentionRtol, kAttentionAtol);
    expect_close("dv", dv, c["dv"], kAttentionRtol, kAttentionAtol);
  }
}

TEST(TorchGolden, SwigluAndTanhGelu) {
  for (const json& c : golden()["activation"]) {
    const bool swiglu = c["swiglu"];
    SCOPED_TRACE(swiglu ? "swiglu" : "gelu");
    const std::int64_t f = c["f"], tokens = c["tokens"];
    const auto up = floats(c["up"]), d_out = floats(c["d_out"]);
    std::vector<float> out(f * tokens), d_up(up.size());
    auto k = make_host_train_kernels();
    k->activation_forward(swiglu, up.data(), DType::fp32, f, tokens, out.data());
    expect_close("out", out, c["out"], kRtol, kAtol);
    k->activation_backward(swiglu, up.data(), d_out.data(), DType::fp32, f, tokens, d_up.data());
    expect_close("d_up", d_up, c["d_up"], kRtol, kAtol);
  }
}

TEST(TorchGolden, AdamWThreeSteps) {
  // Gradients of 1e-2 with eps 1e-8; and of 1e-5 with eps 1e-6, beside the moments' square root, where the
  // epsilon's place shows, and a gradient scale of 1/2 (two micro-batches).
  for (const json& c : golden()["adamw"]) {
    SCOPED_TRACE(fmt::format("eps {}", c["eps"].get<double>()));
    const std::int64_t count = c["count"];
    AdamParams p;
    p.lr = c["lr"].get<float>();
    p.beta1 = c["beta1"].get<float>();
    p.beta2 = c["beta2"].get<float>();
    p.eps = c["eps"].get<float>();
    p.weight_decay = c["weight_decay"].get<float>();
    p.grad_scale = c["grad_scale"].get<float>();
    // Both host paths: the step's TrainKernels::adam_update and the multi-tensor reference.
    auto k = make_host_train_kernels();
    std::vector<float> master = floats(c["param"]), param = master, m(count, 0.0f), v(count, 0.0f);
    std::vector<float> ref_master = master, ref_param = master, ref_m(count, 0.0f), ref_v(count, 0.0f);
    for (std::size_t step = 0; step < c["grads"].size(); ++step) {
      SCOPED_TRACE(fmt::format("step {}", step + 1));
      p.step = static_cast<std::int64_t>(step) + 1;
      const auto grad = floats(c["grads"][step]);
      k->adam_update(param.data(), grad.data(), DType::fp32, master.data(), m.data(), v.data(), count, p);
      expect_close("master", master, c["param_after"][step], kRtol, kAtol);
      // Its tensor's own grad_scale multiplies AdamParams' (kernels/adam_multi_tensor.hpp): 1 here.
      AdamTensor t{ref_master.data(), ref_m.data(), ref_v.data(), grad.data(), ref_param.data(), count};
      adam_reference_step({&t, 1}, DType::fp32, p, false);
      expect_close("reference master", ref_master, c["param_after"][step], kRtol, kAtol);
    }
    EXPECT_EQ(param, master);  // fp32 weights: the master itself
    // The moments are gradient-sized: errors relative to the largest; β2 = 0.95 is 0.949999988 in fp32
    // (2.4e-7 off in 1 − β2).
    // An element whose gradients nearly cancel keeps fp32's error of the terms, not of the sum.
    const auto largest = [](const json& values) {
      double most = 0;
      for (const auto& x : values) most = std::max(most, std::abs(x.get<double>()));
      return most;
    };
    expect_close("m", m, c["m"], kRtol, kRtol * largest(c["m"]));
    expect_close("v", v, c["v"], kRtol, kRtol * largest(c["v"]));
  }
}

TEST(TorchGolden, EmbeddingAndItsScatterAdd) {
  const json& c = golden()["embedding"];
  const std::int64_t vocab = c["vocab"], width = c["width"];
  const std::vector<std::int32_t> ids = c["ids"].get<std::vector<std::int32_t>>();
  const auto table = floats(c["table"]), d_out = floats(c["d_out"]);
  const auto tokens = static_cast<std::int64_t>(ids.size());
  std::vector<float> out(tokens * width), grad(vocab * width, 0.0f);
  auto k = make_host_train_kernels();
  k->embedding_forward(table.data(), DType::fp32, 0, vocab, width, ids.data(), tokens, out.data());
  EXPECT_EQ(out, floats(c["out"]));  // a copy: exact (each fp32 read back from its 12 digits)
  k->embedding_backward(d_out.data(), DType::fp32, 0, vocab, width, ids.data(), tokens, grad.data());
  expect_close("grad", grad, c["grad"], kRtol, kAtol);
  // A vocabulary-parallel shard of the table's rows [begin, begin + rows): other ids read zeros, add nothing.
  const std::int64_t begin = c["shard_begin"], rows = c["shard_rows"];
  std::vector<float> shard_out(tokens * width, 7.0f), shard_grad(rows * width, 0.0f);
  k->embedding_forward(table.data() + begin * width, DType::fp32, begin, rows, width, ids.data(), tokens,
                       shard_out.data());
  EXPECT_EQ(shard_out, floats(c["shard_out"]));
  k->embedding_backward(d_out.data(), DType::fp32, begin, rows, width, ids.data(), tokens, shard_grad.data());
  expect_close("shard grad", shard_grad, c["shard_grad"], kRtol, kAtol);
}

TEST(TorchGolden, TopKRoutingAndItsBackward) {
  const json& c = golden()["route"];
  const std::int64_t tokens = c["tokens"], experts = c["experts"], top = c["k"];
  const auto logits = floats(c["logits"]), d_weight = floats(c["d_weight"]);
  std::vector<std::int32_t> idx(tokens * top);
  std::vector<float> weight(tokens * top), d_logits(tokens * experts);
  auto k = make_host_train_kernels();
  k->route_topk(logits.data(), DType::fp32, tokens, experts, top, nullptr, idx.data(), weight.data());
  EXPECT_EQ(idx, c["idx"].get<std::vector<std::int32_t>>());
  expect_close("weight", weight, c["weight"], kRtol, kAtol);
  k->topk_softmax_backward(idx.data(), weight.data(), d_weight.data(), tokens, experts, top, d_logits.data(),
                           DType::fp32);
  expect_close("d_logits", d_logits, c["d_logits"], kRtol, kAtol);
}

TEST(TorchGolden, CausalSoftmaxOfScoreStripsAndItsBackward) {
  const json& c = golden()["softmax"];
  const std::int64_t keys = c["keys"], queries = c["queries"], batch = c["batch"];
  const float scale = c["scale"].get<float>();
  auto probs = floats(c["scores"]), d = floats(c["d_probs"]);
  auto k = make_host_train_kernels();
  // Strip b holds query c's keys at b·queries·keys + c·keys; query c is token first_query + c.
  k->causal_softmax(probs.data(), DType::fp32, keys, queries, c["first_query"], batch, queries * keys, scale);
  expect_close("probs", probs, c["probs"], kRtol, kAtol);
  k->softmax_backward(probs.data(), d.data(), DType::fp32, keys, queries, batch, queries * keys, scale);
  expect_close("d_scores", d, c["d_scores"], kRtol, kAtol);
}

TEST(TorchGolden, MoePermutationCombineAndTheirGradients) {
  const json& c = golden()["moe"];
  const std::int64_t tokens = c["tokens"], top = c["k"], experts = c["experts"], width = c["width"];
  const std::vector<std::int32_t> idx = c["idx"].get<std::vector<std::int32_t>>();
  const auto rows = floats(c["rows"]), weight = floats(c["weight"]), dy = floats(c["dy"]);
  auto k = make_host_train_kernels();
  std::vector<std::int64_t> counts(experts), host_counts(experts);
  std::vector<std::int32_t> row_of_slot(tokens * top);
  k->build_permutation(idx.data(), tokens * top, experts, counts.data(), row_of_slot.data(),
                       host_counts.data());
  EXPECT_EQ(row_of_slot, c["row_of_slot"].get<std::vector<std::int32_t>>());  // torch's stable argsort
  EXPECT_EQ(host_counts, c["counts"].get<std::vector<std::int64_t>>());
  std::vector<float> y(tokens * width, 0.0f), d_rows(rows.size()), d_weight(tokens * top);
  k->unpermute(rows.data(), DType::fp32, tokens, top, width, row_of_slot.data(), weight.data(), y.data(),
               false);
  expect_close("y", y, c["y"], kRtol, kAtol);
  // The combine's backward: the rows' gradient is dy permuted with the weights, the weights' a dot product.
  k->permute(dy.data(), DType::fp32, tokens, top, width, row_of_slot.data(), weight.data(), d_rows.data());
  expect_close("d_rows", d_rows, c["d_rows"], kRtol, kAtol);
  k->routing_weight_grad(dy.data(), rows.data(), DType::fp32, tokens, top, width, row_of_slot.data(),
                         d_weight.data());
  expect_close("d_weight", d_weight, c["d_weight"], kRtol, kAtol);
}

}  // namespace
}  // namespace fb::kernels
