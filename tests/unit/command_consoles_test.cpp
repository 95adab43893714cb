// The console views of locate, burnin, health, collective and gemm (reports/*_console.cpp): built from the
// Results the workloads make, the text the commands print.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <sstream>

#include <fmt/format.h>

#include "reports/attention_console.hpp"
#include "reports/burnin_console.hpp"
#include "reports/burnin_extra.hpp"
#include "reports/collective_console.hpp"
#include "reports/gemm_console.hpp"
#include "reports/health_console.hpp"
#include "reports/locate_console.hpp"
#include "workloads/burnin.hpp"
#include "workloads/collective_bisection.hpp"
#include "workloads/health_check.hpp"
#include "workloads/p2p_matrix.hpp"

namespace fb {
namespace {

using reports::Metric;

// Four ranks on two hosts, every direction at 10 GB/s but 0 -> 3 at 1 GB/s.
workloads::P2pRun p2p_run() {
  workloads::P2pRun run;
  for (int r = 0; r < 4; ++r) run.endpoints.push_back({r, r < 2 ? "h0" : "h1", r % 2});
  workloads::P2pMatrix m;
  m.bytes = 1 << 20;
  m.bw_gbps.assign(4, std::vector<double>(4, 10));
  m.latency_us.assign(4, std::vector<double>(4, 5));
  for (std::size_t i = 0; i < 4; ++i) m.bw_gbps[i][i] = m.latency_us[i][i] = std::nan("");
  m.bw_gbps[0][3] = 1;
  run.matrices = {m};
  run.verdict = workloads::judge_p2p(m, 0, 0.5);
  return run;
}

TEST(LocateConsole, MatrixVerdictBisectionAndTransport) {
  reports::Report report;
  workloads::P2pOptions p;
  p.scope = workloads::P2pScope::rank;
  report.results = workloads::p2p_results(p2p_run(), p);
  workloads::BisectionRun b;
  b.hosts = {"h0", "h1"};
  b.rounds = {{{{0, 2}, 4, 3.5, false}}, {{{0, 1}, 2, 7.25, false}, {{1, 2}, 2, NAN, false}}};
  // A network floor judges the job's group: without one, a lone networked group and a lone measurable node
  // have nothing to be compared with (below).
  workloads::BisectionOptions floor;
  floor.network_floor_gbps = 1;
  report.results.push_back(workloads::bisection_result(b, floor));
  reports::Result t;
  t.benchmark = "locate";
  t.name = "transport";
  t.params = {{"test", "transport"}};
  t.extra["summary"] = "NCCL network IB, transports ib,p2p";
  report.results.push_back(t);
  std::ostringstream out;
  reports::print_locate_report(out, report);
  EXPECT_EQ(
      out.str(),
      "p2p bandwidth GB/s at 1 MiB (row = sender, column = receiver):\n"
      "               r0       r1       r2       r3\n"
      "      r0        -       10       10        1\n"
      "      r1       10        -       10       10\n"
      "      r2       10       10        -       10\n"
      "      r3       10       10       10        -\n"
      "slow link: a = h0 (rank 0, GPU 0) <-> b = h1 (rank 3, GPU 1): a->b 1 GB/s 90% below the reference 10 "
      "GB/s\n"
      "bisection round 0: [h0,h1] 3.5 GB/s\n"
      "bisection round 1: [h0] 7.25 GB/s  [h1] n/a\n"
      "bisection: no node drags its group below floor\n"
      "transport: NCCL network IB, transports ib,p2p\n"
      "locate: FAIL\n");
  // No floor: nothing was judged, and the bisection says so as a skip, not a pass.
  const auto unjudged = workloads::bisection_result(b, {});
  EXPECT_EQ(unjudged.status, reports::Status::skipped);
  reports::Report alone;
  alone.results.push_back(unjudged);
  std::ostringstream skip;
  reports::print_locate_report(skip, alone);
  EXPECT_NE(
      skip.str().find("bisection: SKIP (nothing judged: no group had a peer of its kind to compare with and "
                      "no floor was given (--allreduce-floor or --floors); the p2p test compares the nodes "
                      "pairwise)\nlocate: SKIP (nothing judged)\n"),
      std::string::npos)
      << skip.str();
  // The p2p result's error is the same words.
  EXPECT_EQ(
      *report.results[0].error,
      "slow link: a = h0 (rank 0, GPU 0) <-> b = h1 (rank 3, GPU 1): a->b 1 GB/s 90% below the reference 10 "
      "GB/s");
}

TEST(LocateConsole, HangNamesTheRanksAndTheStateDirectory) {
  reports::Result r;
  r.benchmark = "locate";
  r.params = {{"test", "hang"}, {"run_dir", "/shared/fb-hang-x"}};
  r.extra["diagnosis"] = {"rank 5 (host h2, GPU 1) never entered allreduce #3 (256 KiB)"};
  std::ostringstream out;
  reports::print_hang(out, r);
  EXPECT_EQ(out.str(),
            "hang: rank 5 (host h2, GPU 1) never entered allreduce #3 (256 KiB)\n"
            "locate: FAIL (hang; rank states in /shared/fb-hang-x)\n");
  r.benchmark = "health";
  out.str("");
  reports::print_hang(out, r);
  EXPECT_NE(out.str().find("\nhealth: FAIL (hang; rank states in /shared/fb-hang-x)\n"), std::string::npos);
}

// Two nodes of two ranks; rank 3 (h1, GPU 1) mismatched at check 2.
reports::Report burnin_report_with_one_mismatch(nlohmann::json summary) {
  workloads::BurninRun run;
  run.size = 128;
  run.duration_s = 3;
  for (int r = 0; r < 4; ++r)
    run.ranks.push_back({r, r < 2 ? "h0" : "h1", r % 2, "cpu", {7, 7, 7}, {0, 1, 2}, 10, 0.25});
  run.problems = {{3, 2, 2.0, "checksum 9 at check 2 differs from its own first result 7"}};
  reports::Report report;
  report.results = workloads::burnin_results(run);
  report.summary["burnin"] = std::move(summary);
  return report;
}

TEST(BurninConsole, OneLinePerNode) {
  const auto report = burnin_report_with_one_mismatch({{"verdict", "fail"}, {"checks", 3}});
  std::ostringstream out;
  reports::print_burnin_report(out, report);
  EXPECT_EQ(out.str(),
            "node h0: PASS (2 rank(s), 3 checks after the reference, 0.5 TFLOP/s)\n"
            "node h1: FAIL rank 3 (h1, GPU 1): checksum 9 at check 2 differs from its own first result 7 "
            "(first seen at 2.0 s)\n"
            "burnin: FAIL\n");
}

// Stopped by a signal after 2 of 10 checks: a node that mismatched has failed, the others have not passed.
TEST(BurninConsole, AStoppedRunFailsWhatMismatchedAndLeavesTheRestNotFinished) {
  const auto report =
      burnin_report_with_one_mismatch({{"verdict", "fail"}, {"checks", 2}, {"checks_planned", 10}});
  std::ostringstream out;
  reports::print_burnin_report(out, report);
  EXPECT_EQ(
      out.str(),
      "node h0: NOT FINISHED (no mismatch in 2 of 10 checks after the reference, 2 rank(s), 0.5 TFLOP/s)\n"
      "node h1: FAIL rank 3 (h1, GPU 1): checksum 9 at check 2 differs from its own first result 7 "
      "(first seen at 2.0 s)\n"
      "burnin: FAIL (stopped after 2 of 10 checks)\n");
}

// The results' own verdict says the same as the console: a node with no mismatch in a run stopped early is
// not_finished (its status ok: nothing failed there), not pass.
TEST(BurninResults, ANodeOfARunStoppedEarlyIsNotFinished) {
  workloads::BurninRun run;
  run.size = 128;
  for (int r = 0; r < 4; ++r)
    run.ranks.push_back({r, r < 2 ? "h0" : "h1", r % 2, "cpu", {7, 7, 7}, {0, 1, 2}, 10, 0.25});
  run.problems = {{3, 2, 2.0, "checksum 9 at check 2 differs from its own first result 7"}};
  const auto verdicts = [&run] {
    std::vector<std::pair<std::string, reports::Status>> out;
    for (const auto& r : workloads::burnin_results(run))
      out.emplace_back(reports::read_burnin_extra(r).verdict, r.status);
    return out;
  };
  run.checks_planned = 10;  // 2 of 10 checks done
  EXPECT_EQ(verdicts(), (std::vector<std::pair<std::string, reports::Status>>{
                            {"not_finished", reports::Status::ok}, {"fail", reports::Status::failed}}));
  run.checks_planned = 2;  // all done
  EXPECT_EQ(verdicts(), (std::vector<std::pair<std::string, reports::Status>>{
                            {"pass", reports::Status::ok}, {"fail", reports::Status::failed}}));
}

TEST(HealthConsole, FiguresOfAPassReasonsOfAFail) {
  workloads::HealthRun run;
  for (int r = 0; r < 2; ++r) {
    workloads::RankHealth h;
    h.rank = r;
    h.host = "node1";
    h.device = "NVIDIA H200";
    workloads::CheckOutcome gemm{"gemm", workloads::Verdict::pass, "", {}};
    gemm.metrics.emplace_back("tflops", Metric{780.0, "TFLOP/s", reports::Better::higher, std::nullopt});
    workloads::CheckOutcome ckpt{"checkpoint_dir",
                                 r == 1 ? workloads::Verdict::fail : workloads::Verdict::pass,
                                 r == 1 ? "not writable" : "2 GB/s",
                                 {}};
    h.checks = {gemm, ckpt};
    h.verdict = r == 1 ? workloads::Verdict::fail : workloads::Verdict::pass;
    run.ranks.push_back(h);
    run.verdicts.push_back(h.verdict);
  }
  reports::Report report;
  report.results = workloads::health_results(run);
  report.summary["health"] = workloads::health_summary(run, {});
  std::ostringstream out;
  reports::print_health_report(out, report);
  EXPECT_EQ(out.str(),
            "rank 0 (node1, NVIDIA H200): PASS gemm 780.00 TFLOP/s\n"
            "rank 1 (node1, NVIDIA H200): FAIL checkpoint_dir: not writable\n"
            "health: 2 rank(s): 1 pass, 0 warn, 1 fail\n");
}

// A run that ended after 2 of its 9 checks (a hang, a signal): a rank with a failed check fails, the others
// are not finished, with what their checks found so far.
TEST(HealthConsole, AStoppedRunSaysWhichRanksAreNotFinished) {
  workloads::HealthRun run;
  for (int r = 0; r < 3; ++r) {
    workloads::RankHealth h;
    h.rank = r;
    h.host = "node" + std::to_string(r);
    h.device = "NVIDIA H200";
    const auto verdict =
        std::array{workloads::Verdict::pass, workloads::Verdict::warn, workloads::Verdict::fail}[r];
    workloads::CheckOutcome device{"device", workloads::Verdict::pass, "NVIDIA H200", {}};
    workloads::CheckOutcome memory{"memory", verdict, r == 0 ? "" : r == 1 ? "80% free" : "10% free", {}};
    h.checks = {device, memory};
    h.verdict = verdict;
    run.ranks.push_back(h);
    run.verdicts.push_back(h.verdict);
  }
  reports::Report report;
  report.results = workloads::health_results(run);
  report.summary["health"] = workloads::health_summary(run, {});
  report.summary["health"]["checks_done"] = 2;
  std::ostringstream out;
  reports::print_health_report(out, report);
  EXPECT_EQ(
      out.str(),
      "rank 0 (node0, NVIDIA H200): NOT FINISHED (2 of 9 checks, none failed)\n"
      "rank 1 (node1, NVIDIA H200): NOT FINISHED (2 of 9 checks, none failed; warned: memory: 80% free)\n"
      "rank 2 (node2, NVIDIA H200): FAIL memory: 10% free\n"
      "health: 3 rank(s): 0 pass, 0 warn, 1 fail, 2 not finished (2 of 9 checks done)\n");
  // All 9 done is a finished run, as one without checks_done.
  report.summary["health"]["checks_done"] = 9;
  std::ostringstream finished;
  reports::print_health_report(finished, report);
  EXPECT_EQ(finished.str().substr(0, 30), "rank 0 (node0, NVIDIA H200): P");
}

// A collective size as workloads/collective_benchmark.cpp makes it: name "<op>/<dtype>/<bytes>[/inplace]".
reports::Result collective_size(const std::string& op, std::uint64_t bytes, bool inplace, double us,
                                double wrong = 0) {
  reports::Result r;
  r.benchmark = "collective";
  r.name = fmt::format("{}/fp32/{}{}", op, bytes, inplace ? "/inplace" : "");
  r.params = {{"op", op},
              {"dtype", "fp32"},
              {"bytes", bytes},
              {"count", bytes / 4},
              {"ranks", 2},
              {"inplace", inplace},
              {"redop", op == "allgather" ? "none" : "sum"},
              {"root", -1}};
  const double algbw = static_cast<double>(bytes) / us / 1e3;
  r.set_metric("time_us", Metric{us, "us", reports::Better::lower, std::nullopt});
  r.set_metric("algbw_gbps", Metric{algbw, "GB/s", reports::Better::higher, std::nullopt});
  r.set_metric("busbw_gbps", Metric{algbw, "GB/s", reports::Better::higher, std::nullopt});
  r.set_metric("wrong", Metric{wrong, "count", reports::Better::lower, std::nullopt});
  return r;
}

reports::Result collective_average(double busbw) {
  reports::Result r;
  r.benchmark = "collective";
  r.name = "avg_busbw";
  r.params = {{"op", "all"}, {"dtype", "fp32"}, {"ranks", 2}, {"rows", 3}};
  r.set_metric("busbw_gbps", Metric{busbw, "GB/s", reports::Better::higher, std::nullopt});
  return r;
}

constexpr std::string_view kCollectiveHeader =
    "#                                                             out-of-place                              "
    " "
    "in-place\n"
    "#       size         count      type   redop    root       time    algbw    busbw  #wrong       time    "
    "algbw    busbw  #wrong\n"
    "#        (B)    (elements)                                 (us)   (GB/s)   (GB/s)               (us)   "
    "(GB/s)   (GB/s)        \n";

TEST(CollectiveConsole, OneTablePerOpInPlaceNextToOutOfPlaceAndTheFooter) {
  const std::vector<reports::Result> results = {
      collective_size("allreduce", 1024, false, 2.0),    collective_size("allreduce", 1024, true, 4.0),
      collective_size("allreduce", 4096, false, 4.0, 3), collective_size("allreduce", 4096, true, 8.0),
      collective_size("allgather", 4096, false, 2.0),    collective_average(1.25)};
  std::ostringstream out;
  reports::print_collective_table(out, results);
  const std::string no_inplace = "          -        -        -       -";
  EXPECT_EQ(
      out.str(),
      fmt::format("#\n# allreduce: 2 rank(s), fp32\n{}"
                  "        1024           256      fp32     sum      -1       2.00     0.51     0.51       0"
                  "       4.00     0.26     0.26       0\n"
                  "        4096          1024      fp32     sum      -1       4.00     1.02     1.02       3"
                  "       8.00     0.51     0.51       0\n"
                  "#\n# allgather: 2 rank(s), fp32\n{}"
                  "        4096          1024      fp32    none      -1       2.00     2.05     2.05       0"
                  "{}\n"
                  "# Wrong elements : 3 FAILED\n"
                  "# Avg bus bandwidth : 1.250\n"
                  "#\n",
                  kCollectiveHeader, kCollectiveHeader, no_inplace));
}

TEST(CollectiveConsole, StreamPrintsEachSizeAsItIsMeasuredAndEndsAsTheWholeTable) {
  std::vector<reports::Result> made = {collective_size("allreduce", 1024, false, 2.0),
                                       collective_size("allreduce", 4096, false, 4.0),
                                       collective_size("allgather", 4096, false, 2.0)};
  std::ostringstream out;
  reports::CollectiveTableStream stream(out, /*inplace_twins=*/false);
  stream.add(made[0]);
  // The first size is on the console before the second is measured.
  EXPECT_NE(out.str().find("\n        1024           256      fp32     sum"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("4096"), std::string::npos);
  stream.add(made[1]);
  stream.add(made[2]);
  made.push_back(collective_average(1.5));
  stream.finish(made);
  std::ostringstream whole;
  reports::print_collective_table(whole, made);
  EXPECT_EQ(out.str(), whole.str());
  // Finished: a result that comes after (the signal's footer printed while a size completes) prints nothing.
  stream.add(collective_size("allgather", 8192, false, 2.0));
  EXPECT_EQ(out.str(), whole.str());
}

TEST(CollectiveConsole, StreamPrintsASizeWhenItsInPlaceTwinIsMeasuredOrAloneWithoutIt) {
  const std::vector<reports::Result> made = {
      collective_size("allreduce", 1024, false, 2.0), collective_size("allreduce", 1024, true, 4.0),
      collective_size("allreduce", 4096, false, 4.0), collective_size("allreduce", 4096, true, 8.0)};
  std::ostringstream out;
  reports::CollectiveTableStream stream(out, /*inplace_twins=*/true);
  stream.add(made[0]);
  EXPECT_EQ(out.str().find("1024"), std::string::npos) << "the out-of-place row waits for its twin";
  stream.add(made[1]);
  EXPECT_NE(out.str().find("       2.00     0.51     0.51       0       4.00     0.26     0.26       0\n"),
            std::string::npos)
      << out.str();
  stream.add(made[2]);
  stream.add(made[3]);
  stream.finish(made);
  std::ostringstream whole;
  reports::print_collective_table(whole, made);
  EXPECT_EQ(out.str(), whole.str());

  // Stopped between the two placements of a size: the out-of-place figures are printed alone at finish.
  std::ostringstream cut;
  reports::CollectiveTableStream partial(cut, true);
  partial.add(made[0]);
  partial.add(made[1]);
  partial.add(made[2]);
  partial.finish(std::span(made).first(3));
  EXPECT_NE(cut.str().find(
                "        4096          1024      fp32     sum      -1       4.00     1.02     1.02       "
                "0          -        -        -       -\n"),
            std::string::npos)
      << cut.str();
  EXPECT_TRUE(cut.str().ends_with("# Wrong elements : 0 OK\n#\n")) << cut.str();
}

// A GEMM shape as workloads/gemm_benchmark.cpp makes it.
reports::Result gemm_shape(const std::string& name, double tflops, double us, std::optional<int> algo) {
  reports::Result r;
  r.benchmark = "gemm";
  r.name = name;
  r.params = {{"check", true}};
  r.set_metric("tflops", Metric{tflops, "TFLOP/s", reports::Better::higher,
                                SampleStats{tflops * 0.9, tflops, tflops * 1.1, tflops, tflops * 1.1, 0, 5}});
  r.set_metric("time_us", Metric{us, "us", reports::Better::lower, std::nullopt});
  r.set_metric("mfu", Metric{tflops / 1000, "fraction", reports::Better::higher, std::nullopt});
  if (algo)
    r.set_metric("algo", Metric{static_cast<double>(*algo), "id", reports::Better::none, std::nullopt});
  return r;
}

TEST(GemmConsole, StreamPrintsEachShapeAsItIsMeasuredAndEndsAsTheWholeTable) {
  std::vector<reports::Result> made = {gemm_shape("bf16/8192x8192x8192", 712.5, 1543.2, 3),
                                       gemm_shape("bf16/16384x8192x8192", 745.1, 2951.0, 7)};
  made[1].fail("412 of 128 sampled elements differ from the fp64 reference");
  const nlohmann::json summary = {{"engine", "cublasLt"},
                                  {"emulated", false},
                                  {"peak_source", "table: H100 SXM bf16 dense 989.4 TFLOP/s"},
                                  {"ranks", 2},
                                  {"outlier_threshold", 0.05},
                                  {"slow_ranks", nlohmann::json::array()}};
  std::vector<std::string> names;
  for (const auto& r : made) names.push_back(r.name);
  std::ostringstream out;
  reports::GemmTableStream stream(out, names);
  stream.begin(summary);
  EXPECT_EQ(out.str(), "# engine: cublasLt\n# peak: table: H100 SXM bf16 dense 989.4 TFLOP/s\n");
  stream.add(made[0]);
  // The first shape is on the console, with the algo column, before the second is measured.
  EXPECT_NE(out.str().find("   algo  check\nbf16/8192x8192x8192    "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("      3  ok\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("16384"), std::string::npos);
  stream.add(made[1]);
  stream.finish(summary);
  std::ostringstream whole;
  reports::print_gemm_table(whole, made, summary);
  EXPECT_EQ(out.str(), whole.str());
  EXPECT_NE(out.str().find("FAILED\n#   412 of 128 sampled"), std::string::npos) << out.str();
  EXPECT_TRUE(out.str().ends_with("# slow ranks: none (no rank more than 5.0% below the median)\n"));
  stream.add(made[0]);  // finished: prints nothing
  EXPECT_EQ(out.str(), whole.str());
}

TEST(GemmConsole, TheNameColumnFitsEveryShapeOfTheRunAndNoAlgoColumnWithoutAlgorithms) {
  // The widest name comes last: the first row is already as wide as the table.
  const std::vector<std::string> names = {"fp32/64x64x64", "fp32/1536x1536x1536"};
  std::ostringstream out;
  reports::GemmTableStream stream(out, names);
  stream.add(gemm_shape(names[0], 0.05, 10.5, std::nullopt));
  EXPECT_NE(out.str().find(fmt::format("{:<19}  ", "fp32/64x64x64")), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("algo"), std::string::npos) << out.str();
}

TEST(GemmConsole, RanksSharingTheirComputeAreListedNotFlagged) {
  const std::vector<reports::Result> made = {gemm_shape("fp32/512x512x512", 0.12, 2200, std::nullopt)};
  const nlohmann::json below = {{"rank", 3},        {"host", "vm"},           {"result", "fp32/512x512x512"},
                                {"tflops", 0.0595}, {"median_tflops", 0.119}, {"slower_by", 0.5}};
  nlohmann::json summary = {{"engine", "openblas cblas_sgemm"},
                            {"peak_source", "measured"},
                            {"ranks", 4},
                            {"outlier_threshold", 0.05},
                            {"slow_ranks", nlohmann::json::array()},
                            {"slow_ranks_not_judged",
                             {{"cores_shared", {"vm: 4 ranks share 2 cores"}}, {"below_median", {below}}}}};
  std::ostringstream out;
  reports::print_gemm_table(out, made, summary);
  EXPECT_TRUE(
      out.str().ends_with("# slow ranks: not judged, since ranks share their compute (vm: 4 ranks share 2 "
                          "cores) and take turns on "
                          "it\n#   more than 5.0% below the median: rank 3 in fp32/512x512x512 (50.0%)\n"))
      << out.str();
  EXPECT_EQ(out.str().find("SLOW RANK"), std::string::npos) << out.str();
  // None below the median: the first line alone.
  summary["slow_ranks_not_judged"]["below_median"] = nlohmann::json::array();
  std::ostringstream none;
  reports::print_gemm_table(none, made, summary);
  EXPECT_TRUE(none.str().ends_with("and take turns on it\n")) << none.str();
}

// An attention shape as workloads/attention_benchmark.cpp makes it.
reports::Result attention_shape(const std::string& name, double tflops, bool causal) {
  reports::Result r;
  r.benchmark = "attention";
  r.name = name;
  r.params = {{"check", true}, {"causal", causal}};
  r.set_metric("tflops", Metric{tflops, "TFLOP/s", reports::Better::higher,
                                SampleStats{tflops * 0.9, tflops, tflops * 1.1, tflops, tflops * 1.1, 0, 5}});
  r.set_metric("forward_tflops", Metric{tflops * 1.2, "TFLOP/s", reports::Better::higher, std::nullopt});
  r.set_metric("backward_tflops", Metric{tflops * 0.9, "TFLOP/s", reports::Better::higher, std::nullopt});
  r.set_metric("forward_time_us", Metric{250.5, "us", reports::Better::lower, std::nullopt});
  r.set_metric("backward_time_us", Metric{701.25, "us", reports::Better::lower, std::nullopt});
  r.set_metric("mfu", Metric{tflops / 1000, "fraction", reports::Better::higher, std::nullopt});
  return r;
}

TEST(AttentionConsole, StreamPrintsEachShapeAsItIsMeasuredAndEndsAsTheWholeTable) {
  std::vector<reports::Result> made = {attention_shape("bf16/b1/s2048/h32-kv8/d128", 410.5, true),
                                       attention_shape("bf16/b1/s8192/h32-kv8/d128/full", 512.25, false)};
  made[1].fail("3 of 16 sampled rows differ from the fp64 reference");
  std::vector<std::string> names;
  for (const auto& r : made) names.push_back(r.name);
  std::ostringstream out;
  reports::AttentionTableStream stream(out, names, /*any_causal=*/true, /*any_full=*/true);
  stream.begin("cudnn");
  EXPECT_EQ(out.str(),
            "# engine: cudnn; FLOPs counted as Megatron counts them (causal halved, full whole)\n");
  stream.add(made[0]);
  // The first shape is on the console, as wide as the widest name of the run, before the second is measured.
  EXPECT_NE(out.str().find(fmt::format("{:<31}  ", "bf16/b1/s2048/h32-kv8/d128")), std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("s8192"), std::string::npos);
  stream.add(made[1]);
  stream.finish();
  std::ostringstream whole;
  reports::print_attention_table(whole, made, {{"engine", "cudnn"}});
  EXPECT_EQ(out.str(), whole.str());
  EXPECT_NE(out.str().find("FAILED\n#   3 of 16 sampled rows"), std::string::npos) << out.str();
  stream.add(made[0]);  // finished: prints nothing
  EXPECT_EQ(out.str(), whole.str());
  // Causal shapes alone say so.
  std::ostringstream causal;
  reports::AttentionTableStream only_causal(causal, names, true, false);
  only_causal.begin("reference");
  EXPECT_EQ(causal.str(), "# engine: reference; FLOPs counted as Megatron counts them (causal halved)\n");
}

}  // namespace
}  // namespace fb
