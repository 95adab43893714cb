#pragma once
// The attention benchmark's console table: one row per shape (fwd+bwd TFLOP/s and its spread over all
// ranks' iterations, forward and backward medians, MFU, check). A view of the Results and the summary.
#include <ostream>
#include <span>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

void print_attention_table(std::ostream& out, std::span<const Result> results, const nlohmann::json& summary);

}  // namespace fb::reports
