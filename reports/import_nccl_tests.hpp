#pragma once
// nccl-tests output as a factorybench report, so existing nccl-tests runs compare with ours. Reads either
// format nccl-tests writes:
//   text  the table printed by all_reduce_perf & co. (columns found from the "# size count type redop root
//         time algbw busbw #wrong ..." header line, so versions without "root" or with "error" parse too);
//   JSON  the file written with -J/--output_file (format version 1 or 2: "config", "results" with
//         "out_of_place"/"in_place" objects holding time, alg_bw, bus_bw, nwrong).
// Results are named as `factorybench collective` names them: OP/DTYPE/BYTES and OP/DTYPE/BYTES/inplace,
// with time_us, algbw_gbps and busbw_gbps (nccl-tests' own figures, same definitions); a row with wrong
// elements is a failed result. The Avg bus bandwidth line becomes result "avg_busbw".
#include <string>

#include "reports/report.hpp"

namespace fb::reports {

// `source` names the file in errors ("FILE:LINE: ..." for text, "FILE: $.results[2].in_place.time: ..." for
// JSON). The report's tool and run id/command/times are left for the caller; run.world_size, run.hosts,
// run.backend ("cuda"), system.ranks and summary.import are filled from the file.
Report import_nccl_tests(const std::string& text, const std::string& source);

// "all_reduce_perf" / "./build/all_reduce_perf" → "allreduce"; "alltoall_perf" → "alltoall".
std::string nccl_tests_op_name(const std::string& program);
// nccl-tests type names → factorybench dtype names: float → fp32, half → fp16, bfloat16 → bf16, double →
// fp64, f8e4m3 → fp8_e4m3, f8e5m2 → fp8_e5m2; others (int8, uint8, int32, ...) unchanged.
std::string nccl_tests_dtype_name(const std::string& type);

}  // namespace fb::reports
