#pragma once
// The GEMM benchmark's console table: one row per shape (median TFLOP/s and its spread over all ranks'
// iterations, median time, MFU, algorithm, check), then the slow ranks and the sweep's best shape.
// A view of the Results and the gemm summary; measuring never formats.
#include <ostream>
#include <span>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

void print_gemm_table(std::ostream& out, std::span<const Result> results, const nlohmann::json& summary);

}  // namespace fb::reports
