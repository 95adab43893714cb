#pragma once
// What every part of one rank's training step shares: the run's shapes, the backend with its GEMM engine and
// train kernels (the seam to host/cuda code), the parallel groups, the breakdown timer, the ledger of
// collective bytes, the allocation counter and the shared gradient workspace. The layers, the MoE dispatch,
// the optimizer and the pipeline transfers (workloads/train/*) all work through it.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "kernels/gemm_engine.hpp"
#include "kernels/train_kernels.hpp"
#include "workloads/train/parallel_groups.hpp"
#include "workloads/train/step_breakdown.hpp"
#include "workloads/train_step.hpp"

namespace fb::workloads::train {

// Collective calls and the bytes they pass (per rank), by name ("dp_allreduce/grads").
struct CollectiveTally {
  std::map<std::string, double> bytes, calls;
};

// Buffers every layer borrows (T × widest width, the step dtype): tmp holds a sublayer's partial output;
// g_a, g_b, g_c carry gradients through the backward pass (conventions at each layer's backward).
struct Workspace {
  DeviceBuffer tmp, g_a, g_b, g_c;
};

class StepContext {
 public:
  StepContext(const TrainOptions& o, const TrainPlan& plan, MpiContext& mpi, Backend& backend);

  const TrainOptions& o;
  const TrainPlan& plan;
  const ModelConfig& m;
  const LocalDims& l;
  Backend& backend;
  const DType dt;
  const std::size_t e;  // bytes per activation element
  const RankCoords coords;
  const bool sp;            // sequence parallelism in effect (tp > 1)
  const std::int64_t rows;  // residual-stream rows this rank holds: T, or T/tp with sequence parallelism
  const std::int64_t row0;  // the first of them
  const int host_threads;   // this rank's share of the host's cores (weight initialisation), at least 1
  std::unique_ptr<kernels::GemmEngine> gemm_engine;
  std::unique_ptr<kernels::TrainKernels> k;
  ParallelGroups groups;
  StepTimer timer;
  CollectiveTally collectives;  // this step
  Workspace ws;
  std::uint64_t allocated = 0;  // bytes this rank allocated
  // True while a layer's forward runs again for its backward (--recompute full): per-step statistics
  // (MoE routing counts) are not counted twice; collective bytes are, since the traffic is real.
  bool recomputing = false;

  // --- memory
  DeviceBuffer alloc(std::int64_t elements, std::size_t element_bytes);
  DeviceBuffer act(std::int64_t elements) { return alloc(elements, e); }  // in the step dtype
  std::int64_t elem() const { return static_cast<std::int64_t>(e); }
  void* at(const DeviceBuffer& b, std::int64_t elements) const { return at(b.data(), elements); }
  void* at(void* p, std::int64_t elements) const { return static_cast<char*>(p) + elements * elem(); }
  const void* at(const void* p, std::int64_t elements) const {
    return static_cast<const char*>(p) + elements * elem();
  }
  // This rank's rows of a T×h (token-major) buffer: all of them, or T/tp with sequence parallelism.
  void* my_rows(void* p) const { return at(p, row0 * m.hidden); }
  const void* my_rows(const void* p) const { return at(p, row0 * m.hidden); }
  void* my_rows(const DeviceBuffer& b) const { return my_rows(b.data()); }

  // --- compute
  bool swiglu() const { return m.activation == Activation::swiglu; }
  void mark(Cat c) { timer.mark(c); }
  // Column-major GEMM in the step dtype (kernels/gemm_engine.hpp); empty problems are skipped.
  void gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, const void* a, std::int64_t lda,
            const void* b, std::int64_t ldb, void* c, std::int64_t ldc, double beta, std::int64_t batch = 1,
            std::int64_t sa = 0, std::int64_t sb = 0, std::int64_t sc = 0);
  void copy(void* dst, const void* src, std::int64_t elements);

  // --- tensor parallelism
  // Sum of the TP ranks' partial T×h outputs (buf): all-reduce, or with sequence parallelism a
  // reduce-scatter that leaves this rank's rows, summed, at my_rows(buf) (in place), or at `rows_out`
  // (rows × h) when given.
  void tp_reduce(void* buf, const char* what, void* rows_out = nullptr);
  // Sequence parallelism: in-place all-gather of every TP rank's rows of a T×h buffer (no-op otherwise).
  void tp_gather(void* buf, const char* what);
  // One call of collective `name` that passes `bytes` (per rank, as the plan's collectives list them).
  void count_collective(const std::string& name, double bytes) {
    collectives.bytes[name] += bytes;
    collectives.calls[name] += 1;
  }
};

}  // namespace fb::workloads::train
