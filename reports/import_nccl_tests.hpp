#pragma once
// nccl-tests output as a factorybench report, so existing nccl-tests runs compare with ours. Reads either
// format nccl-tests writes:
//   text  the table printed by all_reduce_perf & co. Columns are found by name from the "# size count type
//         redop root time algbw busbw #wrong ..." header, so every version parses: 2.0-era tables without
//         redop (all_gather) or root, "error" (max deviation) instead of "#wrong", "cputime", 2.19's
//         per-iteration columns (-I 1: i_min i_max i_p99 i_cv%) and row timestamps (-S 1), and the first
//         2017 tables ("bytes N type op ... res", times in ms). Lines may
//         carry `mpirun --tag-output` ("[1,0]<stdout>:") or `srun --label` (" 0: ") prefixes; NCCL INFO and
//         other lines between table rows are skipped. One file may hold several tests (one table each).
//   JSON  the file written with -J/--output_file (format version 1 or 2: "config", "results" with
//         "out_of_place"/"in_place" objects holding time, alg_bw, bus_bw, nwrong).
// Results are named as `factorybench collective` names them: OP/DTYPE/BYTES and OP/DTYPE/BYTES/inplace,
// with time_us, algbw_gbps and busbw_gbps (nccl-tests' own figures, same definitions). A size that appears
// more than once (repetitions in one file, or several files of the same test) is one result whose metrics
// are the median of the repeats with their spread. A row with wrong elements, or (old versions) a max
// error above nccl-tests' tolerance for the type, is a failed result. "Avg bus bandwidth" becomes
// result "avg_busbw". A row whose figures do not follow from one another as nccl-tests computes them, or
// an average that is not its table's mean busbw, is an input error (reports/nccl_tests_consistency.hpp).
//
// factorybench's own console (the table `factorybench collective` prints, reports/collective_console.cpp) is
// read too, recognised by its first line ("# factorybench collective: N rank(s), ENGINE engine, ..."; the
// world size, engine → run.backend, iters and warmup). It has nccl-tests' columns, but: the type column holds
// factorybench's dtype names (fp32, bf16, ...); a placement not measured is "-" (no --inplace) or "skipped"
// (MoE in place: a skipped result); each table sits under a "# OP: N rank(s), DTYPE" line (or "# MoE
// dispatch (alltoallv): ...", results moe_dispatch/..., with the busiest rank's share; a --split group adds
// "(group G: ranks A-B)" and the names "/groupG"), which names its op and N; and `--op all` prints one footer
// for all the tables: "# Wrong elements" (the sum of every #wrong) and "# Avg bus bandwidth" (the mean busbw
// of every row, out of place and in place, of every op; one per --split group, with its --min-busbw verdict),
// both checked against the rows. Its alltoallv has size = count·elem and algbw = size / time. The
// watchdog's "hang: ..." lines and "stopped by a signal" become the failed "hang" and "interrupted" results,
// so the import has the results, names and verdicts of the report the run wrote (-o).
#include <optional>
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct NcclTestsFile {
  std::string source;  // file name, for errors ("FILE:LINE: ...", "FILE: $.results[2].in_place.time: ...")
  std::string text;
};

struct NcclTestsImportOptions {
  // The collective ("allreduce", "all_reduce", "all_reduce_perf_mpi", ...). Without it the op comes from
  // the file: "Collective test starting:", the JSON args, a program name in the output (a command line),
  // or the table's shape.
  std::optional<std::string> op;
};

// The report's tool and run id/command/times are left for the caller; run.world_size (null when the
// output does not say), run.hosts, run.backend ("cuda" for nccl-tests; factorybench's engine: mpi → "host",
// nccl → "cuda"; "mixed"), system.ranks, system.nccl (where NCCL ran) and summary.import are filled from the
// files.
Report import_nccl_tests(const std::vector<NcclTestsFile>& files, const NcclTestsImportOptions& options);
// One file, op from the file.
Report import_nccl_tests(const std::string& text, const std::string& source);

// "all_reduce_perf" / "./build/all_reduce_perf" / "all_reduce_perf_mpi" / "all_reduce" → "allreduce";
// "alltoall_perf" → "alltoall", "C:\build\all_reduce_perf.exe" → "allreduce" (a path, ".exe" and any
// suffix after "_perf" go); names factorybench does not know are kept without underscores.
std::string nccl_tests_op_name(const std::string& program);
// nccl-tests type names → factorybench dtype names: float → fp32, half → fp16, bfloat16 → bf16, double →
// fp64, f8e4m3 → fp8_e4m3, f8e5m2 → fp8_e5m2; others (int8, uint8, int32, ...) unchanged.
std::string nccl_tests_dtype_name(const std::string& type);

}  // namespace fb::reports
