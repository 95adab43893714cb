#pragma once
// The training run's console summary: steps and step time, throughput, MFU/HFU, loss, memory, MoE balance,
// the per-step breakdown and collective bytes. A view of the Result; training never formats.
#include <ostream>

#include "reports/report.hpp"

namespace fb::reports {

void print_train_result(std::ostream& out, const Result& r);

}  // namespace fb::reports
