// Imports of genuine outputs (tests/data/real, provenance in its README.md): each file's figures and
// verdicts as the source printed them, across nccl-tests versions, launchers and MLPerf submitters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "reports/import_mlperf.hpp"
#include "reports/import_nccl_tests.hpp"

namespace fb::reports {
namespace {

// FB_SOURCE_DIR is a compile definition (tests/CMakeLists.txt).
std::string real(const std::string& name) {
  const auto path = std::filesystem::path(FB_SOURCE_DIR) / "tests/data/real" / name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return s.str();
}

// tests/data/factorybench_console: consoles of `factorybench collective` and the reports their runs wrote.
std::string console_data(const std::string& name) {
  const auto path = std::filesystem::path(FB_SOURCE_DIR) / "tests/data/factorybench_console" / name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return s.str();
}

Report console(const std::string& name) {
  return import_nccl_tests({{name + ".txt", console_data(name + ".txt")}}, {});
}

Report nccl(const std::vector<std::string>& names) {
  std::vector<NcclTestsFile> files;
  for (const auto& n : names) files.push_back({n, real(n)});
  return import_nccl_tests(files, {});
}

const Result& find(const Report& rep, const std::string& name) {
  for (const auto& r : rep.results)
    if (r.name == name) return r;
  throw std::runtime_error("no result " + name);
}

void expect_unique_names(const Report& rep) {
  std::set<std::string> names;
  for (const auto& r : rep.results) EXPECT_TRUE(names.insert(r.name).second) << "duplicate " << r.name;
}

std::size_t failed(const Report& rep) {
  std::size_t n = 0;
  for (const auto& r : rep.results) n += r.status == Status::failed ? 1 : 0;
  return n;
}

// nccl-tests 2.x on 2 x 8 H100 (GCP A3 Mega): no "Collective test starting" line; the op comes from the
// mpirun command line quoted above the output.
TEST(ImportRealOutputs, A3MegaTwoNodes) {
  const Report rep = nccl({"nccl_2.x_a3mega_h100_2node_allreduce.txt"});
  EXPECT_EQ(rep.run["world_size"], 16);
  EXPECT_EQ(rep.run["hosts"], nlohmann::json({"ztan-mig-235z", "ztan-mig-gq73"}));
  EXPECT_EQ(rep.system["ranks"][15]["device"]["name"], "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(rep.results.size(), 31u * 2 + 1);  // 8 B .. 8 GiB, out-of-place and in-place, avg_busbw
  const Result& big = find(rep, "allreduce/fp32/8589934592");
  EXPECT_DOUBLE_EQ(big.metric("time_us")->value, 47535);
  EXPECT_DOUBLE_EQ(big.metric("algbw_gbps")->value, 180.71);
  EXPECT_DOUBLE_EQ(big.metric("busbw_gbps")->value, 338.82);
  EXPECT_DOUBLE_EQ(find(rep, "allreduce/fp32/8589934592/inplace").metric("busbw_gbps")->value, 337.35);
  EXPECT_DOUBLE_EQ(find(rep, "avg_busbw").metric("busbw_gbps")->value, 70.742);
  EXPECT_EQ(failed(rep), 0u);  // "# Out of bounds values : 0 OK", every #wrong 0
  EXPECT_EQ(rep.summary["import"][0]["ops"][0]["from"], "program name in the output: all_reduce_perf");
  EXPECT_EQ(big.params["bus_factor"], 2.0 * 15 / 16);  // 2(n-1)/n on 16 ranks: busbw = algbw x 1.875
}

// nccl-tests 2.18.0, all_reduce_perf_mpi under `mpirun --tag-output`, three repetitions in one file.
TEST(ImportRealOutputs, TaggedMpiBuildRepeats) {
  const Report rep = nccl({"nccl_2.18_tagoutput_allreduce_mpi_rtx5090_3reps.txt"});
  EXPECT_EQ(rep.run["world_size"], 2);
  EXPECT_EQ(rep.system["nccl"], "2.29.7");  // nccl-library=22907
  EXPECT_EQ(rep.summary["import"][0]["nccl_tests_version"], "2.18.0");
  ASSERT_EQ(rep.results.size(), 8u * 2 + 1);
  expect_unique_names(rep);
  const Result& r = find(rep, "allreduce/fp32/134217728");
  EXPECT_EQ(r.params["repeats"], 3);
  EXPECT_DOUBLE_EQ(r.metric("time_us")->value, 58468.9);  // median of 58479.5, 58458.9, 58468.9
  ASSERT_TRUE(r.metric("time_us")->stats);
  EXPECT_DOUBLE_EQ(r.metric("time_us")->stats->min, 58458.9);
  EXPECT_DOUBLE_EQ(r.metric("time_us")->stats->max, 58479.5);
  EXPECT_DOUBLE_EQ(find(rep, "allreduce/fp32/134217728/inplace").metric("busbw_gbps")->value, 2.31);
  EXPECT_DOUBLE_EQ(find(rep, "avg_busbw").metric("busbw_gbps")->value, 1.58058);  // of 1.57614, 1.58183
  EXPECT_EQ(failed(rep), 0u);
  // A second file of the same test adds repeats; it does not add names.
  const Report two = nccl({"nccl_2.18_tagoutput_allreduce_mpi_rtx5090_3reps.txt",
                           "nccl_2.18_tagoutput_allreduce_mpi_rtx5090_nthreads4.txt"});
  ASSERT_EQ(two.results.size(), rep.results.size());
  expect_unique_names(two);
  EXPECT_EQ(find(two, "allreduce/fp32/4194304").params["repeats"], 4);
  EXPECT_DOUBLE_EQ(find(two, "allreduce/fp32/4194304").metric("time_us")->stats->max, 5369.49);
}

// Older nccl-tests on 2 x p4d.24xlarge over EFA: "error" column (max deviation 5e-07 is within
// float's bound: no failure), no root column, NCCL INFO lines inside the table, ranks from "nranks 16".
TEST(ImportRealOutputs, OldEfaTagged) {
  const Report rep = nccl({"nccl_2.x_old_efa_p4d_tagoutput_allreduce.txt"});
  EXPECT_EQ(rep.run["world_size"], 16);
  ASSERT_EQ(rep.results.size(), 28u * 2 + 1);
  EXPECT_EQ(failed(rep), 0u);
  const Result& r = find(rep, "allreduce/fp32/1073741824");
  EXPECT_EQ(r.params["redop"], "sum");
  EXPECT_EQ(r.params["root"], -1);
  EXPECT_DOUBLE_EQ(r.metric("busbw_gbps")->value, 32.71);
  EXPECT_DOUBLE_EQ(r.metric("max_error")->value, 5e-07);
  EXPECT_EQ(r.metric("max_error")->better, Better::none);  // INFO in compare: the bound is the verdict
  EXPECT_DOUBLE_EQ(find(rep, "allreduce/fp32/8").metric("max_error")->value, 2e-07);
  EXPECT_DOUBLE_EQ(find(rep, "avg_busbw").metric("busbw_gbps")->value, 7.80081);
  EXPECT_EQ(rep.summary["import"][0]["ops"][0]["from"], "table shape");
}

// NVIDIA/nccl-tests#290: one 8-GPU process, and 2 nodes under `srun --label` with validation off (N/A).
TEST(ImportRealOutputs, Issue290SingleNodeAndSrunLabel) {
  const Report one = nccl({"nccl_issue290_h100_1node_8gpu_allreduce.txt"});
  EXPECT_EQ(one.run["world_size"], 8);
  EXPECT_EQ(one.run["hosts"], nlohmann::json({"node005"}));
  EXPECT_DOUBLE_EQ(find(one, "allreduce/fp32/4294967296").metric("busbw_gbps")->value, 473.60);
  EXPECT_DOUBLE_EQ(find(one, "allreduce/fp32/4294967296/inplace").metric("busbw_gbps")->value, 476.53);
  EXPECT_DOUBLE_EQ(find(one, "avg_busbw").metric("busbw_gbps")->value, 439.369);
  EXPECT_EQ(failed(one), 0u);

  const Report two = nccl({"nccl_issue290_srun_label_h100_2node_allreduce.txt"});
  EXPECT_EQ(two.run["world_size"], 16);
  EXPECT_EQ(two.run["hosts"], nlohmann::json({"node005", "node007"}));
  ASSERT_EQ(two.results.size(), 11u * 2 + 1);
  const Result& r = find(two, "allreduce/fp32/8589934592");
  EXPECT_DOUBLE_EQ(r.metric("time_us")->value, 103530);
  EXPECT_DOUBLE_EQ(r.metric("busbw_gbps")->value, 155.57);
  EXPECT_EQ(r.metric("wrong"), nullptr);  // N/A: not checked, not "0 wrong"
  EXPECT_EQ(r.params["iters"], 200);
  EXPECT_DOUBLE_EQ(find(two, "avg_busbw").metric("busbw_gbps")->value, 142.735);
  EXPECT_EQ(failed(two), 0u);
}

// NVIDIA/nccl-tests#37 (nccl-tests 2.0-era all_gather, pasted without the '#'): no redop or root
// column, max error 1e+00 on both sides, "Out of bounds values : 2 FAILED".
TEST(ImportRealOutputs, Issue37AllGatherFailed) {
  const Report rep = nccl({"nccl_issue37_v100_allgather_error_column.txt"});
  EXPECT_TRUE(rep.run["world_size"].is_null());  // the paste lists no devices
  ASSERT_EQ(rep.results.size(), 3u);
  const Result& r = find(rep, "allgather/fp32/4294967296");
  EXPECT_EQ(r.params["redop"], "none");
  EXPECT_DOUBLE_EQ(r.metric("busbw_gbps")->value, 129.05);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_EQ(find(rep, "allgather/fp32/4294967296/inplace").status, Status::failed);
  EXPECT_EQ(failed(rep), 2u);  // = the file's out-of-bounds count
  // Before nccl-tests 2.10 an all-gather's busbw was its algbw, whose bytes carried (n-1)/n: factor 1,
  // with n = 8 from size = count x 4 B x 8.
  EXPECT_EQ(r.params["bus_factor"], 1.0);
  // A small size of the same era fits both rules within its digits: the table's other rows decide, so one
  // file has one factor.
  const std::string table =
      "# Collective test starting: all_gather_perf\n"
      "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "        1024            32     float    30.00    0.03    0.03  0e+00    30.00    0.03    0.03  0e+00\n"
      "  4294967296     134217728     float    29122  129.05  129.05  0e+00    29169  128.84  128.84  0e+00\n"
      " Out of bounds values : 0 OK\n"
      " Avg bus bandwidth    : 64.4875\n";
  const Report both = import_nccl_tests({{"old_allgather.txt", table}}, {});
  EXPECT_EQ(find(both, "allgather/fp32/1024").params["bus_factor"], 1.0);
  EXPECT_EQ(find(both, "allgather/fp32/4294967296/inplace").params["bus_factor"], 1.0);
  EXPECT_DOUBLE_EQ(find(rep, "avg_busbw").metric("busbw_gbps")->value, 128.942);
}

// MLPerf Training v4.0 results from two submitters: ASUSTeK (CRLF line ends, no SYSJSON) and NVIDIA
// (SYSJSON).
TEST(ImportRealOutputs, MlperfTwoSubmitters) {
  const std::string asus = "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora_result_0.txt";
  const Report a = import_mlperf({{asus, real(asus)}});
  ASSERT_EQ(a.results.size(), 1u);
  const Result& run = a.results[0];
  EXPECT_EQ(run.name, "llama2_70b_lora/run1");
  EXPECT_EQ(run.status, Status::ok);
  EXPECT_DOUBLE_EQ(run.metric("time_to_train_min")->value, (1715850093688.0 - 1715848320425.0) / 60000);
  EXPECT_DOUBLE_EQ(run.metric("throughput_samples_per_s")->value, 1.9571005612640788);  // median of 5
  EXPECT_DOUBLE_EQ(run.metric("eval_accuracy")->value, 0.9232596755027771);
  EXPECT_EQ(run.params["submission_org"], "ASUSTeK");
  EXPECT_TRUE(a.run["world_size"].is_null());  // the log does not say
  EXPECT_EQ(a.summary["mlperf"]["system"], "1xESC_N8A-E12");

  // Three of ASUSTeK's ten runs: the summarizer drops the fastest and the slowest, leaving result_2's time.
  std::vector<MlperfLog> three;
  for (const char* i : {"0", "1", "2"}) {
    const std::string name =
        std::string("mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora_result_") + i + ".txt";
    three.push_back({name, real(name)});
  }
  const Report s = import_mlperf(three);
  ASSERT_EQ(s.results.size(), 4u);
  EXPECT_DOUBLE_EQ(s.results[1].metric("time_to_train_min")->value,
                   (1715852095297.0 - 1715850337559.0) / 60000);
  EXPECT_EQ(s.results[3].name, "llama2_70b_lora/score");
  EXPECT_DOUBLE_EQ(s.results[3].metric("time_to_train_min")->value,
                   (1715854107403.0 - 1715852343147.0) / 60000);

  const std::string nv = "mlperf_v4.0_nvidia_eos_n128_llama2_70b_lora_result_0.txt";
  const Report n = import_mlperf({{nv, real(nv)}});
  EXPECT_DOUBLE_EQ(n.results[0].metric("time_to_train_min")->value,
                   (1714905658686.0 - 1714905569479.0) / 60000);
  EXPECT_DOUBLE_EQ(n.results[0].metric("eval_accuracy")->value, 0.9244787096977234);
  EXPECT_EQ(n.run["world_size"], 1024);  // SYSJSON: 128 nodes x 8
  EXPECT_EQ(n.summary["mlperf"]["system"], "Eos_n128");
  EXPECT_EQ(n.system["mlperf_system"]["accelerator_model_name"], "NVIDIA H100-SXM5-80GB");
}

// factorybench's console imports as the report its run wrote: every result with its status and figures,
// each within half the last digit the console prints (reports/collective_console.cpp: %.2f for times and
// bandwidths, %.3f for the average, %.1f for the MoE share in percent, #wrong whole), and nothing more.
TEST(ImportRealOutputs, FactorybenchConsoleIsItsRunsReport) {
  for (const char* name :
       {"all_ops_4ranks_inplace_wrong", "allreduce_split_bf16_tagoutput_min_busbw",
        "moe_alltoallv_inplace_skipped", "allreduce_hang_inplace_half", "allreduce_interrupted_sigterm"}) {
    SCOPED_TRACE(name);
    const Report rep = console(name);
    const auto report = nlohmann::json::parse(console_data(std::string(name) + ".json"));
    EXPECT_EQ(rep.run["world_size"], report["run"]["world_size"]);
    EXPECT_EQ(rep.run["backend"], "host");  // "mpi engine"
    ASSERT_EQ(rep.results.size(), report["results"].size());
    expect_unique_names(rep);
    for (const auto& want : report["results"]) {
      const std::string result = want["name"];
      SCOPED_TRACE(result);
      const Result& got = find(rep, result);
      EXPECT_EQ(to_string(got.status), want["status"].get<std::string>());
      for (const auto& [metric, m] : want["metrics"].items()) {
        ASSERT_NE(got.metric(metric), nullptr) << metric;
        const double half = metric == "wrong"                 ? 0
                            : result.starts_with("avg_busbw") ? 0.0005
                            : metric == "busiest_share"       ? 0.0005
                                                              : 0.005;
        EXPECT_NEAR(got.metric(metric)->value, m["value"].get<double>(), half + 1e-12) << metric;
      }
      for (const char* param :
           {"op", "dtype", "bytes", "count", "inplace", "redop", "root", "ranks", "iters", "warmup",
            "average", "group", "first_rank", "phase", "tokens", "rows", "bus_factor"})
        if (want["params"].contains(param)) {
          EXPECT_EQ(got.params[param], want["params"][param]) << param;
        }
    }
  }
}

// `--op all` on 4 ranks: a table per op, each under its "# OP: 4 rank(s), fp32" line, and one footer whose
// average is over every figure of every table, out of place and in place (48), as the run computed it.
TEST(ImportRealOutputs, FactorybenchConsoleAllOps) {
  const Report rep = console("all_ops_4ranks_inplace_wrong");
  ASSERT_EQ(rep.results.size(), 8u * 3 * 2 + 1);
  EXPECT_EQ(rep.summary["import"][0]["format"], "factorybench collective console");
  EXPECT_EQ(rep.summary["import"][0]["engine"], "mpi");
  EXPECT_EQ(rep.summary["import"][0]["ops"].size(), 8u);
  EXPECT_EQ(rep.summary["import"][0]["ops"][1]["from"], "factorybench's section line");
  EXPECT_FALSE(rep.system.contains("nccl"));  // the MPI engine: no NCCL ran
  const Result& wrong = find(rep, "allreduce/fp32/262144");
  EXPECT_EQ(wrong.status, Status::failed);
  EXPECT_EQ(wrong.error, "factorybench reported 1 wrong elements (all_ops_4ranks_inplace_wrong.txt:9)");
  EXPECT_DOUBLE_EQ(wrong.metric("time_us")->value, 163.89);
  EXPECT_DOUBLE_EQ(wrong.metric("algbw_gbps")->value, 1.60);
  EXPECT_DOUBLE_EQ(wrong.metric("busbw_gbps")->value, 2.40);
  EXPECT_DOUBLE_EQ(wrong.metric("wrong")->value, 1);
  EXPECT_EQ(failed(rep), 1u);
  const Result& a2av = find(rep, "alltoallv/fp32/262080/inplace");
  EXPECT_DOUBLE_EQ(a2av.metric("time_us")->value, 100.65);
  EXPECT_DOUBLE_EQ(a2av.metric("busbw_gbps")->value, 1.95);
  EXPECT_EQ(a2av.params["ranks"], 4);
  EXPECT_EQ(a2av.params["count"], 65520);
  EXPECT_EQ(a2av.params["source"], "factorybench collective console");
  EXPECT_EQ(find(rep, "broadcast/fp32/16384").params["root"], 0);
  const Result& avg = find(rep, "avg_busbw");
  EXPECT_DOUBLE_EQ(avg.metric("busbw_gbps")->value, 2.025);
  EXPECT_EQ(avg.params["op"], "all");
  EXPECT_EQ(avg.params["rows"], 48);
  EXPECT_EQ(avg.params["ranks"], 4);
  EXPECT_EQ(avg.status, Status::ok);
}

// --split under `mpirun --tag-output`, without --inplace and with --no-check: "/groupG" names, no in-place
// results ("-"), no wrong metric ("N/A"), one average per group with its --min-busbw verdict.
TEST(ImportRealOutputs, FactorybenchConsoleSplitGroups) {
  const Report rep = console("allreduce_split_bf16_tagoutput_min_busbw");
  ASSERT_EQ(rep.results.size(), 2u * 2 + 2);
  const Result& r = find(rep, "allreduce/bf16/262144/group1");
  EXPECT_DOUBLE_EQ(r.metric("time_us")->value, 1003.67);
  EXPECT_DOUBLE_EQ(r.metric("busbw_gbps")->value, 0.26);
  EXPECT_EQ(r.metric("wrong"), nullptr);
  EXPECT_EQ(r.params["ranks"], 2);
  EXPECT_EQ(r.params["first_rank"], 2);
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(rep.run["world_size"], 4);
  const Result& avg = find(rep, "avg_busbw/group0");
  EXPECT_DOUBLE_EQ(avg.metric("busbw_gbps")->value, 0.277);
  EXPECT_EQ(avg.params["min_busbw_gbps"], 0.5);
  EXPECT_EQ(avg.status, Status::failed);
  EXPECT_EQ(avg.error,
            "average busbw 0.277 GB/s is below --min-busbw 0.500 "
            "(allreduce_split_bf16_tagoutput_min_busbw.txt:16)");
  EXPECT_DOUBLE_EQ(find(rep, "avg_busbw/group1").metric("busbw_gbps")->value, 0.251);
}

// MoE: the section names the phase (moe_dispatch/..., moe_combine/...) and the busiest rank's share; in place
// was skipped by the run, and is a skipped result here too. Its alltoallv's algbw is size / time.
TEST(ImportRealOutputs, FactorybenchConsoleMoe) {
  const Report rep = console("moe_alltoallv_inplace_skipped");
  const Result& d = find(rep, "moe_dispatch/bf16/477184");
  EXPECT_EQ(d.params["op"], "alltoallv");
  EXPECT_EQ(d.params["phase"], "dispatch");
  EXPECT_EQ(d.params["top_k"], 2);
  EXPECT_EQ(d.params["skew"], 1.0);
  EXPECT_DOUBLE_EQ(d.metric("busiest_share")->value, 0.565);
  EXPECT_DOUBLE_EQ(d.metric("algbw_gbps")->value, 30.23);
  EXPECT_EQ(find(rep, "moe_combine/bf16/477184/inplace").status, Status::skipped);
  const Result& avg = find(rep, "avg_busbw");
  EXPECT_DOUBLE_EQ(avg.metric("busbw_gbps")->value, 15.422);
  EXPECT_EQ(avg.params["op"], "alltoallv");
}

// A hang or a signal: the sizes printed before it, and the run's failed "hang" or "interrupted" result;
// without the closing average the tables are said to be unfinished.
TEST(ImportRealOutputs, FactorybenchConsoleHangAndSignal) {
  const Report hang = console("allreduce_hang_inplace_half");
  ASSERT_EQ(hang.results.size(), 2u);
  EXPECT_DOUBLE_EQ(find(hang, "allreduce/fp32/1024").metric("time_us")->value, 1.49);
  EXPECT_EQ(find(hang, "hang").error,
            "rank 1 (host vm, GPU 1) never entered allreduce #12 (1 KiB); rank 0 (host vm, GPU 0) entered "
            "allreduce #12 (1 KiB) and never left (waited 3.75 s)");
  EXPECT_EQ(hang.summary["import"][0]["ops"][0]["unfinished"], "allreduce_hang_inplace_half.txt:5");
  const Report stopped = console("allreduce_interrupted_sigterm");
  ASSERT_EQ(stopped.results.size(), 7u);
  EXPECT_EQ(find(stopped, "interrupted").error,
            "stopped by a signal after the sizes above (allreduce_interrupted_sigterm.txt:15)");
  EXPECT_EQ(find(stopped, "interrupted").status, Status::failed);
}

// Two runs in one file (a log appended to): each keeps its own footer, and the averages name their op.
TEST(ImportRealOutputs, FactorybenchConsolesInOneFile) {
  const std::string text =
      console_data("moe_alltoallv_inplace_skipped.txt") + console_data("all_ops_4ranks_inplace_wrong.txt");
  const Report rep = import_nccl_tests(text, "both.txt");
  EXPECT_DOUBLE_EQ(find(rep, "alltoallv/avg_busbw").metric("busbw_gbps")->value, 15.422);
  EXPECT_DOUBLE_EQ(find(rep, "all/avg_busbw").metric("busbw_gbps")->value, 2.025);
  EXPECT_TRUE(rep.run["world_size"].is_null());  // 2 ranks, then 4
  expect_unique_names(rep);
}

// A console whose figures do not follow from one another is refused, one line naming where, as nccl-tests'
// are: an edited row, a dropped row (the average), an edited footer, and what the console never prints.
TEST(ImportRealOutputs, FactorybenchConsoleEditsAreRefused) {
  const std::string all = console_data("all_ops_4ranks_inplace_wrong.txt");
  const auto edited = [&](std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    try {
      import_nccl_tests(text, "c.txt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string row =
      "       65536         16384      fp32     sum      -1      59.18     1.11     1.66       0      53.78"
      "     1.22     1.83       0\n";
  EXPECT_EQ(edited(all, "1.11     1.66", "1.11     1.96"),
            "c.txt:8: out-of-place busbw 1.96 GB/s is not algbw 1.11 GB/s x 2(4-1)/4 (1.67 GB/s): a garbled "
            "or edited row");
  EXPECT_EQ(
      edited(all, row, ""),
      "c.txt:66: \"Avg bus bandwidth\" 2.025 GB/s is not the mean busbw of the table's 46 figures "
      "(2.036 GB/s) (factorybench averages every row above it, out of place and in place, of every op): "
      "rows were dropped or edited");
  EXPECT_EQ(edited(all, "# Wrong elements : 1 FAILED", "# Wrong elements : 0 OK"),
            "c.txt:66: \"Wrong elements\" 0 OK is not the tables' #wrong (1 in all): rows were dropped or "
            "edited");
  EXPECT_EQ(
      edited(all, "      fp32     sum      -1      59.18", "     float     sum      -1      59.18"),
      "c.txt:8: column type: 'float' is not a factorybench dtype (fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, "
      "fp64, int32, int8)");
  EXPECT_EQ(edited(all, "# allgather: 4 rank(s), fp32", "# allgather: 4 rank(s), fp16"),
            "c.txt:15: column type: 'fp32' where the table's section line says fp16");
  EXPECT_EQ(edited(all, "# allgather: 4 rank(s), fp32\n", ""),
            "c.txt:12: a table without factorybench's section line above it (\"# OP: N rank(s), DTYPE\")");
  EXPECT_EQ(
      edited(all, "# Avg bus bandwidth : 2.025", "# Avg bus bandwidth : 2.025\n# Avg bus bandwidth : 2.025"),
      "c.txt:68: a second \"Avg bus bandwidth\" for the run (the first at line 67)");
  const std::string split = console_data("allreduce_split_bf16_tagoutput_min_busbw.txt");
  EXPECT_EQ(edited(split, "0.277  (--min-busbw 0.500: FAILED)", "0.277  (--min-busbw 0.500: OK)"),
            "c.txt:16: \"Avg bus bandwidth\" 0.277 GB/s printed OK against --min-busbw 0.5: a garbled or "
            "edited line");
  // Dashes only stand for a whole placement.
  EXPECT_EQ(edited(split, "0.27     N/A          -", "0.27     N/A       1.00"),
            "c.txt:7: column algbw: expected a number, got '-'");
  // nccl-tests' figures of one of its sizes are another tool's measurement, not a repeat.
  std::string nccl_tests = "# Collective test starting: all_reduce_perf\n";
  for (int rank = 0; rank < 4; ++rank)
    nccl_tests +=
        fmt::format("#  Rank  {0} Group  0 Pid  100{0} on node01 device  {0} [0000:18:00] GPU\n", rank);
  nccl_tests +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
      "       16384          4096     float     sum      -1    49.88    0.33    0.49      0\n";
  try {
    import_nccl_tests({{"c.txt", all}, {"n.txt", nccl_tests}}, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "n.txt:7: allreduce/fp32/16384 is in nccl-tests' output here and in factorybench's console in "
        "c.txt:7; import them separately");
  }
  // nccl-tests tables above factorybench's console are another tool's run: separate files.
  EXPECT_EQ(edited(all, "# factorybench collective:",
                   real("nccl_issue290_h100_1node_8gpu_allreduce.txt") + "# factorybench collective:"),
            "c.txt:25: factorybench's console after nccl-tests tables: import them as separate files");
}

}  // namespace
}  // namespace fb::reports
