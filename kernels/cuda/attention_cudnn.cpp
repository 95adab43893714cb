// cuDNN SDPA forward and backward. One cuDNN graph per (direction, shape, type), built on first use and
// cached: building runs cuDNN's heuristics and compiles kernels (milliseconds to seconds), executing a built
// graph is one launch sequence. The tensors are described in the engine layout ([batch, seq, heads, dim],
// heads side by side in a token row) through strides over cuDNN's logical [batch, heads, seq, dim] order,
// so no transposes are needed. The causal mask is cuDNN's diagonal band with the diagonal at the top left
// and right bound 0 (query i sees keys j <= i). Stats are the per-row log-sum-exp the backward pass needs.
// fp8_e4m3 runs cuDNN's per-tensor-scaled fp8 SDPA (sdpa_fp8 / sdpa_fp8_backward; Hopper needs head dim 128):
// every scale, descale and amax is a one-float tensor at its place in the fp8 scaling block.
// API: NVIDIA cudnn-frontend, docs/operations/Attention.md and samples/cpp/sdpa (fp8_fwd, fp8_bwd).
#include "kernels/cuda/attention_cudnn.hpp"

#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/cuda_check.hpp"
#include "core/cudnn_library.hpp"
#include "core/error.hpp"

// The frontend's dynamic loading (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING) resolves cuDNN symbols from this
// handle, set from core/cudnn_library.cpp's dlopen before any graph is built.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}  // namespace cudnn_frontend

