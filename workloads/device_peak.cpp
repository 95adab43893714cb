#include "workloads/device_peak.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/hardware_table.hpp"
#include "core/rank_collectives.hpp"
#include "core/system_info.hpp"
#include "kernels/device_probe.hpp"

namespace fb::workloads {

std::optional<double> DevicePeak::for_dtype(const std::string& dtype) const {
  auto it = tflops.find(dtype);
  if (it == tflops.end() && dtype.rfind("fp8", 0) == 0) it = tflops.find("fp8");
  if (it == tflops.end()) return std::nullopt;
  return it->second;
}

double host_cores_per_rank(int cores_online, int cores_available, int local_ranks) {
  // Bound to one core, OpenBLAS runs one thread: against the node's share the MFU read half (2 cores).
  if (cores_available > 0 && cores_available < cores_online) return cores_available;
  // Against a fraction of a core, a rank's short calls (the preempted ones are outliers the median leaves
  // out) measured MFU above 1: 164% for 4 ranks on 2 cores.
  return std::max(1.0, static_cast<double>(cores_online) / static_cast<double>(std::max(1, local_ranks)));
}

DevicePeak resolve_device_peak(const MpiContext& mpi, const Backend& backend) {
  DevicePeak peak;
  const auto table = load_hardware_table();
  if (backend.defaults().peak_from_table) {
    const auto device = backend.device();
    if (const auto hw = find_hardware(table, device.name)) {
      peak.health_gemm_floor = hw->health_gemm_floor;
      peak.health_power_limit_fail = hw->health_power_limit_fail;
      peak.health_power_limit_warn = hw->health_power_limit_warn;
      peak.health_clock_under_load_warn = hw->health_clock_under_load_warn;
      peak.class_name = hw->name;
      peak.tflops = hw->peak_tflops;
      peak.mamf_tflops = hw->mamf_tflops;
      peak.source = fmt::format("hardware table: {} ({}), dense peaks", hw->name, hw->file);
    } else {
      peak.source = fmt::format("no hardware table entry matches '{}'; MFU is not reported", device.name);
    }
    return peak;
  }
  // One measurement per node, so ranks sharing cores do not slow each other's measurement.
  double per_core[2] = {0, 0};
  std::string isa;
  if (mpi.local_rank() == 0) {
    if (const auto p = kernels::device_peak_probe(backend)) {
      per_core[0] = p->fp32_gflops;
      per_core[1] = p->fp64_gflops;
      isa = p->isa;
    }
  }
  broadcast_in_node(mpi, std::span<double>(per_core));
  const HostInfo host = read_host_info();
  const double cores = host_cores_per_rank(host.cpu_cores_online, host.cores_available, mpi.local_size());
  const bool bound = host.cores_available > 0 && host.cores_available < host.cpu_cores_online;
  peak.measured = true;
  peak.cores = cores;
  if (const auto hw = find_hardware_class(table, "cpu")) {
    peak.health_gemm_floor = hw->health_gemm_floor;
    peak.health_clock_under_load_warn = hw->health_clock_under_load_warn;
    peak.class_name = hw->name;
  }
  peak.tflops["fp32"] = per_core[0] * cores / 1e3;
  peak.tflops["fp64"] = per_core[1] * cores / 1e3;
  // bf16 on this host runs as fp32 arithmetic on rounded inputs (no bf16 instructions): same ceiling.
  peak.tflops["bf16"] = peak.tflops["fp32"];
  // MFU stays against the cores the rank holds (what it could use); a thread limit below them is said, so
  // that a low MFU reads as the limit's and not the machine's.
  std::string limit;
  if (const char* env = std::getenv("OPENBLAS_NUM_THREADS");
      env && std::atoi(env) > 0 && std::atoi(env) < cores)
    limit = fmt::format("; OpenBLAS runs {} thread(s) (OPENBLAS_NUM_THREADS)", std::atoi(env));
  peak.source = fmt::format(
      "measured: FMA peak of one core{} ({:.1f} GFLOP/s fp32, {:.1f} fp64) x {:.2f} cores per rank{}{}",
      mpi.local_rank() == 0 ? fmt::format(" ({})", isa) : std::string(), per_core[0], per_core[1], cores,
      bound
          ? fmt::format(" (bound to {} of the node's {} cores)", host.cores_available, host.cpu_cores_online)
      : host.cpu_cores_online < mpi.local_size()
          ? fmt::format(" ({} ranks share {} cores: one core each)", mpi.local_size(), host.cpu_cores_online)
          : std::string(),
      limit);
  return peak;
}

}  // namespace fb::workloads
