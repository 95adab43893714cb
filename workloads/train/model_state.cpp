#include "workloads/train/model_state.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"

namespace fb::workloads::train {

std::uint64_t ModelState::bytes() const {
  return static_cast<std::uint64_t>(w_.dense.master_count() + w_.experts.master_count()) * 12;
}

void ModelState::check_size(std::size_t n) const {
  if (n != bytes())
    throw runtime_error(fmt::format("train state: buffer of {} bytes, expected {}", n, bytes()));
}

void ModelState::snapshot(std::span<std::byte> out) {
  check_size(out.size());
  std::size_t at = 0;
  for (Region* r : {&w_.dense, &w_.experts})
    for (DeviceBuffer* b : {&r->master, &r->m, &r->v}) {
      const std::size_t n = static_cast<std::size_t>(r->master_count()) * 4;
      if (n) c_.backend.copy_to_host(out.data() + at, *b, n);
      at += n;
    }
}

void ModelState::restore(std::span<const std::byte> in) {
  check_size(in.size());
  std::size_t at = 0;
  for (Region* r : {&w_.dense, &w_.experts}) {
    for (DeviceBuffer* b : {&r->master, &r->m, &r->v}) {
      const std::size_t n = static_cast<std::size_t>(r->master_count()) * 4;
      if (n) c_.backend.copy_to_device(*b, in.data() + at, n);
      at += n;
    }
    // Every rank restores at once (the resilience layer agrees first), so a sharded region all-gathers.
    if (r->count) weights_from_master(c_, *r, region_group(c_, w_, *r));
  }
  c_.backend.synchronize();
}

// The dense master weights, which DP replicas hold identically. A sharded optimizer leaves no replicated
// master copy; its whole step-dtype weights are then what the replicas share.
std::uint64_t ModelState::replicated_checksum() {
  const bool sharded = w_.dense.shards.shards() > 1;
  const std::size_t bytes = static_cast<std::size_t>(w_.dense.count) * (sharded ? c_.e : 4);
  std::vector<std::byte> host(bytes);
  c_.backend.copy_to_host(host.data(), sharded ? w_.dense.param : w_.dense.master, bytes);
  return XXH3_64bits(host.data(), bytes);
}

// A bit of this rank's dense master weights (with a sharded optimizer, of its shard), and the working copy
// of that weight.
void ModelState::flip_bit(std::uint64_t bit_index) {
  const std::uint64_t bits = static_cast<std::uint64_t>(w_.dense.master_count()) * 32;
  const std::uint64_t b = bit_index % bits;
  const std::size_t element = static_cast<std::size_t>(b / 32);
  std::size_t param_element = element;
  if (w_.dense.shards.shards() > 1)
    for (const auto& p : w_.dense.shards.owned())
      if (static_cast<std::int64_t>(element) >= p.local &&
          static_cast<std::int64_t>(element) < p.local + p.count)
        param_element = static_cast<std::size_t>(p.global + (static_cast<std::int64_t>(element) - p.local));
  std::uint32_t word = 0;
  c_.backend.copy_to_host(&word, w_.dense.master, 4, element * 4);
  word ^= 1u << (b % 32);
  c_.backend.copy_to_device(w_.dense.master, &word, 4, element * 4);
  float value;
  std::memcpy(&value, &word, 4);
  // The working copy in the step dtype follows the master weight.
  std::vector<std::byte> converted(c_.e);
  if (c_.dt == DType::fp32) {
    std::memcpy(converted.data(), &value, 4);
  } else {
    const std::uint16_t bf = fb::float_to_bf16(value);
    std::memcpy(converted.data(), &bf, 2);
  }
  c_.backend.copy_to_device(w_.dense.param, converted.data(), c_.e, param_element * c_.e);
  c_.backend.synchronize();
}

}  // namespace fb::workloads::train
