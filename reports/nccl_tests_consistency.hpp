#pragma once
// Whether an nccl-tests row's figures follow from one another as nccl-tests computes them, so that a
// garbled or hand-edited row (a busbw raised, a size changed, rows dropped before "Avg bus bandwidth")
// is refused on import instead of being compared as a measurement. nccl-tests derives every figure from
// one measured time (src/common.cu BenchTime, src/*.cu GetBw and GetCollByteCount):
//
//   op                          size / (count·elem)   algbw · time / size   busbw / algbw
//   allreduce                   1                     1                     2(n−1)/n
//   broadcast, reduce, sendrecv 1                     1                     1
//   allgather, reducescatter    n                     1                     (n−1)/n
//     before nccl-tests 2.10    n                     (n−1)/n               1        (commit ec1b5e2, 2020)
//   alltoall, gather, scatter   n                     1                     (n−1)/n
//   hypercube                   n                     (n−1)/n               1
//   alltoallv                   —                     —                     (n−1)/n  (algbw from its largest
//   peer)
//
// factorybench's own console (`factorybench collective`) follows the same table, except for alltoallv, whose
// size is the busiest rank's bytes, count·elem, and whose algbw is size / time (docs/metrics.md); and it has
// no pre-2.10 outputs to allow for.
//
// with size in bytes, time in µs and bandwidths in GB/s (1e9 bytes). Printed figures are rounded, so each
// comparison allows the rounding of the digits printed; nothing else is allowed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fb::reports {

// A figure as printed, and half of its last printed digit: the true value lies within value ± half_unit.
struct PrintedFigure {
  double value = 0;
  double half_unit = 0;
};

// Half the last digit of a number as printed: "613.3" → 0.05, "15870" → 0.5, "1.2e+07" → 5e5,
// "439.369" → 0.0005. The text must be a number (the importer has parsed it).
double printed_half_unit(std::string_view text);

// A figure as nccl-tests' text table prints it (src/util.cu getFloatStr): "%.2f", else "%.1f", else "%.0f",
// whichever fits the column's width (kTimeWidth, kBandwidthWidth), else "%.1e" (width 7) or "%.0e".
// A JSON figure is allowed this rounding too: -J writes six decimals, but a JSON converted from a table
// carries the table's digits.
std::string table_text(double value, int width);
inline constexpr int kTimeWidth = 7;
inline constexpr int kBandwidthWidth = 6;

struct NcclTestsRow {
  std::string op;                      // factorybench's name: allreduce, allgather, ...
  std::optional<int> ranks;            // from the output's device list or NCCL INFO, when it names them
  std::uint64_t size = 0;              // "size", bytes
  std::optional<std::uint64_t> count;  // "count", elements (a hand-made JSON may leave it out)
  std::uint64_t element_bytes = 0;
  std::optional<PrintedFigure> time_us;  // nullopt for "cputime" (-C 1): nccl-tests prints the CPU time
                                         // but computes the bandwidths from the GPU-side time
  PrintedFigure algbw, busbw;
  bool factorybench = false;  // a row of factorybench's console, not nccl-tests'
};

// Empty when the row's figures agree; else what disagrees, as a phrase ("busbw 20.00 GB/s is not ...").
// A rule that needs the rank count and cannot learn it (no device list; a row of size 0) is not applied.
std::optional<std::string> nccl_tests_row_mismatch(const NcclTestsRow& row);

// Whether the row's figures follow only the rule of nccl-tests before 2.10 (an all-gather or reduce-scatter
// whose busbw is its algbw). A small row may fit both rules within its digits: a table is of the old kind
// when any of its rows follows only the old rule.
bool nccl_tests_row_before_2_10(const NcclTestsRow& row);

// busbw / algbw as the row's tool computed it (the last column of the table above; with `before_2_10`, 1
// for an all-gather or reduce-scatter): what a factorybench report records as params.bus_factor. Empty where
// it needs the rank count and the row does not show it, and for an op without a rule.
std::optional<double> nccl_tests_bus_factor(const NcclTestsRow& row, bool before_2_10);

// The rank count a row shows by its size alone where its op's size is n x count x element bytes (all-gather,
// reduce-scatter, all-to-all, gather, scatter, hypercube), whatever `ranks` says. Empty for other ops, a row
// of size or count 0, and a size that is not a multiple of count x element bytes.
std::optional<int> nccl_tests_ranks_by_size(const NcclTestsRow& row);

// Empty when "Avg bus bandwidth" is the mean busbw of the table's rows (both sides, every repeat), as
// nccl-tests computes it; else what disagrees.
std::optional<std::string> nccl_tests_average_mismatch(const PrintedFigure& average,
                                                       const std::vector<PrintedFigure>& busbw);

}  // namespace fb::reports
