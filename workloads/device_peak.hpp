#pragma once
// The peak a result's MFU is measured against: the hardware table's dense peak for a known GPU, or the
// measured FMA peak of this rank's share of the CPU (at least one core), labelled "measured".
#include <map>
#include <optional>
#include <string>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"

namespace fb::workloads {

struct DevicePeak {
  std::map<std::string, double> tflops;  // by dtype name
  std::map<std::string, double> mamf_tflops;
  std::string source;  // "hardware table: H200 SXM (configs/hardware/h200-sxm.json)" or "measured ..."
  bool measured = false;
  double cores = 0;  // host: the cores per rank the measured peaks count (one thread runs at peak / cores)
  // The device class's health floor (configs/hardware: health.gemm_floor), and which entry gave it.
  std::optional<double> health_gemm_floor;
  // The class's clocks-check thresholds (configs/hardware: health.power_limit_fail, ...); unset: defaults.
  std::optional<double> health_power_limit_fail, health_power_limit_warn, health_clock_under_load_warn;
  std::string class_name;  // "H200 SXM", "host CPU"; empty when no entry matched
  std::optional<double> for_dtype(const std::string& dtype) const;
};

// Collective over the node communicator on the host backend (local rank 0 measures, the node shares it).
DevicePeak resolve_device_peak(const MpiContext& mpi, const Backend& backend);

// The cores a host rank's peak counts, as OpenBLAS's threads use them (kernels/host/gemm_openblas.cpp):
// the cores of its affinity mask when a launcher bound it to fewer than the node's (mpirun binds one rank to
// one core by default), else its share of the node's cores; never below one. Ranks that outnumber the cores
// take turns in scheduler slices longer than most timed calls, so a call runs on a whole core.
double host_cores_per_rank(int cores_online, int cores_available, int local_ranks);

}  // namespace fb::workloads
