// Imports of genuine outputs (tests/data/real, provenance in its README.md): each file's figures and
// verdicts as the source printed them, across nccl-tests versions, launchers and MLPerf submitters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

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

}  // namespace
}  // namespace fb::reports
