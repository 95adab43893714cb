// nccl-tests' figures follow from one time (src/*.cu GetBw): genuine rows pass, rows with one figure
// changed beyond its printed digits do not.
#include "reports/nccl_tests_consistency.hpp"

#include <gtest/gtest.h>

#include <string>

namespace fb::reports {
namespace {

PrintedFigure printed(const std::string& text) {
  return {std::stod(text), printed_half_unit(text)};
}

NcclTestsRow row(const std::string& op, std::optional<int> ranks, std::uint64_t size, std::uint64_t count,
                 const std::string& time, const std::string& algbw, const std::string& busbw) {
  return {op, ranks, size, count, 4, printed(time), printed(algbw), printed(busbw)};
}

TEST(PrintedHalfUnit, HalfTheLastPrintedDigit) {
  EXPECT_DOUBLE_EQ(printed_half_unit("613.3"), 0.05);
  EXPECT_DOUBLE_EQ(printed_half_unit("15870"), 0.5);
  EXPECT_DOUBLE_EQ(printed_half_unit("218.85"), 0.005);
  EXPECT_DOUBLE_EQ(printed_half_unit("439.369"), 0.0005);
  EXPECT_DOUBLE_EQ(printed_half_unit("1.2e+07"), 5e5);   // getFloatStr's last resort, "%7.1e"
  EXPECT_DOUBLE_EQ(printed_half_unit("3e-05"), 0.5e-5);  // "%g"
  EXPECT_DOUBLE_EQ(printed_half_unit("0"), 0.5);
  EXPECT_DOUBLE_EQ(printed_half_unit("  9.50"), 0.005);       // as the table pads it
  EXPECT_DOUBLE_EQ(printed_half_unit("1e-2147483648"), 0.0);  // strtod reads it (as 0): no overflow
}

// nccl_issue290_h100_1node_8gpu_allreduce.txt (tests/data/real): 128 MiB float sum on 8 H100s.
TEST(NcclTestsRow, GenuineAllReduceRowAgrees) {
  EXPECT_EQ(nccl_tests_row_mismatch(row("allreduce", 8, 134217728, 33554432, "613.3", "218.85", "382.99")),
            std::nullopt);
  // Without the device list the busbw factor is unknown; the algbw rule still holds.
  EXPECT_EQ(
      nccl_tests_row_mismatch(row("allreduce", std::nullopt, 134217728, 33554432, "613.3", "218.85", "1")),
      std::nullopt);
}

TEST(NcclTestsRow, EditedFiguresAreNamed) {
  // busbw raised: 218.85 x 2(8-1)/8 = 382.99, not 400.
  const auto bus =
      nccl_tests_row_mismatch(row("allreduce", 8, 134217728, 33554432, "613.3", "218.85", "400.00"));
  ASSERT_TRUE(bus);
  EXPECT_NE(bus->find("busbw 400 GB/s is not algbw 218.85 GB/s x 2(8-1)/8 (382.99 GB/s)"), std::string::npos)
      << *bus;
  // time lowered, bandwidths kept: 128 MiB in 513.3 us is 261.48 GB/s.
  const auto alg =
      nccl_tests_row_mismatch(row("allreduce", 8, 134217728, 33554432, "513.3", "218.85", "382.99"));
  ASSERT_TRUE(alg);
  EXPECT_NE(alg->find("algbw 218.85 GB/s does not follow from size 134217728 B in 513.3 us (261.48 GB/s)"),
            std::string::npos)
      << *alg;
  // A time no table prints (1e-300 us): the figure it implies in three digits, not 300.
  const auto tiny =
      nccl_tests_row_mismatch(row("allreduce", 8, 134217728, 33554432, "1e-300", "218.85", "382.99"));
  ASSERT_TRUE(tiny);
  EXPECT_NE(tiny->find("in 1e-300 us (1.34e+305 GB/s)"), std::string::npos) << *tiny;
  EXPECT_LT(tiny->size(), 120u) << *tiny;
  // size doubled: an all-reduce's size is its count times the element size.
  const auto size =
      nccl_tests_row_mismatch(row("allreduce", 8, 268435456, 33554432, "613.3", "218.85", "382.99"));
  ASSERT_TRUE(size);
  EXPECT_EQ(*size, "size 268435456 B is not count 33554432 x 4 B");
  // One digit in the last place is rounding; two are not.
  EXPECT_FALSE(
      nccl_tests_row_mismatch(row("allreduce", 8, 134217728, 33554432, "613.3", "218.84", "382.98")));
  EXPECT_TRUE(nccl_tests_row_mismatch(row("allreduce", 8, 134217728, 33554432, "613.3", "218.85", "383.01")));
}

// The smallest sizes print zeros: 8 B in 5.12 us is 0.0016 GB/s, "0.00"; "0.01" would not be a rounding.
TEST(NcclTestsRow, TinySizesPrintZeros) {
  EXPECT_FALSE(nccl_tests_row_mismatch(row("allreduce", 8, 8, 2, "5.12", "0.00", "0.00")));
  EXPECT_TRUE(nccl_tests_row_mismatch(row("allreduce", 8, 8, 2, "5.12", "0.01", "0.02")));
}

// All-gather: size = count x elem x n, algbw = size / time, busbw = algbw x (n-1)/n (nccl-tests >= 2.10);
// 1 MiB over 8 ranks in 100.0 us: algbw 10.48576, busbw 9.17504.
TEST(NcclTestsRow, AllGatherCurrentRule) {
  EXPECT_FALSE(nccl_tests_row_mismatch(row("allgather", 8, 1048576, 32768, "100.0", "10.49", "9.18")));
  // An output without a device list: the ranks come from size / (count x elem).
  EXPECT_FALSE(
      nccl_tests_row_mismatch(row("allgather", std::nullopt, 1048576, 32768, "100.0", "10.49", "9.18")));
  const auto ranks = nccl_tests_row_mismatch(row("allgather", 16, 1048576, 32768, "100.0", "10.49", "9.18"));
  ASSERT_TRUE(ranks);
  EXPECT_EQ(*ranks, "size 1048576 B is count 32768 x 4 B x 8, not x 16 ranks");
  EXPECT_TRUE(nccl_tests_row_mismatch(row("allgather", 8, 1048576, 32768, "100.0", "10.49", "10.49")));
}

// nccl_issue37_v100_allgather_error_column.txt: nccl-tests before 2.10 printed algbw = size x (n-1)/n /
// time and busbw = algbw (4 GiB on 8 V100s in 29122 us: 129.05 GB/s); such outputs still import.
TEST(NcclTestsRow, AllGatherBefore2020) {
  EXPECT_FALSE(nccl_tests_row_mismatch(
      row("allgather", std::nullopt, 4294967296, 134217728, "29122", "129.05", "129.05")));
  EXPECT_FALSE(
      nccl_tests_row_mismatch(row("allgather", 8, 4294967296, 134217728, "29122", "129.05", "129.05")));
  EXPECT_FALSE(
      nccl_tests_row_mismatch(row("reducescatter", 8, 4294967296, 134217728, "29122", "129.05", "129.05")));
  // Neither rule: the message is the current rule's.
  const auto both =
      nccl_tests_row_mismatch(row("allgather", 8, 4294967296, 134217728, "29122", "140.00", "140.00"));
  ASSERT_TRUE(both);
  EXPECT_NE(both->find("does not follow from size 4294967296 B in 29122 us (147.48 GB/s)"), std::string::npos)
      << *both;
  // The old rule belongs to all-gather and reduce-scatter only.
  EXPECT_TRUE(
      nccl_tests_row_mismatch(row("alltoall", 8, 4294967296, 134217728, "29122", "129.05", "129.05")));
}

// Hypercube moves (n-1)/n of the buffer (algbw = size x (n-1)/n / time, busbw = algbw); alltoallv's
// algbw comes from its largest peer, so only busbw = algbw x (n-1)/n is checked.
TEST(NcclTestsRow, HypercubeAndAlltoallv) {
  EXPECT_FALSE(nccl_tests_row_mismatch(row("hypercube", 8, 1048576, 32768, "100.0", "9.18", "9.18")));
  EXPECT_TRUE(nccl_tests_row_mismatch(row("hypercube", 8, 1048576, 32768, "100.0", "10.49", "10.49")));
  EXPECT_FALSE(nccl_tests_row_mismatch(row("alltoallv", 8, 1048576, 7, "100.0", "3.00", "2.63")));
  EXPECT_TRUE(nccl_tests_row_mismatch(row("alltoallv", 8, 1048576, 7, "100.0", "3.00", "3.00")));
}

// factorybench's console (all_ops_4ranks_inplace_wrong.txt in tests/data/factorybench_console): its
// alltoallv's size is count x elem and its algbw size / time, checked as such; other ops as nccl-tests',
// without the pre-2.10 all-gather rule.
TEST(NcclTestsRow, FactorybenchAlltoallvAndNoLegacyRules) {
  const auto fb = [](NcclTestsRow r) {
    r.factorybench = true;
    return r;
  };
  EXPECT_FALSE(nccl_tests_row_mismatch(fb(row("alltoallv", 4, 262080, 65520, "66.55", "3.94", "2.95"))));
  const auto algbw = nccl_tests_row_mismatch(fb(row("alltoallv", 4, 262080, 65520, "66.55", "4.94", "3.70")));
  ASSERT_TRUE(algbw);
  EXPECT_EQ(*algbw, "algbw 4.94 GB/s does not follow from size 262080 B in 66.55 us (3.94 GB/s)");
  EXPECT_TRUE(nccl_tests_row_mismatch(fb(row("alltoallv", 4, 262080, 1000, "66.55", "3.94", "2.95"))));
  // nccl-tests' alltoallv: the algbw is not checked.
  EXPECT_FALSE(nccl_tests_row_mismatch(row("alltoallv", 4, 262080, 65520, "66.55", "4.94", "3.70")));
  // An all-gather with busbw = algbw and algbw x (n-1)/n, nccl-tests before 2.10, is not factorybench's.
  EXPECT_FALSE(nccl_tests_row_mismatch(row("allgather", 4, 262144, 16384, "78.91", "2.49", "2.49")));
  EXPECT_TRUE(nccl_tests_row_mismatch(fb(row("allgather", 4, 262144, 16384, "78.91", "2.49", "2.49"))));
  EXPECT_FALSE(nccl_tests_row_mismatch(fb(row("allgather", 4, 262144, 16384, "78.91", "3.32", "2.49"))));
}

// busbw / algbw as the row's tool computed it, the factor a factorybench report records (docs/metrics.md).
TEST(NcclTestsRow, BusFactorOfTheRuleTheRowFollows) {
  const auto factor = [](NcclTestsRow r) { return nccl_tests_bus_factor(r, nccl_tests_row_before_2_10(r)); };
  EXPECT_EQ(factor(row("allreduce", 8, 134217728, 33554432, "613.3", "218.85", "382.99")), 1.75);
  EXPECT_EQ(factor(row("allreduce", std::nullopt, 134217728, 33554432, "613.3", "218.85", "1")),
            std::nullopt);
  EXPECT_EQ(factor(row("broadcast", std::nullopt, 1048576, 262144, "100.0", "10.49", "10.49")), 1.0);
  // The rank count from size = count x 4 B x 8 where the output lists no devices.
  EXPECT_EQ(factor(row("allgather", std::nullopt, 1048576, 32768, "100.0", "10.49", "9.18")), 0.875);
  // nccl-tests before 2.10: busbw = algbw; a row that follows neither rule reads by the current one.
  EXPECT_EQ(factor(row("allgather", 8, 4294967296, 134217728, "29122", "129.05", "129.05")), 1.0);
  EXPECT_EQ(factor(row("reducescatter", 8, 4294967296, 134217728, "29122", "129.05", "129.05")), 1.0);
  EXPECT_EQ(factor(row("allgather", 8, 4294967296, 134217728, "29122", "140.00", "140.00")), 0.875);
  EXPECT_EQ(factor(row("hypercube", 8, 1048576, 32768, "100.0", "9.18", "9.18")), 1.0);
  EXPECT_EQ(factor(row("alltoallv", 4, 262080, 65520, "66.55", "4.94", "3.70")), 0.75);
  EXPECT_EQ(factor(row("allfoo", 4, 1024, 256, "1.0", "1.0", "1.0")), std::nullopt);
  // A small row fits both rules within its digits (1 KiB in 30 us on 8 ranks: 0.03 either way): the table
  // decides, by its other rows.
  const auto small = row("allgather", 8, 1024, 32, "30.00", "0.03", "0.03");
  EXPECT_FALSE(nccl_tests_row_before_2_10(small));
  EXPECT_EQ(nccl_tests_bus_factor(small, false), 0.875);
  EXPECT_EQ(nccl_tests_bus_factor(small, true), 1.0);
  EXPECT_EQ(nccl_tests_bus_factor(row("allreduce", 8, 1024, 256, "30.00", "0.03", "0.06"), true), 1.75);
  // factorybench's console has no pre-2.10 rows: its all-gather's factor is (n-1)/n.
  NcclTestsRow fb = row("allgather", 4, 262144, 16384, "78.91", "2.49", "2.49");
  fb.factorybench = true;
  EXPECT_EQ(factor(fb), 0.75);
}

// An all-gather's or reduce-scatter's size is n x count x element bytes: the row shows n by itself.
TEST(NcclTestsRow, RankCountBySize) {
  EXPECT_EQ(
      nccl_tests_ranks_by_size(row("allgather", std::nullopt, 1048576, 32768, "100.0", "10.49", "9.18")), 8);
  EXPECT_EQ(nccl_tests_ranks_by_size(row("reducescatter", std::nullopt, 1024, 64, "5.12", "0.20", "0.15")),
            4);
  // The size's, not the device list's.
  EXPECT_EQ(nccl_tests_ranks_by_size(row("allgather", 2, 1024, 64, "5.12", "0.20", "0.15")), 4);
  // Nothing to read: another op's size is count x element, a row of size 0, a size not a multiple.
  EXPECT_EQ(nccl_tests_ranks_by_size(row("allreduce", std::nullopt, 1024, 256, "30.00", "0.03", "0.06")),
            std::nullopt);
  EXPECT_EQ(nccl_tests_ranks_by_size(row("allgather", std::nullopt, 0, 0, "0.30", "0.00", "0.00")),
            std::nullopt);
  EXPECT_EQ(nccl_tests_ranks_by_size(row("allgather", std::nullopt, 1000, 64, "5.00", "0.20", "0.15")),
            std::nullopt);
}

// -C 1 prints the CPU time; nccl-tests computes the bandwidths from the GPU-side time, so only busbw's
// relation to algbw is checked.
TEST(NcclTestsRow, CpuTimeIsNotTheBandwidthsTime) {
  NcclTestsRow r = row("allreduce", 8, 134217728, 33554432, "900.0", "218.85", "382.99");
  r.time_us.reset();
  EXPECT_FALSE(nccl_tests_row_mismatch(r));
  r.busbw = printed("218.85");
  EXPECT_TRUE(nccl_tests_row_mismatch(r));
}

// A JSON figure is allowed the rounding the text table would print it with (getFloatStr).
TEST(NcclTestsRow, JsonFiguresAreAllowedTheTablesRounding) {
  EXPECT_EQ(table_text(613.3, kTimeWidth), " 613.30");
  EXPECT_EQ(table_text(15870.4, kTimeWidth), "15870.4");
  EXPECT_EQ(table_text(1234567.0, kTimeWidth), "1234567");
  EXPECT_EQ(table_text(12345678.0, kTimeWidth), "1.2e+07");
  EXPECT_EQ(table_text(1234.5, kBandwidthWidth), "1234.5");
  EXPECT_EQ(table_text(123456.0, kBandwidthWidth), "123456");
  EXPECT_EQ(table_text(1234567.0, kBandwidthWidth), " 1e+06");
  const auto json = [](double v, int width) {
    return PrintedFigure{v, printed_half_unit(table_text(v, width))};
  };
  NcclTestsRow r{"sendrecv",
                 2,
                 1048576,
                 262144,
                 4,
                 json(100.0, kTimeWidth),
                 json(10.48576, kBandwidthWidth),
                 json(10.48576, kBandwidthWidth)};
  EXPECT_FALSE(nccl_tests_row_mismatch(r));
  r.busbw = json(10.49, kBandwidthWidth);  // a table converted to JSON
  EXPECT_FALSE(nccl_tests_row_mismatch(r));
  r.busbw = json(10.51, kBandwidthWidth);
  EXPECT_TRUE(nccl_tests_row_mismatch(r));
  r.busbw = json(10.48576, kBandwidthWidth);
  r.count.reset();  // a hand-made JSON without "count": the size rule cannot apply
  r.size = 1048576;
  EXPECT_FALSE(nccl_tests_row_mismatch(r));
  r.count = 1;
  EXPECT_TRUE(nccl_tests_row_mismatch(r));
}

// The same file's "Avg bus bandwidth : 439.369" is the mean of its twelve busbw figures.
TEST(NcclTestsAverage, MeanOfEveryFigure) {
  std::vector<PrintedFigure> busbw;
  for (const char* b : {"382.99", "382.34", "412.35", "413.97", "431.81", "430.69", "465.25", "464.70",
                        "468.57", "469.64", "473.60", "476.53"})
    busbw.push_back(printed(b));
  EXPECT_FALSE(nccl_tests_average_mismatch(printed("439.369"), busbw));
  // The two slowest figures deleted: the mean rises to 450.71; the printed average no longer fits.
  const auto dropped = nccl_tests_average_mismatch(printed("439.369"), {busbw.begin() + 2, busbw.end()});
  ASSERT_TRUE(dropped);
  EXPECT_EQ(
      *dropped,
      "\"Avg bus bandwidth\" 439.369 GB/s is not the mean busbw of the table's 10 figures (450.711 GB/s)");
  EXPECT_FALSE(nccl_tests_average_mismatch(printed("0"), {}));
}

}  // namespace
}  // namespace fb::reports
