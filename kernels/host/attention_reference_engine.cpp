// The host reference attention behind the FusedAttention interface (`--attention-engine reference`): lets
// the step's fused-attention path (one call per direction, strided Q/K/V inside the QKV buffer, saved
// log-sum-exp statistics, overwritten gradients) run and be checked on a machine without a GPU. In fp8_e4m3
// it reads and writes through the fp8 scaling block and rounds S and dP as cuDNN's fp8 kernels do, so the
// fp8 benchmark's recipe and check run on a host too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "kernels/host/attention_reference.hpp"

namespace fb::kernels {
namespace {

// A [batch, seq, heads, dim] tensor whose token rows are `row` elements apart, as packed fp32 and back:
// read as stored · descale, written as value · scale (1 unless fp8).
struct Strided {
  std::int64_t tokens, heads, dim, row;
  std::vector<float> gather(const void* p, DType type, float descale = 1) const {
    std::vector<float> out(static_cast<std::size_t>(tokens * heads * dim));
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < heads * dim; ++c)
        out[static_cast<std::size_t>(t * heads * dim + c)] =
            static_cast<float>(load_element(p, type, static_cast<std::size_t>(t * row + c))) * descale;
    return out;
  }
  void scatter(const std::vector<float>& in, void* p, DType type, float scale = 1) const {
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < heads * dim; ++c)
        store_element(p, type, static_cast<std::size_t>(t * row + c),
                      in[static_cast<std::size_t>(t * heads * dim + c)] * scale);
  }
};

float amax(const std::vector<float>& x) {
  float m = 0;
  for (const float e : x) m = std::max(m, std::abs(e));
  return m;
}

// The fp8 scaling block in host memory; with no block (not fp8) every scale is 1 and amax goes nowhere.
struct Scaling {
  float* block;
  float get(Fp8Tensor t, Fp8Field f) const { return block ? block[fp8_slot(t, f)] : 1.0f; }
  float scale(Fp8Tensor t) const { return get(t, Fp8Field::scale); }
  float descale(Fp8Tensor t) const { return get(t, Fp8Field::descale); }
  void amax(Fp8Tensor t, double value) const {
    if (block) block[fp8_slot(t, Fp8Field::amax)] = static_cast<float>(value);
  }
};

class ReferenceAttention final : public FusedAttention {
 public:
  std::string_view name() const override { return "reference"; }
  bool supports(const AttentionShape& s, DType type, std::string& reason) override {
    check_attention_shape(s);
    if (type == DType::fp32 || type == DType::bf16 || type == DType::fp16 || type == DType::fp8_e4m3)
      return true;
    reason =
        "the reference attention takes fp32, bf16, fp16 or fp8_e4m3, not " + std::string(to_string(type));
    return false;
  }
  void forward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v, void* o,
               float* stats, float* fp8_scaling) override {
    const Scaling f = require(s, type, fp8_scaling);
    const auto L = layouts(s);
    using T = Fp8Tensor;
    std::vector<float> out(static_cast<std::size_t>(s.batch * s.seq * s.heads * s.value_dim));
    AttentionFp8Emulation emulate{.s_scale = f.scale(T::s)};
    attention_forward_reference(
        s, L.q.gather(q, type, f.descale(T::q)).data(), L.k.gather(k, type, f.descale(T::k)).data(),
        L.v.gather(v, type, f.descale(T::v)).data(), out.data(), stats, f.block ? &emulate : nullptr);
    f.amax(T::s, emulate.s_amax);
    f.amax(T::o, amax(out));
    L.o.scatter(out, o, type, f.scale(T::o));
  }
  void backward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                const void* o, const void* d_o, const float*, void* dq, void* dk, void* dv,
                float* fp8_scaling) override {
    const Scaling f = require(s, type, fp8_scaling);
    const auto L = layouts(s);
    using T = Fp8Tensor;
    std::vector<float> gq(static_cast<std::size_t>(s.batch * s.seq * s.heads * s.head_dim)),
        gk(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * s.head_dim)),
        gv(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * s.value_dim));
    AttentionFp8Emulation emulate{.s_scale = f.scale(T::s), .dp_scale = f.scale(T::dp)};
    attention_backward_reference(
        s, L.q.gather(q, type, f.descale(T::q)).data(), L.k.gather(k, type, f.descale(T::k)).data(),
        L.v.gather(v, type, f.descale(T::v)).data(), L.o.gather(o, type, f.descale(T::o)).data(),
        L.o.gather(d_o, type, f.descale(T::d_o)).data(), gq.data(), gk.data(), gv.data(),
        f.block ? &emulate : nullptr);
    f.amax(T::dp, emulate.dp_amax);
    f.amax(T::dq, amax(gq));
    f.amax(T::dk, amax(gk));
    f.amax(T::dv, amax(gv));
    L.q.scatter(gq, dq, type, f.scale(T::dq));
    L.k.scatter(gk, dk, type, f.scale(T::dk));
    L.v.scatter(gv, dv, type, f.scale(T::dv));
  }

 private:
  struct Layouts {
    Strided q, k, v, o;
  };
  static Layouts layouts(const AttentionShape& s) {
    const std::int64_t n = s.batch * s.seq;
    return {{n, s.heads, s.head_dim, s.q_row_stride()},
            {n, s.kv_heads, s.head_dim, s.k_row_stride()},
            {n, s.kv_heads, s.value_dim, s.v_row_stride()},
            {n, s.heads, s.value_dim, s.o_row_stride()}};
  }
  Scaling require(const AttentionShape& s, DType type, float* fp8_scaling) {
    std::string reason;
    if (!supports(s, type, reason)) throw unsupported_error(reason);
    const bool fp8 = type == DType::fp8_e4m3;
    if (fp8 != (fp8_scaling != nullptr))
      throw runtime_error(fp8 ? "fp8 attention needs the fp8 scaling block"
                              : "the fp8 scaling block is for fp8 attention only");
    return {fp8_scaling};
  }
};

}  // namespace

std::unique_ptr<FusedAttention> make_reference_attention() {
  return std::make_unique<ReferenceAttention>();
}

}  // namespace fb::kernels
