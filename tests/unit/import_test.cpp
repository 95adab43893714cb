// Imports: nccl-tests text and JSON output, MLPerf Training logs; known answers from hand-written samples in
// the documented formats, and errors that say where.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "reports/import_mlperf.hpp"
#include "reports/import_nccl_tests.hpp"
#include "reports/report_json.hpp"

namespace fb::reports {
namespace {

const char* kText = R"(# nccl-tests version 2.13.11 nccl-headers=22203 nccl-library=22203
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1001 on     node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1002 on     node02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256  bfloat16    none      -1    10.00    0.10    0.05      0     9.50    0.11    0.05    N/A
        4096          1024  bfloat16    none      -1    20.00    0.20    0.10      3    19.00    0.22    0.11      0
# Out of bounds values : 3 FAILED
# Avg bus bandwidth    : 0.0775
#
# Collective test concluded: all_gather_perf
)";

TEST(ImportNcclTests, TextTable) {
  const Report rep = import_nccl_tests(kText, "ag.txt");
  EXPECT_EQ(rep.run["world_size"], 2);
  EXPECT_EQ(rep.run["hosts"], nlohmann::json({"node01", "node02"}));
  EXPECT_EQ(rep.system["ranks"][1]["device"]["name"], "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(rep.results.size(), 5u);  // 2 sizes x (out-of-place, in-place) + avg_busbw
  const Result& r0 = rep.results[0];
  EXPECT_EQ(r0.benchmark, "collective");
  EXPECT_EQ(r0.name, "allgather/bf16/1024");
  EXPECT_EQ(r0.params["op"], "allgather");
  EXPECT_EQ(r0.params["nccl_type"], "bfloat16");
  EXPECT_EQ(r0.params["iters"], 20);
  EXPECT_DOUBLE_EQ(r0.metric("time_us")->value, 10.0);
  EXPECT_DOUBLE_EQ(r0.metric("algbw_gbps")->value, 0.10);
  EXPECT_DOUBLE_EQ(r0.metric("busbw_gbps")->value, 0.05);
  EXPECT_EQ(r0.metric("busbw_gbps")->better, Better::higher);
  EXPECT_EQ(r0.status, Status::ok);
  EXPECT_EQ(rep.results[1].name, "allgather/bf16/1024/inplace");
  EXPECT_EQ(rep.results[1].metric("wrong"), nullptr);  // N/A: not checked
  EXPECT_EQ(rep.results[2].name, "allgather/bf16/4096");
  EXPECT_EQ(rep.results[2].status, Status::failed);
  EXPECT_EQ(*rep.results[2].error, "nccl-tests reported 3 wrong elements (ag.txt:14)");
  EXPECT_EQ(rep.results[4].name, "avg_busbw");
  EXPECT_DOUBLE_EQ(rep.results[4].metric("busbw_gbps")->value, 0.0775);
  // What the file says, not what this build links: nccl-library=22203 is NCCL 2.22.3.
  EXPECT_EQ(rep.system["nccl"], "2.22.3");
  EXPECT_EQ(r0.params["ranks"], 2);
}

// The finding of an audit: nccl-tests prints #wrong with %g, so 16,777,216 wrong elements reads
// "1.67772e+07". That is a count (a whole number), not a deviation, and it fails an fp8 row too.
TEST(ImportNcclTests, WrongCountsInExponentNotationAreCounts) {
  std::string text = kText;
  text.replace(text.find("0.10      3"), 11, "0.10 1.67772e+07");
  const Report rep = import_nccl_tests(text, "ag.txt");
  ASSERT_EQ(rep.results[2].name, "allgather/bf16/4096");
  EXPECT_EQ(rep.results[2].status, Status::failed);
  ASSERT_NE(rep.results[2].metric("wrong"), nullptr);
  EXPECT_DOUBLE_EQ(rep.results[2].metric("wrong")->value, 16777200.0);
  EXPECT_EQ(rep.results[2].metric("max_error"), nullptr);
  EXPECT_EQ(*rep.results[2].error, "nccl-tests reported 16777200 wrong elements (ag.txt:14)");
}

// A sweep that nccl-tests reported as stopped fails, with its line; one without its closing lines is kept,
// and marked unfinished in the summary (the command warns).
TEST(ImportNcclTests, StoppedAndUnfinishedTables) {
  std::string text = kText;
  text = text.substr(0, text.find("# Out of bounds"));
  const Report cut = import_nccl_tests(text, "cut.txt");
  EXPECT_EQ(cut.results.size(), 4u);  // the rows, no avg_busbw, no failure of its own
  EXPECT_EQ(cut.summary["import"][0]["ops"][0]["unfinished"], "cut.txt:11");
  text +=
      "node01: Test NCCL failure common.cu:1005 'unhandled cuda error / '\n .. node01 pid 41230: Test "
      "failure "
      "common.cu:891\n";
  const Report stopped = import_nccl_tests(text, "crash.txt");
  const Result& run = stopped.results.back();
  EXPECT_EQ(run.name, "allgather/run");
  EXPECT_EQ(run.status, Status::failed);
  EXPECT_EQ(
      *run.error,
      "nccl-tests stopped: crash.txt:15: node01: Test NCCL failure common.cu:1005 'unhandled cuda error / '");
  EXPECT_FALSE(stopped.summary["import"][0]["ops"][0].contains("unfinished"));
  // nccl-tests prints a size's first columns before running it: a failure leaves that half row, with the
  // failure glued on or on the next line; a file cut inside a row ends in part of one. The rows before
  // it are kept.
  const std::string rows = std::string(kText).substr(0, std::string(kText).find("# Out of bounds"));
  const std::string half = "       16384          4096  bfloat16    none      -1";
  for (const std::string& sep : {std::string(""), std::string("\n")}) {
    const Report glued = import_nccl_tests(
        rows + half + sep + "node01: Test NCCL failure common.cu:1279 'unhandled system error'\n",
        "half.txt");
    ASSERT_EQ(glued.results.size(), 5u) << sep.size();
    EXPECT_EQ(glued.results.back().status, Status::failed);
    EXPECT_NE(glued.results.back().error->find("Test NCCL failure common.cu:1279"), std::string::npos);
  }
  for (const std::string& cut_row :
       {half, std::string("       16384          4096  bfloat16    none      -1    31.0")}) {
    const Report in_row = import_nccl_tests(rows + cut_row, "cut-row.txt");
    EXPECT_EQ(in_row.results.size(), 4u);
    EXPECT_EQ(in_row.summary["import"][0]["ops"][0]["unfinished"], "cut-row.txt:11");
  }
  // A short row with the table going on after it is garbled, not a stop.
  try {
    import_nccl_tests(rows + half + "\n" + rows.substr(rows.find("        4096")), "short.txt");
    ADD_FAILURE() << "a short row inside a table was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "short.txt:15: 5 columns where the header has 13");
  }
  // The whole file, closed as nccl-tests closes it: neither.
  const Report whole = import_nccl_tests(kText, "ag.txt");
  EXPECT_FALSE(whole.summary["import"][0]["ops"][0].contains("unfinished"));
  EXPECT_FALSE(whole.summary["import"][0]["ops"][0].contains("aborted"));
}

// Two rows run together, and an average that is not a number, are refused with the line.
TEST(ImportNcclTests, GarbledRowsAndAveragesAreRefused) {
  const auto error_of = [](const std::string& text) {
    try {
      import_nccl_tests(text, "g.txt");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string merged = kText;
  const std::string row =
      "        1024           256  bfloat16    none      -1    10.00    0.10    0.05      0     9.50    0.11 "
      "   0.05    N/A";
  merged.replace(merged.find(row), row.size(), row + " " + row);
  EXPECT_EQ(error_of(merged), "g.txt:13: 26 columns where the header has 13");
  for (const char* avg : {"-nan", "inf", "garbage"}) {
    std::string text = kText;
    text.replace(text.find("0.0775"), 6, avg);
    EXPECT_EQ(error_of(text), fmt::format("g.txt:16: \"Avg bus bandwidth\" '{}' is not a bandwidth", avg));
  }
}

// nccl-tests computes every figure of a row from one time (reports/nccl_tests_consistency.hpp): a figure
// edited beyond its printed digits, a table whose average lost rows, and tables of one file that ran on
// different rank counts are refused with the line.
TEST(ImportNcclTests, FiguresThatDoNotFollowAreRefused) {
  const auto error_of = [](const std::string& text, const char* source = "g.txt") {
    try {
      import_nccl_tests(text, source);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto edited = [](std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  EXPECT_EQ(
      error_of(edited(kText, "0.20    0.10      3", "0.20    0.15      3")),
      "g.txt:14: out-of-place busbw 0.15 GB/s is not algbw 0.2 GB/s x (2-1)/2 (0.10 GB/s): a garbled or "
      "edited row");
  EXPECT_EQ(
      error_of(edited(kText, "19.00    0.22", "12.00    0.22")),
      "g.txt:14: in-place algbw 0.22 GB/s does not follow from size 4096 B in 12 us (0.34 GB/s): a garbled "
      "or edited row");
  EXPECT_EQ(
      error_of(edited(kText, "        4096          1024", "        4096          2048")),
      "g.txt:14: out-of-place size 4096 B is count 2048 x 2 B x 1, not x 2 ranks: a garbled or edited row");
  // The 1 KiB row deleted: the average is still the four figures', not the remaining two.
  const std::string text = kText;
  const std::size_t row = text.find("        1024");
  EXPECT_EQ(
      error_of(text.substr(0, row) + text.substr(text.find('\n', row) + 1)),
      "g.txt:15: \"Avg bus bandwidth\" 0.0775 GB/s is not the mean busbw of the table's 2 figures (0.105 "
      "GB/s): rows were dropped or edited");
  // -C 1 prints the CPU time, which the bandwidths do not come from.
  std::string cputime = kText;
  for (std::size_t at = 0; (at = cputime.find("   time   algbw", at)) != std::string::npos; at += 15)
    cputime.replace(at, 7, "cputime");
  EXPECT_EQ(error_of(edited(cputime, "19.00    0.22", "12.00    0.22")), "no error");
  // JSON figures are allowed the table's rounding (a converted table), no more.
  const std::string head =
      R"({"args":["./build/all_reduce_perf"],"results":[{"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1")";
  EXPECT_EQ(error_of(head + R"(,"out_of_place":{"time":10.0,"alg_bw":0.1,"bus_bw":0.1}}]})", "j.json"),
            "no error");
  EXPECT_EQ(
      error_of(head + R"(,"out_of_place":{"time":10.0,"alg_bw":0.2,"bus_bw":0.1}}]})", "j.json"),
      "j.json: $.results[0].out_of_place: algbw 0.2 GB/s does not follow from size 1024 B in 10 us (0.10 "
      "GB/s): a garbled or edited row");
  EXPECT_EQ(error_of(head + R"(,"out_of_place":{"time":10.0,"alg_bw":0.1024,"bus_bw":0.1}}],)" +
                         R"("average_bus_bandwidth":{"bandwidth":0.5}})",
                     "j.json"),
            "j.json: $.average_bus_bandwidth: \"Avg bus bandwidth\" 0.5 GB/s is not the mean busbw of the "
            "table's 1 figures (0.100 GB/s): rows were dropped or edited");
  // Two runs in one log, on 2 and 4 ranks: not repeats of one measurement.
  const std::string four = edited(
      kText, "#  Rank  1 Group  0 Pid  1002 on     node02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n",
      "#  Rank  1 Group  0 Pid  1002 on     node02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  2 Group  0 Pid  1003 on     node03 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  3 Group  0 Pid  1004 on     node04 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n");
  EXPECT_EQ(error_of(std::string(kText) + four),
            "g.txt:31: this table ran on 4 ranks and the one at g.txt:11 on 2; import them separately");
  EXPECT_EQ(error_of(std::string(kText) + kText), "no error");  // the same run twice: repeats
}

// nccl-tests 2.19 with -I 1 (per-iteration CUDA events: i_min i_max i_p99 i_cv% after each side) and -S 1
// (a "%Y-%m-%d %H:%M:%S" timestamp, two words, ending each row), in the layout its src/util.cu prints.
const char* kPerIteration = R"(# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   2000 on     node01 device  0 [0000:18:00] NVIDIA H200
#  Rank  1 Group  0 Pid   2001 on     node01 device  1 [0000:19:00] NVIDIA H200
#  Rank  2 Group  0 Pid   2002 on     node01 device  2 [0000:1a:00] NVIDIA H200
#  Rank  3 Group  0 Pid   2003 on     node01 device  3 [0000:1b:00] NVIDIA H200
#  Rank  4 Group  0 Pid   2004 on     node01 device  4 [0000:1c:00] NVIDIA H200
#  Rank  5 Group  0 Pid   2005 on     node01 device  5 [0000:1d:00] NVIDIA H200
#  Rank  6 Group  0 Pid   2006 on     node01 device  6 [0000:1e:00] NVIDIA H200
#  Rank  7 Group  0 Pid   2007 on     node01 device  7 [0000:1f:00] NVIDIA H200
#
#                                                                 out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)   %Y-%m-%d %H:%M:%S
     1048576        262144     float     sum      -1   378.71    2.77    4.85       0   370.12   401.55   401.55     1.83   374.96    2.80    4.89       0   369.50   388.20   388.20     1.21  2026-12-04 15:40:01
     4194304       1048576     float     sum      -1   390.43   10.74   18.80       0   385.10   420.33   420.33     2.05   386.56   10.85   18.99       0   380.00   399.90   399.90     1.10  2026-12-04 15:40:02
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 11.8818 
#
# Collective test concluded: all_reduce_perf
)";

TEST(ImportNcclTests, PerIterationColumnsAndTimestamps) {
  const Report rep = import_nccl_tests(kPerIteration, "it.txt");
  ASSERT_EQ(rep.results.size(), 5u);
  const Result& r = rep.results[0];
  EXPECT_EQ(r.name, "allreduce/fp32/1048576");
  EXPECT_DOUBLE_EQ(r.metric("time_us")->value, 378.71);
  EXPECT_DOUBLE_EQ(r.metric("busbw_gbps")->value, 4.85);
  EXPECT_DOUBLE_EQ(r.metric("iter_min_us")->value, 370.12);
  EXPECT_DOUBLE_EQ(r.metric("iter_max_us")->value, 401.55);
  EXPECT_DOUBLE_EQ(r.metric("iter_p99_us")->value, 401.55);
  EXPECT_DOUBLE_EQ(r.metric("iter_cv_pct")->value, 1.83);
  EXPECT_EQ(r.metric("iter_p99_us")->better, Better::none);             // shown, not gated
  EXPECT_DOUBLE_EQ(rep.results[3].metric("iter_cv_pct")->value, 1.10);  // 4 MiB in place
  EXPECT_EQ(rep.run["world_size"], 8);
  // A table without -I has none of them.
  EXPECT_EQ(import_nccl_tests(kText, "ag.txt").results[0].metric("iter_p99_us"), nullptr);
  // The per-iteration figures are checked like the others.
  std::string negative = kPerIteration;
  negative.replace(negative.find("370.12"), 6, "-70.12");
  try {
    import_nccl_tests(negative, "it.txt");
    ADD_FAILURE() << "accepted a negative i_min";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "it.txt:18: column i_min: '-70.12' is not a plausible i_min");
  }
  // The JSON of -I 1: "out_of_place_per_iter" beside "out_of_place".
  const Report json = import_nccl_tests(
      R"({"args":["./build/all_reduce_perf"],"results":[{"size":1024,"count":256,"type":"float","redop":"sum",)"
      R"("out_of_place":{"time":10.0,"alg_bw":0.1024,"bus_bw":0.1024},)"
      R"("out_of_place_per_iter":{"skipped_iterations":0,"min_us":9.5,"max_us":14.25,"avg_us":10.0,)"
      R"("p50_us":9.9,"p95_us":12.0,"p99_us":14.25,"stdev_us":1.1,"cv_pct":11.0,"times_us":[9.5,14.25]}}]})",
      "it.json");
  EXPECT_DOUBLE_EQ(json.results[0].metric("iter_max_us")->value, 14.25);
  EXPECT_DOUBLE_EQ(json.results[0].metric("iter_cv_pct")->value, 11.0);
}

TEST(ImportNcclTests, JsonRowsWithoutFiguresOrNegativeCountsAreRefused) {
  const auto error_of = [](const std::string& text) {
    try {
      import_nccl_tests(text, "j.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head =
      R"({"args":["./build/all_reduce_perf"],"results":[{"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1")";
  EXPECT_EQ(error_of(head + R"(,"out_of_place":{"time":10.0,"alg_bw":0.1,"bus_bw":0.1,"nwrong":-5}}]})"),
            "j.json: $.results[0].out_of_place.nwrong: expected a whole number in [0, 9.0072e+15]");
  EXPECT_EQ(error_of(head + "}]}"),
            "j.json: $.results[0]: neither \"out_of_place\" nor \"in_place\": no figure");
  // out_of_bounds and average_bus_bandwidth are objects: a bare number would read as "no figure".
  const std::string row = head + R"(,"out_of_place":{"time":10.0,"alg_bw":0.1,"bus_bw":0.1,"nwrong":0}}])";
  EXPECT_EQ(error_of(row + R"(,"out_of_bounds":5})"), "j.json: $.out_of_bounds: expected an object");
  EXPECT_EQ(error_of(row + R"(,"average_bus_bandwidth":0.1})"),
            "j.json: $.average_bus_bandwidth: expected an object");
  EXPECT_EQ(error_of(row + R"(,"out_of_bounds":{"count":5}})"), "no error");
}

// Older nccl-tests (2.10.0 among them): "error" is the largest deviation (a float), not a count, and a table
// may have neither redop nor root (all_gather) or root without redop (broadcast).
TEST(ImportNcclTests, OldErrorColumnAndMissingColumns) {
  const std::string text =
      R"(# nThread 1 nGpus 4 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  100 on     host-a device  0 [0x36] Tesla V100-SXM3-32GB
#   Rank  1 Pid  100 on     host-a device  1 [0x39] Tesla V100-SXM3-32GB
#   Rank  2 Pid  100 on     host-a device  2 [0x5c] Tesla V100-SXM3-32GB
#   Rank  3 Pid  100 on     host-a device  3 [0x5e] Tesla V100-SXM3-32GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    61.03    0.00    0.00  2e-07    61.04    0.00    0.00  1e-07
          64            16   float     sum     0.50    0.13    0.19  6e-08     0.49    0.13    0.20  3e-05
# Out of bounds values : 1 FAILED
# Avg bus bandwidth    : 0.097
#
#                                             out-of-place                       in-place
#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
          32             2   float    57.30    0.00    0.00  0e+00    57.09    0.00    0.00  0e+00
          32             2   float    57.12    0.00    0.00  0e+00    57.62    0.00    0.00  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
)";
  try {  // the second table (allgather or alltoall: same shape) cannot be told apart
    import_nccl_tests(text, "old.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "old.txt:18: cannot tell which collective this table measured (no \"Collective test starting\" "
              "line or program name, and its shape fits several); give --op");
  }
  std::string named = text;
  named.insert(named.find("#                                             out-of-place"),
               "Running: ./build/all_gather_perf -g 4\n");
  const Report rep = import_nccl_tests(named, "old.txt");
  EXPECT_EQ(rep.run["world_size"], 4);
  EXPECT_EQ(rep.system["nccl"], "unknown");
  ASSERT_EQ(rep.results.size(), 8u);  // allreduce: 2 sizes x 2; allgather: 1 size x 2; 2 avg_busbw
  EXPECT_EQ(rep.results[0].name, "allreduce/fp32/8");  // from the shape: size = count x 4, busbw > algbw
  EXPECT_EQ(rep.results[0].status, Status::ok);        // 2e-07 is within float's 1e-5
  EXPECT_DOUBLE_EQ(rep.results[0].metric("max_error")->value, 2e-07);
  EXPECT_EQ(rep.results[0].metric("wrong"), nullptr);
  EXPECT_EQ(rep.results[3].name, "allreduce/fp32/64/inplace");
  EXPECT_EQ(rep.results[3].status, Status::failed);  // 3e-05 > 1e-5: the one out-of-bounds value
  EXPECT_EQ(rep.results[2].status, Status::ok);
  // The value's form decides too: "7e-07" under "#wrong" is a deviation, not 7e-07 wrong elements.
  std::string mislabelled = named;
  const std::string label = "busbw  error     time";
  mislabelled.replace(mislabelled.find(label), label.size(), "busbw #wrong     time");
  const Report m = import_nccl_tests(mislabelled, "old.txt");
  EXPECT_EQ(m.results[0].metric("wrong"), nullptr);
  EXPECT_DOUBLE_EQ(m.results[0].metric("max_error")->value, 2e-07);
  EXPECT_EQ(m.results[0].status, Status::ok);
  EXPECT_EQ(rep.results[4].name, "allgather/fp32/32");
  EXPECT_EQ(rep.results[4].params["redop"], "none");  // no redop column: not the next number
  EXPECT_EQ(rep.results[4].params["root"], -1);
  EXPECT_EQ(rep.results[4].params["repeats"], 2);  // the size ran twice: both kept
  EXPECT_DOUBLE_EQ(rep.results[4].metric("time_us")->value, (57.30 + 57.12) / 2);
  ASSERT_TRUE(rep.results[4].metric("time_us")->stats);
  EXPECT_EQ(rep.results[4].metric("time_us")->stats->n, 2u);
  EXPECT_EQ(rep.results[6].name, "allgather/avg_busbw");
  EXPECT_EQ(rep.results[7].name, "allreduce/avg_busbw");
  NcclTestsImportOptions op;
  op.op = "allfoo";
  EXPECT_THROW(import_nccl_tests({{"old.txt", text}}, op), Error);
}

// An all-gather table of an output that names no rank count (no device list, no NCCL INFO) shows it by its
// sizes (size = n x count x 4 B): its row of size 0 gets the table's factor (n-1)/n too, not null.
TEST(ImportNcclTests, SizeZeroRowsTakeTheRankCountOfTheirTable) {
  const std::string text = R"(# Collective test starting: all_gather_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           0             0     float    none      -1     0.30    0.00    0.00      0     0.29    0.00    0.00      0
        1024            64     float    none      -1     5.12    0.20    0.15      0     5.12    0.20    0.15      0
)";
  const Report r = import_nccl_tests(text, "ag.txt");
  ASSERT_EQ(r.results.size(), 4u);
  EXPECT_TRUE(r.run["world_size"].is_null());
  for (const auto& result : r.results) EXPECT_EQ(result.params["bus_factor"], 0.75) << result.name;
  EXPECT_EQ(r.results[0].name, "allgather/fp32/0");
  // Rows whose sizes disagree on n say nothing of a size-0 row's: it stays null.
  std::string mixed = text;
  mixed +=
      "        2048            64     float    none      -1    10.24    0.20    0.18      0    10.24    0.20 "
      "   0.18      0\n";
  const Report m = import_nccl_tests(mixed, "ag-mixed.txt");
  EXPECT_TRUE(m.results[0].params["bus_factor"].is_null()) << m.results[0].params.dump();
  EXPECT_EQ(m.results[2].params["bus_factor"], 0.75);
  EXPECT_EQ(m.results[4].params["bus_factor"], 0.875);
}

// mpirun --tag-output and srun --label prefixes, NCCL INFO lines inside the table, rank stderr.
TEST(ImportNcclTests, LauncherPrefixes) {
  const std::string tagged = R"([1,1]<stderr>:12 34 56 this is stderr
[1,0]<stdout>:# Collective test starting: reduce_scatter_perf_mpi
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:host:1:1 [0] NCCL INFO Launch mode Parallel
[1,1]<stdout>:host:2:2 [1] NCCL INFO comm 0x7f rank 1 nranks 2 cudaDev 1 busId 101d0 - Init COMPLETE
[1,0]<stdout>:        1024           128     float     sum      -1    10.00    0.10    0.05      0     9.50    0.11    0.05      0
)";
  const Report a = import_nccl_tests(tagged, "tagged.txt");
  ASSERT_EQ(a.results.size(), 2u);
  EXPECT_EQ(a.results[0].name, "reducescatter/fp32/1024");
  EXPECT_EQ(a.run["world_size"], 2);  // from NCCL INFO "nranks 2": the output lists no devices
  EXPECT_EQ(a.results[0].params["bus_factor"], 0.5);  // (n-1)/n: busbw 0.05 = algbw 0.10 x 1/2
  const std::string labelled =
      R"( 0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
 0:         1024           256     float     sum      -1    10.00    0.10    0.19    N/A     9.50    0.11    0.20    N/A
12:         2048           512     float     sum      -1    20.00    0.10    0.19    N/A    19.00    0.11    0.20    N/A
)";
  const Report b = import_nccl_tests(labelled, "srun.txt");
  ASSERT_EQ(b.results.size(), 4u);
  EXPECT_EQ(b.results[2].name, "allreduce/fp32/2048");       // shape: size = count x 4 and busbw/algbw > 1
  EXPECT_TRUE(b.run["world_size"].is_null());                // the output does not say
  EXPECT_TRUE(b.results[2].params["bus_factor"].is_null());  // 2(n-1)/n, and n unknown
  EXPECT_EQ(b.results[0].metric("wrong"), nullptr);
  // --op names the collective (nccl-tests' spelling or ours) where the shape would say otherwise...
  NcclTestsImportOptions op;
  op.op = "all_reduce_perf_mpi";
  std::string unnamed = tagged;
  unnamed.erase(unnamed.find("[1,0]<stdout>:# Collective"),
                unnamed.find("[1,0]<stdout>:#       size") - unnamed.find("[1,0]<stdout>:# Collective"));
  const Report overruled = import_nccl_tests({{"tagged.txt", unnamed}}, op);
  EXPECT_EQ(overruled.results[0].name, "allreduce/fp32/1024");
  // Its figures are still the file's: busbw / algbw as nccl-tests computed it for the shape's op.
  EXPECT_EQ(overruled.results[0].params["bus_factor"], 0.5);
  // ...but does not overrule the collective nccl-tests itself named (it merged different collectives).
  EXPECT_THROW(
      {
        try {
          import_nccl_tests({{"tagged.txt", tagged}}, op);
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(),
                       "tagged.txt:3: --op all_reduce_perf_mpi but the file says this table measured "
                       "reducescatter (from \"Collective test starting:\" reduce_scatter_perf_mpi)");
          throw;
        }
      },
      Error);
  op.op = "reducescatter";
  EXPECT_EQ(import_nccl_tests({{"tagged.txt", tagged}}, op).results[0].name, "reducescatter/fp32/1024");
}

// A byte that is not UTF-8 in a host name must not make the report unwritable (it made `import` exit 3).
TEST(ImportNcclTests, NonAsciiBytesStayValidJson) {
  std::string text = kText;
  text.replace(text.find("node02"), 6, "node\xff\x01");
  const Report rep = import_nccl_tests(text, "bytes.txt");
  EXPECT_EQ(rep.run["hosts"][1], "node??");
  EXPECT_NO_THROW(to_json(rep).dump());
}

// Several files of the same test: one result per size, every repeat kept.
TEST(ImportNcclTests, FilesOfTheSameTestAreRepeats) {
  const Report rep = import_nccl_tests({{"a.txt", kText}, {"b.txt", kText}}, {});
  ASSERT_EQ(rep.results.size(), 5u);
  std::set<std::string> names;
  for (const auto& r : rep.results) EXPECT_TRUE(names.insert(r.name).second) << r.name;
  EXPECT_EQ(rep.results[0].params["repeats"], 2);
  EXPECT_EQ(*rep.results[2].error, "nccl-tests reported 3 wrong elements (a.txt:14) and 1 more");
  EXPECT_EQ(rep.summary["import"].size(), 2u);
}

TEST(ImportNcclTests, JsonOutput) {
  const char* json =
      R"({"version":2,"start_time":"2026-11-28 09:14:02","args":["./build/all_reduce_perf","-b","8"],
    "nccl_version":22203,
    "config":{"nthreads":1,"ngpus":1,"iterations":20,"warmup_iters":5,
      "devices":[{"rank":0,"group":0,"pid":1,"hostname":"n1","device":0,"device_hex":"0000:18:00","device_info":"NVIDIA H200"}]},
    "results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
      "out_of_place":{"time":24.5,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0},
      "in_place":{"time":23.5,"alg_bw":0.0,"bus_bw":0.0,"nwrong":null},"actual_iterations":20,"experiment_name":""}],
    "average_bus_bandwidth":{"bandwidth":0.0,"okay":"unchecked"}})";
  const Report rep = import_nccl_tests(json, "ar.json");
  ASSERT_EQ(rep.results.size(), 3u);
  EXPECT_EQ(rep.results[0].name, "allreduce/fp32/8");
  EXPECT_EQ(rep.results[0].params["root"], -1);
  EXPECT_DOUBLE_EQ(rep.results[0].metric("time_us")->value, 24.5);
  EXPECT_DOUBLE_EQ(rep.results[0].metric("wrong")->value, 0.0);
  EXPECT_EQ(rep.results[1].metric("wrong"), nullptr);
  EXPECT_EQ(rep.system["ranks"][0]["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(rep.system["nccl"], "2.22.3");
  // A time nccl-tests could not measure is an error, not a null on an ok result.
  std::string nan = json;
  nan.replace(nan.find("\"time\":23.5"), 11, "\"time\":\"nan\"");
  try {
    import_nccl_tests(nan, "ar.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ar.json: $.results[0].in_place.time: not a number (nan)");
  }
}

TEST(ImportNcclTests, ErrorsSayWhere) {
  try {
    import_nccl_tests(
        R"({"results":[{"size":8,"type":"float","out_of_place":{"time":"fast","alg_bw":1,"bus_bw":1}}]})",
        "x.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "x.json: $.results[0].out_of_place.time: expected a number");
  }
  std::string bad = kText;
  bad.replace(bad.find("20.00    0.20"), 5, "xx.xx");
  try {
    import_nccl_tests(bad, "ag.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "ag.txt:14: column time: expected a number, got 'xx.xx'");
  }
  // A row of the table that is not a plain count is refused, not taken for a comment line and dropped.
  for (const auto& [size, why] : {std::pair{"-4096", "'-4096' is not a plausible size"},
                                  {"4096.5", "'4096.5' is not a plausible size"},
                                  {"4096x512", "expected a number, got '4096x512'"}}) {
    std::string garbled = kText;
    garbled.replace(garbled.find("        4096          1024"), 12, fmt::format("{:>12}", size));
    try {
      import_nccl_tests(garbled, "ag.txt");
      ADD_FAILURE() << "accepted size " << size;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), fmt::format("ag.txt:14: column size: {}", why));
    }
  }
  // Times are positive and bandwidths not negative.
  const auto garbled = [](const std::string& from, const std::string& to) {
    std::string text = kText;
    text.replace(text.find(from), from.size(), to);
    try {
      import_nccl_tests(text, "ag.txt");
      return std::string("accepted");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(garbled("20.00    0.20", "-20.0    0.20"),
            "ag.txt:14: column time: '-20.0' is not a plausible time");
  EXPECT_EQ(garbled("20.00    0.20", " 0.00    0.20"),
            "ag.txt:14: column time: '0.00' is not a plausible time");
  EXPECT_EQ(garbled("0.20    0.10", "0.20   -0.10"),
            "ag.txt:14: column busbw: '-0.10' is not a plausible busbw");
  // A type or reduction nccl-tests never prints is another tool's table or a garbled row.
  EXPECT_EQ(garbled("  1024  bfloat16", "  1024  bfloat17"),
            "ag.txt:14: column type: 'bfloat17' is not an nccl-tests data type (int8, uint8, int32, uint32, "
            "int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2)");
  EXPECT_EQ(
      garbled("  1024  bfloat16    none", "  1024  bfloat16    sumx"),
      "ag.txt:14: column redop: 'sumx' is not an nccl-tests reduction (sum, prod, max, min, avg, mulsum "
      "or none)");
  const auto json_error = [](const std::string& side) {
    try {
      import_nccl_tests(R"({"results":[{"size":8,"count":2,"type":"float","out_of_place":)" + side + "}]}",
                        "x.json");
      return std::string("accepted");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  const auto json_row_error = [](const std::string& type, const std::string& redop) {
    try {
      import_nccl_tests(R"({"args":["./build/all_reduce_perf"],"results":[{"size":8,"count":2,"type":")" +
                            type + R"(","redop":")" + redop +
                            R"(","out_of_place":{"time":5,"alg_bw":0.0016,"bus_bw":0.0016}}]})",
                        "x.json");
      return std::string("accepted");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(json_row_error("float", "sum"), "accepted");
  EXPECT_EQ(json_row_error("fp32", "sum")
                .rfind("x.json: $.results[0].type: 'fp32' is not an nccl-tests data type", 0),
            0u);
  EXPECT_EQ(json_row_error("float", "add")
                .rfind("x.json: $.results[0].redop: 'add' is not an nccl-tests reduction", 0),
            0u);
  EXPECT_EQ(json_error(R"({"time":-5,"alg_bw":1,"bus_bw":1})"),
            "x.json: $.results[0].out_of_place.time: a time must be positive");
  EXPECT_EQ(json_error(R"({"time":null,"alg_bw":1,"bus_bw":1})"),
            "x.json: $.results[0].out_of_place.time: expected a number");
  EXPECT_EQ(json_error(R"({"time":5,"alg_bw":1,"bus_bw":-1})"),
            "x.json: $.results[0].out_of_place.bus_bw: a bandwidth cannot be negative");
  EXPECT_THROW(import_nccl_tests("hello\nworld\n", "empty.txt"), Error);
}

TEST(ImportNcclTests, Names) {
  EXPECT_EQ(nccl_tests_op_name("./build/reduce_scatter_perf"), "reducescatter");
  EXPECT_EQ(nccl_tests_op_name("alltoall_perf"), "alltoall");
  EXPECT_EQ(nccl_tests_op_name("/usr/bin/all_reduce_perf_mpi"), "allreduce");  // NGC's MPI builds
  EXPECT_EQ(nccl_tests_op_name("all_gather"), "allgather");
  EXPECT_EQ(nccl_tests_dtype_name("half"), "fp16");
  EXPECT_EQ(nccl_tests_dtype_name("f8e4m3"), "fp8_e4m3");
  EXPECT_EQ(nccl_tests_dtype_name("uint8"), "uint8");
}

std::string mllog(const std::string& key, const std::string& value, double time_ms,
                  const std::string& meta = "{}") {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::to_string(static_cast<long long>(time_ms)) +
         ", \"event_type\": \"POINT_IN_TIME\", \"key\": \"" + key + "\", \"value\": " + value +
         ", \"metadata\": " + meta + "}\n";
}

std::string run_log(double minutes, const std::string& status = "success") {
  const double t0 = 1.7e12;
  std::string s = mllog("submission_benchmark", "\"bert\"", t0) + mllog("submission_org", "\"Org\"", t0) +
                  "some framework output that is not MLLOG\n" + mllog("run_start", "null", t0) +
                  mllog("tracked_stats", "{\"throughput\": 100.0}", t0 + 1000, "{\"step\": 1}") +
                  mllog("tracked_stats", "{\"throughput\": 120.0}", t0 + 2000, "{\"step\": 2}") +
                  mllog("tracked_stats", "{\"throughput\": 110.0}", t0 + 3000, "{\"step\": 3}") +
                  mllog("eval_accuracy", "0.72", t0 + 4000);
  if (!status.empty())
    s += mllog("run_stop", "null", t0 + minutes * 60000, "{\"status\": \"" + status + "\"}");
  return s;
}

TEST(ImportMlperf, TimeToTrainThroughputAndScore) {
  const Report rep = import_mlperf({{"r1.log", run_log(10)},
                                    {"r2.log", run_log(12)},
                                    {"r3.log", run_log(20)},
                                    {"r4.log", run_log(11)},
                                    {"r5.log", run_log(9, "aborted")}});
  ASSERT_EQ(rep.results.size(), 6u);
  const Result& r1 = rep.results[0];
  EXPECT_EQ(r1.benchmark, "mlperf");
  EXPECT_EQ(r1.name, "bert/run1");
  EXPECT_EQ(r1.params["submission_org"], "Org");
  EXPECT_DOUBLE_EQ(r1.metric("time_to_train_min")->value, 10.0);
  EXPECT_EQ(r1.metric("time_to_train_min")->better, Better::lower);
  EXPECT_DOUBLE_EQ(r1.metric("throughput_samples_per_s")->value, 110.0);  // median of 100, 120, 110
  EXPECT_DOUBLE_EQ(r1.metric("eval_accuracy")->value, 0.72);
  EXPECT_EQ(rep.results[4].status, Status::failed);
  EXPECT_EQ(*rep.results[4].error, "run_stop status \"aborted\"");
  const Result& score = rep.results[5];
  EXPECT_EQ(score.name, "bert/score");
  // Successful runs 10, 12, 20, 11 and one aborted: the aborted run is the dropped slowest (MLCommons'
  // result summarizer), so only the fastest (10) is dropped: mean of 11, 12 and 20.
  EXPECT_DOUBLE_EQ(score.metric("time_to_train_min")->value, (11.0 + 12.0 + 20.0) / 3);
  EXPECT_EQ(score.status, Status::ok);
  EXPECT_EQ(rep.summary["mlperf"]["submission_benchmark"], "bert");
  EXPECT_EQ(rep.summary["mlperf"]["system"], "unknown");  // no SYSJSON, no submission_platform
  EXPECT_TRUE(rep.run["world_size"].is_null());           // no number_of_nodes: unknown, not 1
}

// A results folder's scaling.json scales the score, not the runs (MLCommons' result summarizer,
// _get_scaling_factor: olympic mean × scaling_factor): runs 10, 20, 30, 40 and 50 min → mean of 20, 30 and
// 40 = 30, × 1.1 = 33.
TEST(ImportMlperf, ScalingJsonScalesTheScoreOnly) {
  const MlperfScaling scaling = parse_mlperf_scaling("bert/scaling.json", R"({"scaling_factor": 1.1})");
  EXPECT_EQ(scaling.source, "bert/scaling.json");
  EXPECT_DOUBLE_EQ(scaling.factor, 1.1);
  std::vector<MlperfLog> logs;
  for (int i = 1; i <= 5; ++i)
    logs.push_back({fmt::format("bert/result_{}.txt", i), run_log(10.0 * i), scaling});
  const Report rep = import_mlperf(logs);
  ASSERT_EQ(rep.results.size(), 6u);
  EXPECT_DOUBLE_EQ(rep.results[0].metric("time_to_train_min")->value, 10.0);  // a run as logged
  const Result& score = rep.results.back();
  EXPECT_EQ(score.name, "bert/score");
  EXPECT_DOUBLE_EQ(score.metric("time_to_train_min")->value, 33.0);
  EXPECT_DOUBLE_EQ(score.metric("time_to_train_min")->stats->max, 55.0);  // the spread, scaled alike
  EXPECT_DOUBLE_EQ(score.params["scaling_factor"].get<double>(), 1.1);
  EXPECT_EQ(score.params["scaling_file"], "bert/scaling.json");
  // Without the file: the olympic mean alone, and no scaling in its params.
  for (auto& log : logs) log.scaling.reset();
  const Report raw = import_mlperf(logs);
  EXPECT_DOUBLE_EQ(raw.results.back().metric("time_to_train_min")->value, 30.0);
  EXPECT_FALSE(raw.results.back().params.contains("scaling_factor"));
}

TEST(ImportMlperf, ABadScalingJsonOrFoldersScaledDifferentlyAreRefused) {
  const auto error_of = [](const std::string& text) {
    try {
      parse_mlperf_scaling("s/scaling.json", text);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of(R"({"scaling_factor": 0})"),
            "s/scaling.json: scaling_factor 0 is not a positive number");
  EXPECT_EQ(error_of(R"({"scaling_factor": -1.5})"),
            "s/scaling.json: scaling_factor -1.5 is not a positive number");
  EXPECT_EQ(error_of(R"({"scaling_factor": "1.1"})"),
            "s/scaling.json: scaling_factor \"1.1\" is not a positive number");
  EXPECT_EQ(error_of(R"({"factor": 1.1})"),
            "s/scaling.json: expected an object with \"scaling_factor\" (a scaling.json of an MLPerf results "
            "folder)");
  EXPECT_EQ(error_of("[1.1]").substr(0, 30), "s/scaling.json: expected an ob");
  EXPECT_EQ(error_of("{\"scaling_factor\": "),
            "s/scaling.json: malformed JSON: it ends inside a value, after 19 bytes (truncated?)");
  // One folder scaled, the other not (or scaled by another factor): refused, naming both logs.
  const MlperfScaling a{"a/scaling.json", 1.1}, b{"b/scaling.json", 1.2};
  const auto mixed = [&](std::optional<MlperfScaling> first, std::optional<MlperfScaling> second) {
    try {
      import_mlperf({{"a/result_0.txt", run_log(10), first}, {"b/result_0.txt", run_log(11), second}});
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(mixed(a, std::nullopt),
            "a/result_0.txt and b/result_0.txt are runs of bert from folders scaled differently "
            "(a/scaling.json says 1.1; no scaling.json): the summarizer scores a results folder at a time, "
            "so import each folder on its own");
  EXPECT_NE(mixed(a, b).find("(a/scaling.json says 1.1; b/scaling.json says 1.2)"), std::string::npos);
  EXPECT_EQ(mixed(a, a), "accepted");
}

// Two runs in one log (a second run_start after the run_stop) were one run, timed from the first start
// to the last stop; a start logged twice before the stop (several ranks) is still one run.
TEST(ImportMlperf, ASecondRunInOneLogIsRefused) {
  const std::string one = run_log(10);
  try {
    import_mlperf({{"two.log", one + one}});
    ADD_FAILURE() << "two runs in one log were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run_start after the run_stop at line"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("one run per log"), std::string::npos) << e.what();
  }
}

TEST(ImportMlperf, TwoFailedRunsGiveNoScore) {
  const Report rep = import_mlperf({{"r1.log", run_log(10)},
                                    {"r2.log", run_log(12)},
                                    {"r3.log", run_log(11)},
                                    {"r4.log", run_log(9, "aborted")},
                                    {"r5.log", run_log(9, "")}});
  const Result& score = rep.results.back();
  EXPECT_EQ(score.name, "bert/score");
  EXPECT_EQ(score.status, Status::failed);
  EXPECT_EQ(*score.error, "2 of 5 runs did not succeed; MLPerf scores at most 1 such run");
  EXPECT_EQ(score.metric("time_to_train_min"), nullptr);
}

// A run_stop status that is not a string is a garbled log, named (it escaped as an internal error; found by
// the mlperf_import fuzzer).
TEST(ImportMlperf, ANonStringStopStatusIsRefused) {
  const double t0 = 1.7e12;
  const std::string log = mllog("submission_benchmark", "\"bert\"", t0) + mllog("run_start", "null", t0 + 1) +
                          mllog("run_stop", "null", t0 + 2, "{\"status\": 2560}");
  try {
    import_mlperf({{"s.log", log}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_EQ(std::string(e.what()), "s.log:3: run_stop status 2560 is not a string");
  }
}

TEST(ImportMlperf, SummarizerScore) {
  EXPECT_DOUBLE_EQ(*mlperf_olympic_score({5, 1, 3}, 0, 1), 3.0);
  EXPECT_DOUBLE_EQ(*mlperf_olympic_score({5, 1, 3, 4}, 1, 1), 4.0);  // drop 1; the failed run was the slowest
  EXPECT_FALSE(mlperf_olympic_score({5, 1, 3}, 2, 1));               // too many failed runs
  EXPECT_FALSE(mlperf_olympic_score({5, 1}, 0, 1));                  // nothing left after dropping two
  EXPECT_DOUBLE_EQ(*mlperf_olympic_score({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2, 4), 6.5);  // unet3d: 5..8
  EXPECT_EQ(mlperf_max_dropped_runs("unet3d"), 4u);
  EXPECT_EQ(mlperf_max_dropped_runs("llama2_70b_lora"), 1u);
}

TEST(ImportMlperf, TimesMustBeOrderedAndFinite) {
  const double t0 = 1.7e12;
  const std::string reversed = mllog("submission_benchmark", "\"bert\"", t0) +
                               mllog("run_start", "null", t0 + 5000) +
                               mllog("run_stop", "null", t0, "{\"status\": \"success\"}");
  try {
    import_mlperf({{"rev.log", reversed}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "rev.log:3: run_stop (time_ms 1700000000000) does not follow run_start (line 2, time_ms "
              "1700000005000)");
  }
  const std::string huge =
      ":::MLLOG {\"time_ms\": 1e999, \"key\": \"run_start\", \"value\": null, \"metadata\": {}}\n";
  EXPECT_THROW(import_mlperf({{"inf.log", huge}}), Error);
  const std::string far =
      ":::MLLOG {\"time_ms\": 1e300, \"key\": \"run_start\", \"value\": null, \"metadata\": {}}\n" +
      mllog("run_stop", "null", t0);
  try {
    import_mlperf({{"far.log", far}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "far.log:1: run_start event: time_ms 1e+300 is not a time in ms since the epoch");
  }
  EXPECT_THROW(import_mlperf({{"neg.log", mllog("run_start", "null", -5) + mllog("run_stop", "null", 10)}}),
               Error);
  // A run_start stamped before init_start (a garbled clock: 1970) would make a time to train of decades.
  const std::string before_init = mllog("init_start", "null", t0) + mllog("run_start", "null", 1000) +
                                  mllog("run_stop", "null", t0 + 5000, "{\"status\": \"success\"}");
  try {
    import_mlperf({{"early.log", before_init}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "early.log:2: run_start (time_ms 1000) comes before init_start (line 1, time_ms 1700000000000)");
  }
  // Two time_ms in one event: refused, not the last one taken.
  const std::string twice =
      mllog("run_start", "null", t0) +
      ":::MLLOG {\"time_ms\": 1, \"time_ms\": 1700000009000, \"key\": \"run_stop\", \"value\": null}\n";
  try {
    import_mlperf({{"twice.log", twice}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "twice.log:2: $.time_ms: duplicate key");
  }
}

// What MLCommons' summarizer and checker make of logs a strict reader would refuse (found by an audit against
// mlcommons/logging): the run counts, or fails, instead of the whole import stopping.
TEST(ImportMlperf, LogsAsMlcommonsReadsThem) {
  const double t0 = 1.7e12;
  const std::string ok_stop = "{\"status\": \"success\"}";
  // mllog writes a diverged figure as NaN (Python's json): a failed run, not a garbled log.
  const std::string nan_throughput = mllog("run_start", "null", t0) +
                                     ":::MLLOG {\"time_ms\": 1, \"key\": \"throughput\", \"value\": NaN}\n" +
                                     mllog("run_stop", "null", t0 + 60000, ok_stop);
  const Report nan = import_mlperf({{"nan.log", nan_throughput}});
  EXPECT_EQ(nan.results[0].status, Status::failed);
  EXPECT_EQ(*nan.results[0].error, "the run diverged: nan.log:2: throughput is not finite");
  // Every rank logs the start and the stop: from the last start before the first stop to that stop
  // (result_summarizer.py), here 2 minutes, not 4.
  const std::string ranks = mllog("run_start", "null", t0) + mllog("run_start", "null", t0 + 60000) +
                            mllog("run_stop", "null", t0 + 180000, ok_stop) +
                            mllog("run_stop", "null", t0 + 300000, ok_stop);
  const Report two = import_mlperf({{"ranks.log", ranks}});
  EXPECT_DOUBLE_EQ(two.results[0].metric("time_to_train_min")->value, 2.0);
  EXPECT_EQ(two.results[0].status, Status::ok);
  // A log cut in the middle of its last event: the run was cut short.
  const std::string cut = mllog("run_start", "null", t0) + ":::MLLOG {\"time_ms\": 17000000";
  const Report c = import_mlperf({{"cut.log", cut}});
  EXPECT_EQ(*c.results[0].error,
            "the log ends in the middle of an event at cut.log:2: the run was cut short");
  // ...but a malformed line with lines after it is a garbled log.
  EXPECT_THROW(import_mlperf({{"cut.log", cut + "\n" + mllog("run_stop", "null", t0 + 1000, ok_stop)}}),
               Error);
  // A Latin-1 byte (MLCommons' checker reads logs as latin-1) is read, as '?'.
  const std::string latin1 = mllog("submission_org", "\"Soci\xe9t\xe9\"", t0) +
                             mllog("run_start", "null", t0) + mllog("run_stop", "null", t0 + 60000, ok_stop);
  EXPECT_EQ(import_mlperf({{"l1.log", latin1}}).results[0].params["submission_org"], "Soci?t?");
}

// A score from fewer runs than a submission holds carries the count it should have (benchmark_meta.py).
TEST(ImportMlperf, RunsASubmissionHolds) {
  EXPECT_EQ(mlperf_required_runs("llama2_70b_lora"), 10u);
  EXPECT_EQ(mlperf_required_runs("unet3d"), 40u);
  EXPECT_EQ(mlperf_required_runs("gpt3"), 3u);
  EXPECT_EQ(mlperf_required_runs("frobnicate"), std::nullopt);
}

// A score figure that is not a number is refused, not skipped (the previous accuracy would be reported).
TEST(ImportMlperf, ValuesThatAreNotNumbersAreRefused) {
  const double t0 = 1.7e12;
  const auto error_of = [&](const std::string& key, const std::string& value) {
    const std::string log = mllog("run_start", "null", t0) + mllog(key, value, t0 + 10) +
                            mllog("run_stop", "null", t0 + 20, "{\"status\": \"success\"}");
    try {
      import_mlperf({{"v.log", log}});
      return std::string("accepted");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(error_of("eval_accuracy", "null"), "v.log:2: eval_accuracy value null is not a finite number");
  EXPECT_EQ(error_of("eval_accuracy", "\"high\""),
            "v.log:2: eval_accuracy value \"high\" is not a finite number");
  EXPECT_EQ(error_of("throughput", "\"fast\""), "v.log:2: throughput value \"fast\" is not a finite number");
  EXPECT_EQ(error_of("number_of_nodes", "-4"),
            "v.log:2: number_of_nodes value -4 is not a count of at least 1");
  EXPECT_EQ(error_of("accelerators_per_node", "0"),
            "v.log:2: accelerators_per_node value 0 is not a count of at least 1");
  EXPECT_EQ(error_of("eval_accuracy", "0.95"), "accepted");
}

TEST(ImportMlperf, SysjsonNamesTheSystem) {
  const std::string log =
      ":::SYSJSON {\"submitter\":\"Org\",\"system_name\":\"Big_n4\",\"number_of_nodes\":\"4\","
      "\"accelerators_per_node\":\"8\"}\n" +
      run_log(10);
  const Report rep = import_mlperf({{"s.log", log}});
  EXPECT_EQ(rep.summary["mlperf"]["system"], "Big_n4");
  EXPECT_EQ(rep.run["world_size"], 32);
  EXPECT_EQ(rep.system["mlperf_system"]["submitter"], "Org");
  EXPECT_THROW(import_mlperf({{"bad.log", ":::SYSJSON {nope\n" + run_log(10)}}), Error);
}

TEST(ImportMlperf, UnfinishedRunAndBadLines) {
  const Report rep = import_mlperf({{"r1.log", run_log(10, "")}});
  EXPECT_EQ(rep.results[0].status, Status::failed);
  EXPECT_EQ(*rep.results[0].error, "no run_stop event (the run did not finish)");
  try {
    import_mlperf(
        {{"bad.log", run_log(10) + ":::MLLOG {not json\n" + mllog("eval_accuracy", "0.7", 1.7e12)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad.log:10: malformed :::MLLOG line (expected a JSON object after the tag)");
  }
  // A NUL ends nlohmann's input: the event before it would read as whole and the rest of the line go unseen.
  std::string nul_line = mllog("eval_accuracy", "0.7", 1.7e12);
  ASSERT_EQ(nul_line.back(), '\n');
  nul_line.insert(nul_line.size() - 1, std::string("\0 garbage", 9));
  try {
    import_mlperf({{"nul.log", run_log(10) + nul_line + mllog("eval_accuracy", "0.7", 1.7e12)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "nul.log:10: malformed :::MLLOG line (expected a JSON object after the tag)");
  }
  // A whole last event whose newline a crash replaced by zero bytes is still whole: the run imports as it
  // would without them.
  {
    std::string whole = run_log(10);
    ASSERT_EQ(whole.back(), '\n');
    whole.pop_back();
    const Report zeros = import_mlperf({{"zeros.log", whole + std::string("\0\0\0\0", 4)}});
    const Report plain = import_mlperf({{"plain.log", run_log(10)}});
    EXPECT_EQ(zeros.results[0].status, plain.results[0].status);
    EXPECT_EQ(zeros.results[0].status, Status::ok);
  }
  // The last line cut in the middle is a run cut short (the run fails), with or without the newline a
  // launcher adds to a killed job's partial line, with blank lines after it, or the zero bytes a file
  // system can leave at the end of a file written at a crash.
  const std::string cut_event = R"(:::MLLOG {"namespace": "", "time_ms": 1700000005000, "event_type": "POI)";
  for (const std::string& tail : {std::string(), std::string("\n"), std::string("\n\n  \n"),
                                  std::string("\0\0\0\0", 4), std::string("\n\0\0\n\0", 5)}) {
    const Report cut = import_mlperf({{"cut.log", run_log(10, "") + cut_event + tail}});
    EXPECT_EQ(cut.results[0].status, Status::failed) << tail.size();
    EXPECT_EQ(*cut.results[0].error,
              "the log ends in the middle of an event at cut.log:9: the run was cut short");
  }
  // Every event's time is a number, not only the ones the score reads.
  for (const char* stamp : {"null", "\"123\"", "true"}) {
    std::string log = run_log(10);
    const auto at = log.find("1700000004000");
    log.replace(at, 13, stamp);
    EXPECT_THROW(import_mlperf({{"t.log", log}}), Error) << stamp;
  }
  EXPECT_THROW(import_mlperf({{"none.log", "no mllog here\n"}}), Error);
}

TEST(ImportMlperf, OlympicMean) {
  EXPECT_DOUBLE_EQ(olympic_mean({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(olympic_mean({2, 4}), 3.0);
  EXPECT_DOUBLE_EQ(olympic_mean({10, 1, 2, 3, 100}), 5.0);
  EXPECT_TRUE(std::isnan(olympic_mean({})));
}

}  // namespace
}  // namespace fb::reports
