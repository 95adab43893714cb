// The host reference attention behind the FusedAttention interface (`--attention-engine reference`): lets
// the step's fused-attention path (one call per direction, strided Q/K/V inside the QKV buffer, saved
// log-sum-exp statistics, overwritten gradients) run and be checked on a machine without a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "kernels/host/attention_reference.hpp"

namespace fb::kernels {
namespace {

// A [batch, seq, heads, dim] tensor whose token rows are `row` elements apart, as packed fp32 and back.
struct Strided {
  std::int64_t tokens, heads, dim, row;
  std::vector<float> gather(const void* p, DType type) const {
    std::vector<float> out(static_cast<std::size_t>(tokens * heads * dim));
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < heads * dim; ++c)
        out[static_cast<std::size_t>(t * heads * dim + c)] =
            static_cast<float>(load_element(p, type, static_cast<std::size_t>(t * row + c)));
    return out;
  }
  void scatter(const std::vector<float>& in, void* p, DType type) const {
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < heads * dim; ++c)
        store_element(p, type, static_cast<std::size_t>(t * row + c),
                      in[static_cast<std::size_t>(t * heads * dim + c)]);
  }
};

class ReferenceAttention final : public FusedAttention {
 public:
  std::string_view name() const override { return "reference"; }
  bool supports(const AttentionShape& s, DType type, std::string& reason) override {
    check_attention_shape(s);
    if (type == DType::fp32 || type == DType::bf16 || type == DType::fp16) return true;
    reason = "the reference attention takes fp32, bf16 or fp16, not " + std::string(to_string(type));
    return false;
  }
  void forward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v, void* o,
               float* stats) override {
    require(s, type);
    const auto L = layouts(s);
    std::vector<float> out(static_cast<std::size_t>(s.batch * s.seq * s.heads * s.value_dim));
    attention_forward_reference(s, L.q.gather(q, type).data(), L.k.gather(k, type).data(),
                                L.v.gather(v, type).data(), out.data(), stats);
    L.o.scatter(out, o, type);
  }
  void backward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                const void* o, const void* d_o, const float*, void* dq, void* dk, void* dv) override {
    require(s, type);
    const auto L = layouts(s);
    std::vector<float> gq(static_cast<std::size_t>(s.batch * s.seq * s.heads * s.head_dim)),
        gk(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * s.head_dim)),
        gv(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * s.value_dim));
    attention_backward_reference(s, L.q.gather(q, type).data(), L.k.gather(k, type).data(),
                                 L.v.gather(v, type).data(), L.o.gather(o, type).data(),
                                 L.o.gather(d_o, type).data(), gq.data(), gk.data(), gv.data());
    L.q.scatter(gq, dq, type);
    L.k.scatter(gk, dk, type);
    L.v.scatter(gv, dv, type);
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
  void require(const AttentionShape& s, DType type) {
    std::string reason;
    if (!supports(s, type, reason)) throw unsupported_error(reason);
  }
};

}  // namespace

std::unique_ptr<FusedAttention> make_reference_attention() {
  return std::make_unique<ReferenceAttention>();
}

}  // namespace fb::kernels
