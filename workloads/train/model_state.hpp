#pragma once
// The checkpointable state of a rank's model shard for the resilience layer (workloads/train_hooks.hpp):
// fp32 master weights and Adam moments of both regions, the replicated checksum and the fault injections.
#include <utility>

#include "workloads/train/model_weights.hpp"
#include "workloads/train_hooks.hpp"

namespace fb::workloads::train {

class ModelState final : public TrainStateAccess {
 public:
  ModelState(StepContext& c, ModelWeights& w) : c_(c), w_(w) {}
  std::uint64_t bytes() const override;
  void snapshot(std::span<std::byte> out) override;
  void restore(std::span<const std::byte> in) override;
  std::uint64_t replicated_checksum() override;
  void flip_bit(std::uint64_t bit_index) override;
  void poison_next_loss() override { poison_ = true; }
  // True once after poison_next_loss(): the step makes its loss NaN.
  bool take_poison() { return std::exchange(poison_, false); }

 private:
  void check_size(std::size_t n) const;
  StepContext& c_;
  ModelWeights& w_;
  bool poison_ = false;
};

}  // namespace fb::workloads::train
