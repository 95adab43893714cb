#pragma once
// The GEMM benchmark: achieved matrix throughput per rank, MFU against the dtype's peak, a correctness
// check against an fp64 reference, and the slow-rank detector. Measures and returns data; never prints.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "core/telemetry_sampler.hpp"
#include "kernels/gemm_engine.hpp"
#include "kernels/host/gemm_reference.hpp"
#include "reports/report.hpp"
#include "workloads/device_peak.hpp"
#include "workloads/model_config.hpp"

namespace fb::workloads {

// One measured shape: a result named `name` ("fp32/4096x4096x4096", "llama3-70b/tp8/mlp_down/fwd").
struct GemmCase {
  std::string name;
  kernels::GemmProblem problem;                      // dtype set
  nlohmann::json params = nlohmann::json::object();  // extra params (model, role, pass, tp)
};

// "4096", "8K", a list "1024,2048" or a range "1024:8192:1024" (start:stop:step, stop included); each value
// once, in the order first given. `option` names the flag in errors; every value must be positive.
std::vector<std::int64_t> parse_gemm_dims(const std::string& text, const std::string& option);

// Default layout for a dtype: "TN" (A transposed) for fp8, which cuBLASLt requires; "NN" otherwise.
bool default_transa(DType dtype);

// "bf16/4096x4096x4096", with "/batch8" when batched and "/TN" when the layout is not the dtype's default.
std::string gemm_case_name(const kernels::GemmProblem& problem);

// Every combination of the listed dims (m outermost).
std::vector<GemmCase> gemm_cases_from_dims(DType dtype, std::span<const std::int64_t> ms,
                                           std::span<const std::int64_t> ns, std::span<const std::int64_t> ks,
                                           std::int64_t batch, bool transa, bool transb);

struct ModelShapeRequest {
  std::int64_t tp = 1;
  std::int64_t seq = 0;  // 0 = the model's
  std::int64_t micro_batch = 1;
};
// One case per GEMM of one layer of `model` (workloads/layer_gemm_shapes.hpp). fp8 runs every GEMM in the
// TN layout it needs (same m, n, k), as Transformer Engine does by transposing its fp8 copies.
std::vector<GemmCase> gemm_cases_for_model(const ModelConfig& model, const ModelShapeRequest& request,
                                           DType dtype);

// Bytes of one set of A, B and C for a case.
std::uint64_t gemm_set_bytes(const kernels::GemmProblem& problem);

struct GemmRunOptions {
  int iters = 20;
  int warmup = 5;
  int autotune = 8;  // cuda: heuristic candidates timed per shape
  bool check = true;
  double outlier_threshold = 0.05;  // fraction below the median tflops that marks a rank slow
  std::uint64_t seed = 42;
  std::size_t check_samples = 128;  // output elements compared with the fp64 reference
  // When set, each result gets the telemetry of its own shape's window (extra.telemetry), not the run's.
  TelemetrySampler* telemetry = nullptr;
  // Every rank, once the engine is chosen and before the first shape: its name, and whether it emulates the
  // dtype (the console's engine line).
  std::function<void(const std::string& engine, bool emulated)> on_started;
  // Rank 0: each shape's result as it is made (the report so far, should the run be stopped).
  std::function<void(const reports::Result&)> on_result;
  // Tests only: called on one buffer set's C after its final run and before the check (to corrupt it).
  std::function<void(Backend&, DeviceBuffer& c, const kernels::GemmProblem&)> after_run_hook;
};

struct SlowRank {
  int rank = 0;
  std::string host;
  std::string result;  // the case it was slow in
  double tflops = 0, median_tflops = 0;
  double slower_by = 0;  // fraction below the median
};

struct GemmRunOutput {
  std::vector<reports::Result> results;  // complete on rank 0; other ranks hold their own figures
  std::vector<SlowRank> slow_ranks;      // rank 0
  // Rank 0: the nodes whose ranks share cores or GPUs ("vm: 4 ranks share 2 cores", shared_compute.hpp).
  // Where any do, the ranks below the median go to `below_median`, not `slow_ranks`: they take turns there.
  std::vector<std::string> cores_shared;
  std::vector<SlowRank> below_median;
  nlohmann::json summary = nlohmann::json::object();  // rank 0: the report's summary["gemm"]
  std::string engine;  // engine name ("cublaslt", "openblas cblas_sgemm (bf16 emulated)")
  bool emulated = false;
};

// One rank's measurement of one case (the gemm benchmark's, and health's GEMM check): buffer sets rotated
// past the last-level cache (BackendDefaults::gemm.cache_bytes), the engine prepared on set 0, the
// measurement loop, then set 0 recomputed and sampled against the fp64 reference when options.check.
struct GemmMeasurement {
  std::vector<double> seconds;  // per timed iteration
  double cpu_seconds = 0;       // process CPU time of the timed iterations (Measurement::cpu_seconds)
  kernels::GemmPlanInfo plan;
  int sets = 0;
  kernels::GemmCheck check;
  bool checked = false;
  std::optional<double> timed_from_s, timed_to_s;  // options.telemetry marks around the timed iterations
};
// `on_iteration` (may be empty): MeasureLoop::on_iteration, for progress inside the case.
GemmMeasurement measure_gemm_case(const MpiContext& mpi, Backend& backend, kernels::GemmEngine& engine,
                                  const GemmCase& gc, const GemmRunOptions& options, std::size_t case_index,
                                  const std::function<void(int, int)>& on_iteration = {});

// C = A·B sampled at `samples` outputs (positions from `seed`) against the fp64 reference on the host:
// what the benchmark checks after its runs, for any caller that ran the engine on these buffers.
kernels::GemmCheck check_gemm_output(Backend& backend, const kernels::GemmProblem& problem,
                                     const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c,
                                     std::size_t samples, std::uint64_t seed);

// Throws a usage Error, on every rank, before allocating anything, when a case's buffers cannot fit
// in free memory (one set of A, B and C plus the engine workspace, and with `check` the host copies of A and
// B the check reads: the same memory on the host backend).
void check_gemm_memory(const MpiContext& mpi, const Backend& backend, std::span<const GemmCase> cases,
                       bool check);

// Collective: every rank runs every case (same order), rank 0 gathers per-rank figures. `sweep` adds the
// best shape and the mean over shapes to the summary.
GemmRunOutput run_gemm_benchmark(const MpiContext& mpi, Backend& backend, const DevicePeak& peak, DType dtype,
                                 std::span<const GemmCase> cases, const GemmRunOptions& options,
                                 bool sweep = false);

}  // namespace fb::workloads
