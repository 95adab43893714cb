#pragma once
// The individual checks of `factorybench health` and what they share (private to workloads/health_*.cpp):
// one function per check, each returning its outcome for this rank; run_health_checks (health_check.cpp)
// runs them in order.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/mpi_context.hpp"
#include "core/nvml_loader.hpp"
#include "workloads/health_check.hpp"

namespace fb::workloads::health {

inline constexpr std::string_view kGpuModels[] = {"A100", "H100", "GH200", "H200", "B200", "GB200", "GB300"};

inline reports::Metric metric(double value, std::string unit, reports::Better better) {
  return {value, std::move(unit), better, std::nullopt};
}

inline CheckOutcome outcome(std::string_view check, Verdict verdict, std::string reason) {
  return make_outcome(check, verdict, std::move(reason));
}

inline std::string percent(double fraction) {
  return fmt::format("{:.0f}%", fraction * 100.0);
}

// Everything one rank's checks share.
struct Context {
  Context(MpiContext& m, Backend& b, const DevicePeak& p, const HealthOptions& o, TelemetrySampler* t)
      : mpi(m), backend(b), peak(p), options(o), telemetry(t) {}
  MpiContext& mpi;
  Backend& backend;
  const DevicePeak& peak;
  const HealthOptions& options;
  TelemetrySampler* telemetry;
  bool cuda = false;
  std::shared_ptr<nvml::Library> nvml;
  std::optional<nvml::Device> gpu;
  std::string nvml_reason;                       // why `gpu` is empty on cuda
  std::optional<double> gemm_from_s, gemm_to_s;  // the GEMM's telemetry window
  std::optional<double> checkpoint_free_bytes;   // the checkpoint dir's, before any rank wrote to it
};

inline std::string nvml_skip(const Context& c) {
  return "NVML unavailable: " + c.nvml_reason;
}

// Device state: identity, memory, ECC, row remapping (NVML on cuda, the host's readings on host), and the
// clocks and slowdown reasons seen during the GEMM (health_device_checks.cpp).
CheckOutcome check_device(Context& c);
CheckOutcome check_memory(Context& c);
CheckOutcome check_ecc(Context& c);
CheckOutcome check_row_remap(Context& c);
CheckOutcome check_clocks(Context& c);
CheckOutcome check_slowdown(Context& c);
// Performance against the floors: the GEMM and the all-reduce (health_performance_checks.cpp).
CheckOutcome check_gemm(Context& c);
CheckOutcome check_allreduce(Context& c);
// The checkpoint directory: writable, durable, with room (health_checkpoint_check.cpp). Its free space is
// read first, before the job's first collective: the ranks of a host write their scratch files at once, and
// the collectives between (the GEMM's comparison with its peers, the all-reduce) keep any rank from writing
// before every rank has read it.
void read_checkpoint_dir_space(Context& c);
CheckOutcome check_checkpoint_dir(Context& c);

}  // namespace fb::workloads::health
