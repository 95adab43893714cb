#pragma once
// The report's header: tool, run and system (the environment fingerprint), gathered from every rank.
#include <string>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "reports/report.hpp"
#include "workloads/device_peak.hpp"

namespace fb::workloads {

// "2026-11-29T14:13:40.123Z"
std::string utc_timestamp();
// "factorybench 0.1.0 (cuda 13.0, cublasLt 13.1.0, nccl 2.28.9; Open MPI 4.1.4; OpenBLAS 0.3.21)"
std::string version_line();

// Collective: every rank calls it; rank 0's report carries all ranks' devices. `backend` may be null for
// commands that use no device (compare, simulate).
reports::Report begin_report(const MpiContext* mpi, const Backend* backend, const std::string& command_line,
                             const DevicePeak* peak = nullptr);
void finish_report(reports::Report& report);

}  // namespace fb::workloads
