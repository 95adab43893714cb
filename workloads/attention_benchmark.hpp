#pragma once
// The attention benchmark: fused causal attention forward and backward at one layer's shape, on every rank
// (kernels/attention_engine.hpp: cuDNN SDPA on cuda, the fp64 host reference on host), in TFLOP/s of
// Megatron's count (workloads/attention_flops.hpp), each direction timed by the one measurement loop over
// rotating buffer sets, and sampled rows checked against fp64 (workloads/attention_check.hpp). The step's
// blocked-GEMM attention needs the step around it: `train --attention-engine gemm` times it. Measures and
// returns data; never prints.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "core/telemetry_sampler.hpp"
#include "kernels/attention_engine.hpp"
#include "reports/report.hpp"
#include "workloads/device_peak.hpp"

namespace fb::workloads {

struct AttentionCase {
  std::string name;  // attention_case_name
  kernels::AttentionShape shape;
  DType dtype = DType::bf16;
  nlohmann::json params = nlohmann::json::object();  // extra params (model, tp)
};

// "bf16/b1/s8192/h32-kv8/d128", with "/v64" when the value head dim differs and "/full" without the mask.
std::string attention_case_name(const kernels::AttentionShape& s, DType dtype);

// Bytes of one buffer set: q, k, v, o, d_o, dq, dk, dv in `dtype` and the fp32 statistics.
std::uint64_t attention_set_bytes(const kernels::AttentionShape& s, DType dtype);

struct AttentionRunOptions {
  kernels::AttentionEngineChoice engine =
      kernels::AttentionEngineChoice::automatic;  // auto: cudnn / reference
  int iters = 20, warmup = 5;
  bool check = true;
  std::size_t check_rows = 16;  // (batch, token) rows recomputed in fp64, every head
  std::uint64_t seed = 42;
  TelemetrySampler* telemetry = nullptr;  // set: each result gets its own window's telemetry
  // Every rank, once the engine is chosen and before the first shape: its name (the console's engine line).
  std::function<void(const std::string& engine)> on_started;
  // Rank 0: each shape's result as it is made (the report so far, should the run be stopped).
  std::function<void(const reports::Result&)> on_result;
  // Tests only: called on buffer set 0 after its checked forward and backward (to corrupt the output).
  std::function<void(Backend&, DeviceBuffer& o, const kernels::AttentionShape&, DType)> after_run_hook;
};

struct AttentionRunOutput {
  std::vector<reports::Result> results;               // complete on rank 0
  nlohmann::json summary = nlohmann::json::object();  // rank 0: the report's summary
  std::string engine;                                 // "cudnn" or "reference"
};

// A usage Error for an engine the benchmark cannot time alone (gemm: it needs the training step around it).
// Pure: a suite's preflight calls it too.
void check_benchmark_attention_choice(kernels::AttentionEngineChoice choice);

// Why the engine `choice` names (auto: cudnn on cuda, reference on host) cannot run on a `kind` backend of
// this build, in this command's words (--engine); empty when it may (kernels::attention_engine_unsupported).
// Pure: a suite's preflight calls it with the backend named, a command alone with the one it started.
std::string benchmark_attention_unsupported(BackendKind kind, kernels::AttentionEngineChoice choice);

// The engine `choice` names on this backend (auto: cudnn on cuda, reference on host), agreed by every rank
// before anything is allocated; a usage Error for gemm, an unsupported Error (every rank) when a rank
// cannot run a case.
std::unique_ptr<kernels::FusedAttention> make_benchmark_attention(const MpiContext& mpi, Backend& backend,
                                                                  kernels::AttentionEngineChoice choice,
                                                                  std::span<const AttentionCase> cases);

// Throws a usage Error on every rank, before allocating, when one buffer set of a case cannot fit.
void check_attention_memory(const MpiContext& mpi, const Backend& backend,
                            std::span<const AttentionCase> cases);

// Collective: every rank runs every case in order; rank 0 gathers every rank's figures.
AttentionRunOutput run_attention_benchmark(const MpiContext& mpi, Backend& backend, const DevicePeak& peak,
                                           std::span<const AttentionCase> cases,
                                           const AttentionRunOptions& o);

}  // namespace fb::workloads
