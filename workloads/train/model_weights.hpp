#pragma once
// A rank's shard of the model's parameters: where each tensor lives, how it is seeded, and the linear-layer
// GEMMs on it (forward, input gradient, weight gradient).
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "workloads/train/optimizer_shards.hpp"
#include "workloads/train/step_context.hpp"
#include "workloads/train/tp_placement.hpp"

namespace fb::workloads::train {

// One parameter region (dense: replicated over DP; experts: over expert-DP): weights and gradients in the
// step dtype, fp32 master weights and Adam moments. With --distributed-optimizer the master weights and
// moments hold only this rank's shard (`shards.local_count()` elements, packed in bucket order).
struct Region {
  std::int64_t count = 0;
  DeviceBuffer param, grad, master, m, v;
  struct Tensor {
    std::int64_t offset, in, out;
    bool tp_replicated;  // identical on every TP rank (router, norms, MLA down projections)
    bool ones;           // a norm's gain: starts at 1
    TpPlacement place;   // where this in×out block lies in the whole tensor (seeded by its place there)
  };
  std::vector<Tensor> tensors;
  // Element offset where each layer's tensors begin, then an end sentinel for the layers, then the end of
  // the output layer (and final norm). On the first stage the embedding table lies before layer_begin[0].
  std::vector<std::int64_t> layer_begin;
  // Seed id of each tensor: set `next_id` per model layer so that a tensor's initial values depend on its
  // place in the model, not on how pipeline stages split the layers.
  std::vector<std::uint64_t> seed_ids;
  std::uint64_t next_id = 0;
  // The gradient buckets, in layout order (workloads/train/gradient_reduction.hpp), and how the optimizer
  // state is split over the region's data-parallel group (one shard without --distributed-optimizer).
  std::vector<GradBucket> buckets;
  RegionShards shards;
  // A tensor this rank holds whole (`tp_replicated`: on every TP rank alike), or its TP block of a whole
  // tensor (`place`, whose columns must number `out`).
  std::int64_t add(std::int64_t in, std::int64_t out, bool tp_replicated = false);
  std::int64_t add(std::int64_t in, std::int64_t out, TpPlacement place);
  std::int64_t add_norm(std::int64_t width);  // an RMSNorm gain (1 × width, replicated over TP, ones)
  // Ends the bucket that began where the last one ended (nothing when no tensor was added since), padded
  // so that it splits over `shard_count` ranks (optimizer_shards.hpp).
  void close_bucket(int shard_count);
  // Elements of the master weights and moments this rank holds.
  std::int64_t master_count() const { return shards.shards() > 1 ? shards.local_count() : count; }
  const Tensor& at(std::int64_t t) const { return tensors[static_cast<std::size_t>(t)]; }
};

// Tensor indices of one layer (-1: absent). MoE layers index their first local expert's up projection in
// the expert region; expert e's up and down projections are expert_up + 2e and expert_up + 2e + 1.
struct LayerWeights {
  std::int64_t attn_norm = -1, mlp_norm = -1;  // the pre-norms of the attention and feed-forward sublayers
  std::int64_t qkv = -1, attn_out = -1, mlp_up = -1, mlp_down = -1, router = -1, shared_up = -1,
               shared_down = -1;
  std::int64_t q_down = -1, q_up = -1, q = -1, kv_down = -1, kv_up = -1;  // MLA (q: q_lora_rank 0)
  std::int64_t q_norm = -1, kv_norm = -1;                                 // MLA latent norms
  std::int64_t expert_up = -1;
  bool moe = false;
};

struct ModelWeights {
  Region dense, experts;
  std::vector<LayerWeights> layers;  // this pipeline stage's layers
  std::int64_t embedding = -1;       // the input embedding, vocabulary split over TP (first stage only)
  std::int64_t final_norm = -1;      // the norm before the output layer (last stage only)
  std::int64_t logits = -1;          // the output layer (last stage only)
};

// Lays out this stage's layers (global indices first_layer…), with the embedding on the first stage and the
// final norm and output layer on the last, in gradient buckets of --bucket-layers layers, and initialises
// them: weights ~ ±[1/16, 1]/√in (in of the whole tensor), each element seeded by the tensor's place in the
// model and the element's place in the whole tensor, so that neither --tp, --pp nor --ep changes the model
// (experts by their global index); norm gains 1; moments zero. Collective over the DP groups with
// --distributed-optimizer (each rank fills its shard, the weights are all-gathered).
ModelWeights make_model_weights(StepContext& c, std::int64_t first_layer, bool first_stage, bool last_stage);

// Linear layer with W stored in×out (column-major, lda = in), activations token-major (width×rows): token
// rows ld_x / ld_y elements apart (0 = packed: in or out), so a layer can read or write a column block of a
// wider buffer (the fused QKV output, the MLA latent).
const void* weight(const StepContext& c, const Region& r, std::int64_t t);
void* weight_grad(const StepContext& c, Region& r, std::int64_t t);
// y = Wᵀx (+ beta·y).
void linear_forward(StepContext& c, const Region& r, std::int64_t t, const void* x, std::int64_t rows,
                    void* y, double beta = 0, std::int64_t ld_x = 0, std::int64_t ld_y = 0);
// dx = W·dy (+ beta·dx).
void linear_dgrad(StepContext& c, const Region& r, std::int64_t t, const void* dy, std::int64_t rows,
                  void* dx, double beta = 0, std::int64_t ld_dy = 0, std::int64_t ld_dx = 0);
// dW += x·dyᵀ.
void linear_wgrad(StepContext& c, Region& r, std::int64_t t, const void* x, const void* dy, std::int64_t rows,
                  std::int64_t ld_x = 0, std::int64_t ld_dy = 0);

// The communicator a region's gradients are reduced over (dense: DP; experts: expert-DP) and its size.
Communicator* region_group(StepContext& c, const ModelWeights& w, const Region& r);
// Sharded regions: all-gathers every bucket's parts of the step-dtype weights so each rank holds all of
// them (counted as the step's collective `name`, unless null: set-up and restores are not a step's
// traffic). Collective over the region's group; nothing for an unsharded region.
void allgather_weights(StepContext& c, Region& r, Communicator& group, const char* name);
// The step-dtype weights from this rank's master weights (its shard, or all of them), then all-gathered
// over `group` (may be null for a region without one). Initialisation and restores.
void weights_from_master(StepContext& c, Region& r, Communicator* group);

}  // namespace fb::workloads::train
