// nccl-tests output formats without a genuine sample (tests/data/nccl_tests_formats, generated from
// nccl-tests' printf formats and formulas; provenance in its README.md): each imports with the figures it
// printed, the run's rank count and the communicator's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "reports/import_nccl_tests.hpp"

namespace fb::reports {
namespace {

std::string text_of(const std::string& name) {
  const auto path = std::filesystem::path(FB_SOURCE_DIR) / "tests/data/nccl_tests_formats" / name;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  if (!in) ADD_FAILURE() << "cannot read " << path;
  return s.str();
}

Report import(const std::string& name) {
  return import_nccl_tests(text_of(name), name);
}

const Result& find(const Report& rep, const std::string& name) {
  for (const auto& r : rep.results)
    if (r.name == name) return r;
  throw std::runtime_error("no result " + name);
}

// hypercube_perf's blank reduction is "none", in the table (a word short) and in the JSON ("").
TEST(ImportFormats, HypercubeHasNoReduction) {
  for (const char* name : {"hypercube_8ranks.txt", "hypercube_8ranks.json"}) {
    const Report rep = import(name);
    const Result& r = find(rep, "hypercube/fp32/65536");
    EXPECT_EQ(r.params["redop"], "none") << name;
    EXPECT_EQ(r.params["ranks"], 8) << name;
    EXPECT_NEAR(r.metric("time_us")->value, 20.58, 0.005) << name;
    EXPECT_NEAR(r.metric("algbw_gbps")->value, 2.79, 0.005) << name;  // 64 KiB x 7/8 in 20.58 us
  }
}

// -J lists one device per process; each stands for nthreads x ngpus ranks.
TEST(ImportFormats, JsonProcessesDrivingSeveralGpus) {
  for (const char* name : {"allreduce_1proc_g8.json", "allreduce_2procs_g4.json"}) {
    const Report rep = import(name);
    EXPECT_EQ(rep.run["world_size"], 8) << name;
    EXPECT_EQ(find(rep, "allreduce/fp32/65536").params["ranks"], 8) << name;
  }
}

// NCCL_TESTS_SPLIT: the run has 16 ranks; the figures are those of rank 0's 8-rank communicator.
TEST(ImportFormats, SplitCommunicators) {
  for (const char* name : {"allreduce_split_div8_16ranks.txt", "allreduce_split_div8_16ranks.json"}) {
    const Report rep = import(name);
    EXPECT_EQ(rep.run["world_size"], 16) << name;
    EXPECT_EQ(find(rep, "allreduce/fp32/65536").params["ranks"], 8) << name;
    EXPECT_EQ(find(rep, "avg_busbw").params["ranks"], 8) << name;
  }
}

TEST(ImportFormats, MisspelledJsonAverageIsRead) {
  const std::string text = text_of("allreduce_2.17.5_bandwidith.json");
  const Report rep = import_nccl_tests(text, "typo.json");
  EXPECT_NE(find(rep, "avg_busbw").metric("busbw_gbps"), nullptr);
  // ...and checked: an edited average under that spelling is refused.
  std::string edited = text;
  const std::string key = "\"bandwidith\":";
  const std::size_t at = edited.find(key) + key.size();
  edited.replace(at, edited.find_first_of(",}", at) - at, "99.0");
  try {
    import_nccl_tests(edited, "typo.json");
    ADD_FAILURE() << "an edited average was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("typo.json: $.average_bus_bandwidith: \"Avg bus bandwidth\" 99 GB/s", 0),
        0u)
        << e.what();
  }
}

TEST(ImportFormats, WindowsBuildNames) {
  EXPECT_EQ(nccl_tests_op_name("all_reduce_perf.exe"), "allreduce");
  EXPECT_EQ(nccl_tests_op_name("C:\\nccl-tests\\build\\Release\\all_gather_perf.exe"), "allgather");
  EXPECT_EQ(nccl_tests_op_name("./build/all_reduce_perf_custom"), "allreduce");  // any NAME_SUFFIX
  for (const char* name : {"allreduce_windows_exe.txt", "allreduce_windows_exe.json"})
    EXPECT_NO_THROW(find(import(name), "allreduce/fp32/65536")) << name;
}

// On one rank every shape is a broadcast's: the refusal says the collective was a guess and how to name it.
TEST(ImportFormats, OneRankScatterNeedsItsName) {
  try {
    import("scatter_1rank_no_program.txt");
    ADD_FAILURE() << "imported as a broadcast";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "(or not a broadcast: the collective came from the table's shape; give --op)"),
              std::string::npos)
        << e.what();
  }
  NcclTestsImportOptions scatter;
  scatter.op = "scatter";
  const Report rep = import_nccl_tests({{"s.txt", text_of("scatter_1rank_no_program.txt")}}, scatter);
  EXPECT_EQ(rep.results[0].params["op"], "scatter");
}

// 2017: "bytes N type op ... res", time in milliseconds (0.047 ms is 47 us).
TEST(ImportFormats, FirstFormatTimesInMilliseconds) {
  const Report rep = import("allreduce_2017_ms.txt");
  const Result& r = find(rep, "allreduce/fp32/65536");
  EXPECT_DOUBLE_EQ(r.metric("time_us")->value, 47.0);
  EXPECT_DOUBLE_EQ(r.metric("busbw_gbps")->value, 2.45);
  EXPECT_EQ(r.params["count"], 16384);
  EXPECT_EQ(rep.run["world_size"], 8);
}

// A rank list nccl-tests cut short names neither size.
TEST(ImportFormats, CutRankListIsNoRankCount) {
  const Report rep = import("allreduce_g16_cut_rank_list.txt");
  EXPECT_TRUE(rep.run["world_size"].is_null());
  EXPECT_TRUE(rep.results[0].params["ranks"].is_null());
  // An NCCL log line that trails off is not a cut list.
  std::string text = text_of("allreduce_windows_exe.txt");
  text.insert(text.find("#  Rank  7"), "node01:10000:10000 [0] NCCL INFO Rank 7 connecting...\n");
  EXPECT_EQ(import_nccl_tests(text, "log.txt").run["world_size"], 8);
}

// Before 2021, -t 4's average is not the mean of the rows printed; it is imported, not checked.
TEST(ImportFormats, OldMultiThreadAverageIsNotChecked) {
  const Report rep = import("allreduce_pre2021_t4.txt");
  EXPECT_DOUBLE_EQ(find(rep, "avg_busbw").metric("busbw_gbps")->value, 50.6547);
}

}  // namespace
}  // namespace fb::reports