namespace fb::kernels {
namespace {

namespace fe = cudnn_frontend;

// Tensor ids in a graph's variant pack; fp8 scaling values from kScaling on, one per block slot.
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV, kScaling = 100 };
std::int64_t scaling_uid(Fp8Tensor t, Fp8Field f) {
  return kScaling + static_cast<std::int64_t>(fp8_slot(t, f) / kFp8SlotFloats);
}

// The scaling values each direction reads (r) and writes (amax), as cuDNN's fp8 SDPA takes them.
using T8 = Fp8Tensor;
using F8 = Fp8Field;
constexpr std::pair<T8, F8> kForwardScaling[] = {
    {T8::q, F8::descale}, {T8::k, F8::descale}, {T8::v, F8::descale}, {T8::s, F8::descale},
    {T8::s, F8::scale},   {T8::o, F8::scale},   {T8::s, F8::amax},    {T8::o, F8::amax}};
constexpr std::pair<T8, F8> kBackwardScaling[] = {
    {T8::q, F8::descale},   {T8::k, F8::descale}, {T8::v, F8::descale},  {T8::o, F8::descale},
    {T8::d_o, F8::descale}, {T8::s, F8::descale}, {T8::dp, F8::descale}, {T8::s, F8::scale},
    {T8::dq, F8::scale},    {T8::dk, F8::scale},  {T8::dv, F8::scale},   {T8::dp, F8::scale},
    {T8::dq, F8::amax},     {T8::dk, F8::amax},   {T8::dv, F8::amax},    {T8::dp, F8::amax}};

struct GraphKey {
  bool backward;
  std::int64_t batch, seq, heads, kv_heads, head_dim, value_dim, q_row, k_row, v_row, o_row;
  bool causal;
  std::uint32_t scale_bits;
  DType type;
  auto tie() const {
    return std::tie(backward, batch, seq, heads, kv_heads, head_dim, value_dim, q_row, k_row, v_row, o_row,
                    causal, scale_bits, type);
  }
  bool operator<(const GraphKey& o) const { return tie() < o.tie(); }
};

GraphKey key_of(bool backward, const AttentionShape& s, DType type) {
  return {backward,
          s.batch,
          s.seq,
          s.heads,
          s.kv_heads,
          s.head_dim,
          s.value_dim,
          s.q_row_stride(),
          s.k_row_stride(),
          s.v_row_stride(),
          s.o_row_stride(),
          s.causal,
          std::bit_cast<std::uint32_t>(s.scale),
          type};
}

fe::DataType_t io_type(DType type) {
  if (type == DType::bf16) return fe::DataType_t::BFLOAT16;
  if (type == DType::fp16) return fe::DataType_t::HALF;
  if (type == DType::fp8_e4m3) return fe::DataType_t::FP8_E4M3;
  throw unsupported_error("cuDNN attention supports bf16, fp16 and fp8_e4m3, not " +
                          std::string(to_string(type)));
}

// Logical dims [batch, heads, seq, dim] with the strides of the [batch, seq, heads, dim] memory layout whose
// token rows are `row` elements apart.
fe::graph::Tensor_attributes bshd(const char* name, Uid uid, const AttentionShape& s, std::int64_t heads,
                                  std::int64_t dim, std::int64_t row) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({s.batch, heads, s.seq, dim})
      .set_stride({s.seq * row, dim, row, 1});
}
// Stats: [batch, heads, seq, 1] fp32, dense.
fe::graph::Tensor_attributes stats_tensor(const AttentionShape& s) {
  return fe::graph::Tensor_attributes()
      .set_name("stats")
      .set_uid(kStats)
      .set_dim({s.batch, s.heads, s.seq, 1})
      .set_stride({s.heads * s.seq, s.seq, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
}

// One fp32 value of the fp8 scaling block: [1, 1, 1, 1].
fe::graph::Tensor_attributes scaling_tensor(Fp8Tensor t, Fp8Field f) {
  return fe::graph::Tensor_attributes()
      .set_name("fp8_scaling_" + std::to_string(fp8_slot(t, f) / kFp8SlotFloats))
      .set_uid(scaling_uid(t, f))
      .set_dim({1, 1, 1, 1})
      .set_stride({1, 1, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
}

using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

// Marks a graph output and gives it `layout`'s uid, dims and strides, and its data type where set.
void place(const TensorPtr& x, const fe::graph::Tensor_attributes& layout) {
  x->set_output(true).set_uid(layout.get_uid()).set_dim(layout.get_dim()).set_stride(layout.get_stride());
  if (layout.get_data_type() != fe::DataType_t::NOT_SET) x->set_data_type(layout.get_data_type());
}

template <typename Attributes>
void set_mask(Attributes& a, const AttentionShape& s) {
  if (s.causal) a.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
}

// Throws with cuDNN's message when a frontend step failed: while building, cuDNN cannot run the shape
// (unsupported); while executing, the call failed (runtime).
void check(fe::error_t status, const char* step, ErrorKind kind = ErrorKind::unsupported) {
  if (status.is_bad())
    throw Error(kind, std::string("cuDNN attention: ") + step + ": " + status.get_message());
}

void place_gradients(const AttentionShape& s, const TensorPtr& dq, const TensorPtr& dk, const TensorPtr& dv) {
  place(dq, bshd("dq", kDQ, s, s.heads, s.head_dim, s.q_row_stride()));
  place(dk, bshd("dk", kDK, s, s.kv_heads, s.head_dim, s.k_row_stride()));
  place(dv, bshd("dv", kDV, s, s.kv_heads, s.value_dim, s.v_row_stride()));
}

// cuDNN's fp8 SDPA: the same layouts, with the scaling values as inputs and the amax as outputs.
void build_fp8(fe::graph::Graph& g, bool backward, const AttentionShape& s, const TensorPtr& q,
               const TensorPtr& k, const TensorPtr& v) {
  auto in = [&](T8 t, F8 f) { return g.tensor(scaling_tensor(t, f)); };
  auto out = [&](const TensorPtr& amax, T8 t) { place(amax, scaling_tensor(t, F8::amax)); };
  if (!backward) {
    auto a = fe::graph::SDPA_fp8_attributes()
                 .set_name("sdpa_fp8_forward")
                 .set_generate_stats(true)
                 .set_attn_scale(s.scale);
    set_mask(a, s);
    auto [o, stats, amax_s, amax_o] =
        g.sdpa_fp8(q, k, v, in(T8::q, F8::descale), in(T8::k, F8::descale), in(T8::v, F8::descale),
                   in(T8::s, F8::descale), in(T8::s, F8::scale), in(T8::o, F8::scale), a);
    place(o, bshd("o", kO, s, s.heads, s.value_dim, s.o_row_stride()));
    place(stats, stats_tensor(s));
    out(amax_s, T8::s);
    out(amax_o, T8::o);
    return;
  }
  auto o = g.tensor(bshd("o", kO, s, s.heads, s.value_dim, s.o_row_stride()));
  auto d_o = g.tensor(bshd("d_o", kDO, s, s.heads, s.value_dim, s.o_row_stride()));
  auto stats = g.tensor(stats_tensor(s));
  auto a = fe::graph::SDPA_fp8_backward_attributes().set_name("sdpa_fp8_backward").set_attn_scale(s.scale);
  set_mask(a, s);
  auto [dq, dk, dv, amax_dq, amax_dk, amax_dv, amax_dp] = g.sdpa_fp8_backward(
      q, k, v, o, d_o, stats, in(T8::q, F8::descale), in(T8::k, F8::descale), in(T8::v, F8::descale),
      in(T8::o, F8::descale), in(T8::d_o, F8::descale), in(T8::s, F8::descale), in(T8::dp, F8::descale),
      in(T8::s, F8::scale), in(T8::dq, F8::scale), in(T8::dk, F8::scale), in(T8::dv, F8::scale),
      in(T8::dp, F8::scale), a);
  place_gradients(s, dq, dk, dv);
  out(amax_dq, T8::dq);
  out(amax_dk, T8::dk);
  out(amax_dv, T8::dv);
  out(amax_dp, T8::dp);
}

// The graph of one direction for `s` in `type`, described (no handle: nothing built yet). `impl`: which of
// the frontend's SDPA forward implementations (the bf16/fp16 forward only). `sm`: the compute capability to
// check the graph against (Graph::set_sm_version) instead of the current device's; 0: the device's.
std::shared_ptr<fe::graph::Graph> describe(bool backward, const AttentionShape& s, DType type,
                                           fe::AttentionImplementation_t impl, int sm = 0) {
  auto g = std::make_shared<fe::graph::Graph>();
  if (sm > 0) g->set_sm_version(sm);
  g->set_io_data_type(io_type(type))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  auto q = g->tensor(bshd("q", kQ, s, s.heads, s.head_dim, s.q_row_stride()));
  auto k = g->tensor(bshd("k", kK, s, s.kv_heads, s.head_dim, s.k_row_stride()));
  auto v = g->tensor(bshd("v", kV, s, s.kv_heads, s.value_dim, s.v_row_stride()));
  if (type == DType::fp8_e4m3)
    build_fp8(*g, backward, s, q, k, v);
  else if (!backward) {
    auto a = fe::graph::SDPA_attributes()
                 .set_name("sdpa_forward")
                 .set_generate_stats(true)
                 .set_attn_scale(s.scale)
                 .set_implementation(impl);
    set_mask(a, s);
    auto [o, stats] = g->sdpa(q, k, v, a);
    place(o, bshd("o", kO, s, s.heads, s.value_dim, s.o_row_stride()));
    place(stats, stats_tensor(s));
  } else {
    auto o = g->tensor(bshd("o", kO, s, s.heads, s.value_dim, s.o_row_stride()));
    auto d_o = g->tensor(bshd("d_o", kDO, s, s.heads, s.value_dim, s.o_row_stride()));
    auto stats = g->tensor(stats_tensor(s));
    auto a = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(s.scale);
    set_mask(a, s);
    auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, d_o, stats, a);
    place_gradients(s, dq, dk, dv);
  }
  return g;
}

// Points the frontend's dynamic loading at core/cudnn_library's libcudnn (unsupported where it did not load).
void point_frontend_at_cudnn() {
  const auto& lib = cudnn_library();
  if (!lib.handle) throw unsupported_error("cuDNN did not load: " + lib.error);
  fe::cudnn_dlhandle = lib.handle;
  // The frontend dlopens the CUDA runtime too, trying libcudart.so.12 and .13; name the one this build
  // links (it is already loaded, so dlopen returns it) unless the user chose one.
  setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", ("libcudart.so." + std::to_string(CUDART_VERSION / 1000)).c_str(),
         0);
}

class CudnnAttention final : public FusedAttention {
 public:
  explicit CudnnAttention(Backend& backend)
      : backend_(backend), stream_(static_cast<cudaStream_t>(backend.native_stream())) {
    try {
      open();
    } catch (...) {  // no destructor runs for a constructor that throws
      if (handle_) fe::detail::destroy_handle(handle_);
      throw;
    }
  }
  ~CudnnAttention() override {
    graphs_.clear();  // the cached plans were built on the handle: they go first
    if (handle_) fe::detail::destroy_handle(handle_);
  }
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  std::string_view name() const override { return "cudnn"; }

  bool supports(const AttentionShape& s, DType type, std::string& reason) override {
    try {
      graph(false, s, type);
      graph(true, s, type);
      return true;
    } catch (const Error& e) {
      reason = e.what();
      return false;
    }
  }

  void forward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v, void* o,
               float* stats, float* fp8_scaling) override {
    const auto& g = graph(false, s, type);
    std::unordered_map<std::int64_t, void*> pack{{kQ, const_cast<void*>(q)},
                                                 {kK, const_cast<void*>(k)},
                                                 {kV, const_cast<void*>(v)},
                                                 {kO, o},
                                                 {kStats, stats}};
    add_scaling(pack, type, fp8_scaling, kForwardScaling);
    execute(g, pack);
  }

  void backward(const AttentionShape& s, DType type, const void* q, const void* k, const void* v,
                const void* o, const void* d_o, const float* stats, void* dq, void* dk, void* dv,
                float* fp8_scaling) override {
    const auto& g = graph(true, s, type);
    std::unordered_map<std::int64_t, void*> pack{{kQ, const_cast<void*>(q)},
                                                 {kK, const_cast<void*>(k)},
                                                 {kV, const_cast<void*>(v)},
                                                 {kO, const_cast<void*>(o)},
                                                 {kDO, const_cast<void*>(d_o)},
                                                 {kStats, const_cast<float*>(stats)},
                                                 {kDQ, dq},
                                                 {kDK, dk},
                                                 {kDV, dv}};
    add_scaling(pack, type, fp8_scaling, kBackwardScaling);
    execute(g, pack);
  }

 private:
  using Graph = std::shared_ptr<fe::graph::Graph>;

  // Loads cuDNN and makes the handle on the backend's stream. The frontend resolves each cuDNN symbol when
  // first called and throws std::runtime_error where one is missing (a partial or mismatched libcudnn): that
  // becomes an unsupported engine, so `--attention-engine auto` falls back to the blocked GEMMs on every rank
  // alike instead of ending one rank with an unhandled exception.
  void open() try {
    point_frontend_at_cudnn();
    if (fe::detail::create_handle(&handle_) != CUDNN_STATUS_SUCCESS)
      throw unsupported_error("cuDNN attention: cudnnCreate failed (no usable GPU for cuDNN)");
    if (fe::detail::set_stream(handle_, stream_) != CUDNN_STATUS_SUCCESS)
      throw runtime_error("cuDNN attention: cudnnSetStream failed");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw unsupported_error(std::string("cuDNN attention: ") + e.what());
  }

  template <std::size_t N>
  static void add_scaling(std::unordered_map<std::int64_t, void*>& pack, DType type, float* block,
                          const std::pair<T8, F8> (&values)[N]) {
    const bool fp8 = type == DType::fp8_e4m3;
    if (fp8 != (block != nullptr))
      throw runtime_error(fp8 ? "cuDNN attention: fp8 needs the fp8 scaling block"
                              : "cuDNN attention: the fp8 scaling block is for fp8 only");
    if (!fp8) return;
    for (const auto& [t, f] : values) pack[scaling_uid(t, f)] = block + fp8_slot(t, f);
  }

  const Graph& graph(bool backward, const AttentionShape& s, DType type) {
    check_attention_shape(s);
    const GraphKey key = key_of(backward, s, type);
    if (auto it = graphs_.find(key); it != graphs_.end()) return it->second;
    Graph g;
    try {
      g = build_checked(backward, s, type, fe::AttentionImplementation_t::AUTO);
    } catch (const Error& first) {
      // The frontend's AUTO takes its UNIFIED forward wherever that node's support surface allows it (cuDNN
      // >= 9.13.1, bf16/fp16), judged by the library's version, not by the engines this GPU has; where none
      // builds a plan, the COMPOSITE forward may. The first error is the one reported if neither does.
      if (backward || type == DType::fp8_e4m3 || first.kind() != ErrorKind::unsupported) throw;
      try {
        g = build_checked(backward, s, type, fe::AttentionImplementation_t::COMPOSITE);
      } catch (const Error&) {
        throw first;
      }
    }
    return graphs_.emplace(key, std::move(g)).first->second;
  }

  Graph build_checked(bool backward, const AttentionShape& s, DType type,
                      fe::AttentionImplementation_t impl) {
    try {
      return build(backward, s, type, impl);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {  // the frontend throws on loader and descriptor failures
      throw unsupported_error(std::string("cuDNN attention: ") + e.what());
    }
  }

  Graph build(bool backward, const AttentionShape& s, DType type, fe::AttentionImplementation_t impl) {
    return finish(describe(backward, s, type, impl));
  }

  Graph finish(const Graph& g) {
    check(g->validate(), "validate");
    check(g->build_operation_graph(handle_), "build_operation_graph");
    check(g->create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
    check(g->check_support(handle_), "check_support");
    check(g->build_plans(handle_), "build_plans");
    std::int64_t workspace = 0;
    check(g->get_workspace_size(workspace), "get_workspace_size");
    if (static_cast<std::size_t>(workspace) > workspace_.bytes()) workspace_ = backend_.allocate(workspace);
    return g;
  }

  void execute(const Graph& g, std::unordered_map<std::int64_t, void*>& pack) {
    try {
      check(g->execute(handle_, pack, workspace_.data()), "execute", ErrorKind::runtime);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {  // a symbol the frontend resolves lazily from libcudnn
      throw runtime_error(std::string("cuDNN attention: execute: ") + e.what());
    }
  }

  Backend& backend_;
  cudaStream_t stream_;
  cudnnHandle_t handle_ = nullptr;
  std::map<GraphKey, Graph> graphs_;
  DeviceBuffer workspace_;  // the largest workspace any cached graph needs
};

}  // namespace

std::string cudnn_attention_graph_check(const AttentionShape& s, DType type, int sm) {
  check_attention_shape(s);
  point_frontend_at_cudnn();
  // As the engine builds them: each direction with the frontend's choice of implementation, the forward
  // also with COMPOSITE where that choice fails.
  const auto failure = [&](bool backward, fe::AttentionImplementation_t impl) -> std::string {
    try {
      auto status = describe(backward, s, type, impl, sm)->validate();
      return status.is_good() ? std::string() : status.get_message();
    } catch (const Error& e) {
      return e.what();
    } catch (const std::exception& e) {  // the frontend throws on loader failures
      return std::string("cuDNN frontend: ") + e.what();
    }
  };
  std::string forward = failure(false, fe::AttentionImplementation_t::AUTO);
  if (!forward.empty() && type != DType::fp8_e4m3 &&
      failure(false, fe::AttentionImplementation_t::COMPOSITE).empty())
    forward.clear();
  if (!forward.empty()) return "forward: " + forward;
  if (auto backward = failure(true, fe::AttentionImplementation_t::AUTO); !backward.empty())
    return "backward: " + backward;
  return {};
}

std::unique_ptr<FusedAttention> make_cudnn_attention(Backend& backend) {
  if (backend.kind() != BackendKind::cuda) throw unsupported_error("cuDNN attention needs the cuda backend");
  return std::make_unique<CudnnAttention>(backend);
}

}  // namespace fb::kernels
