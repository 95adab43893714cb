#include "core/fault_injection.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace fb {
namespace {

TEST(FaultInjectionTest, ParsesEveryKind) {
  const auto f = parse_injected_faults(
      "slow-link@ranks=2-5,delay=20ms;slow-rank@rank=3,delay=1s;hang@rank=1,call=12;sdc@rank=0,check=2;"
      "wrong@rank=4,check=3");
  ASSERT_EQ(f.slow_links.size(), 1u);
  EXPECT_EQ(f.slow_links[0].a, 2);
  EXPECT_EQ(f.slow_links[0].b, 5);
  EXPECT_DOUBLE_EQ(f.send_delay(2, 5), 0.020);
  EXPECT_DOUBLE_EQ(f.send_delay(5, 2), 0.020);
  EXPECT_DOUBLE_EQ(f.send_delay(2, 4), 0);
  EXPECT_DOUBLE_EQ(f.send_delay(3, 0), 1.0);  // the slow rank sends late to everyone
  EXPECT_DOUBLE_EQ(f.send_delay(0, 3), 0);
  EXPECT_DOUBLE_EQ(f.collective_delay(3), 1.0);
  EXPECT_DOUBLE_EQ(f.collective_delay(2), 0);
  EXPECT_TRUE(f.hangs_at(1, 12));
  EXPECT_FALSE(f.hangs_at(1, 11));
  EXPECT_FALSE(f.hangs_at(0, 12));
  EXPECT_EQ(f.sdc_rank, 0);
  EXPECT_EQ(f.sdc_check, 2u);
  EXPECT_EQ(f.wrong_rank, 4);
  EXPECT_EQ(f.wrong_check, 3u);
  EXPECT_EQ(parse_injected_faults("wrong@rank=1").wrong_check, 1u);
  EXPECT_FALSE(f.empty());
}

TEST(FaultInjectionTest, EmptySpecInjectsNothing) {
  const auto f = parse_injected_faults("");
  EXPECT_TRUE(f.empty());
  EXPECT_DOUBLE_EQ(f.send_delay(0, 1), 0);
  EXPECT_FALSE(f.hangs_at(0, 1));
}

void expect_usage(const char* spec, const char* message) {
  try {
    parse_injected_faults(spec);
    ADD_FAILURE() << spec << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(FaultInjectionTest, BadSpecsSayWhatIsWrong) {
  expect_usage("slow-link@ranks=2,delay=1ms",
               "invalid FACTORYBENCH_INJECT entry 'slow-link@ranks=2,delay=1ms': ranks must be A-B");
  expect_usage(
      "slow-link@ranks=2-2,delay=1ms",
      "invalid FACTORYBENCH_INJECT entry 'slow-link@ranks=2-2,delay=1ms': a link needs two different ranks");
  expect_usage("hang@rank=1", "invalid FACTORYBENCH_INJECT entry 'hang@rank=1': missing call=");
  expect_usage(
      "hang@rank=1,call=0",
      "invalid FACTORYBENCH_INJECT entry 'hang@rank=1,call=0': call must be an integer of at least 1 "
      "(call numbers start at 1)");
  expect_usage(
      "hang@rank=1,call=-1",
      "invalid FACTORYBENCH_INJECT entry 'hang@rank=1,call=-1': call must be an integer of at least 1 "
      "(call numbers start at 1)");
  expect_usage(
      "slow-rank@rank=x,delay=1ms",
      "invalid FACTORYBENCH_INJECT entry 'slow-rank@rank=x,delay=1ms': rank must be a non-negative integer");
  expect_usage("crash@rank=1",
               "invalid FACTORYBENCH_INJECT entry 'crash@rank=1': unknown kind 'crash' (expected "
               "slow-link, slow-rank, hang, sdc or wrong)");
  expect_usage(
      "wrong@rank=1,check=0",
      "invalid FACTORYBENCH_INJECT entry 'wrong@rank=1,check=0': check must be an integer of at least "
      "1 (check numbers start at 1)");
  // As --faults: an empty entry, a key given twice (the last won) and a link given twice (the delays added)
  // are typos, refused.
  expect_usage("hang@rank=1,call=2;;slow-rank@rank=0,delay=1ms",
               "invalid FACTORYBENCH_INJECT 'hang@rank=1,call=2;;slow-rank@rank=0,delay=1ms': an empty entry "
               "(two ';' in a row, or one at an end)");
  expect_usage(
      "hang@rank=1,call=2;",
      "invalid FACTORYBENCH_INJECT 'hang@rank=1,call=2;': an empty entry (two ';' in a row, or one at "
      "an end)");
  expect_usage("slow-rank@rank=1,delay=5ms,delay=1ms",
               "invalid FACTORYBENCH_INJECT entry 'slow-rank@rank=1,delay=5ms,delay=1ms': key 'delay' given "
               "twice");
  expect_usage(
      "slow-link@ranks=0-1,delay=1ms;slow-link@ranks=1-0,delay=2ms",
      "invalid FACTORYBENCH_INJECT entry 'slow-link@ranks=1-0,delay=2ms': the link 1-0 is given twice "
      "(its delays would add up)");
  expect_usage("sdc@rank=1,when=2",
               "invalid FACTORYBENCH_INJECT entry 'sdc@rank=1,when=2': unknown key 'when'");
  expect_usage("slow-rank", "invalid FACTORYBENCH_INJECT entry 'slow-rank': expected KIND@key=value,...");
  // A bad delay is named with the variable and its entry, not as a bare "invalid delay".
  expect_usage(
      "slow-rank@rank=0,delay=1e30s",
      "invalid FACTORYBENCH_INJECT entry 'slow-rank@rank=0,delay=1e30s': invalid delay '1e30s': at most "
      "100 years");
  expect_usage(
      "slow-link@ranks=0-1,delay=soon",
      "invalid FACTORYBENCH_INJECT entry 'slow-link@ranks=0-1,delay=soon': invalid delay 'soon': expected "
      "a duration such as 500ms, 90s, 15m or 2h");
  // A second slow-rank, hang or sdc entry used to replace the first without a word.
  expect_usage(
      "slow-rank@rank=3,delay=1ms;slow-rank@rank=6,delay=1ms",
      "invalid FACTORYBENCH_INJECT entry 'slow-rank@rank=6,delay=1ms': one slow-rank entry per run (a "
      "second would replace the first)");
  expect_usage(
      "sdc@rank=1;sdc@rank=3,check=2",
      "invalid FACTORYBENCH_INJECT entry 'sdc@rank=3,check=2': one sdc entry per run (a second would "
      "replace the first)");
}

TEST(FaultInjectionTest, RanksOutsideTheJobAreRefused) {
  const auto f = parse_injected_faults("slow-link@ranks=0-5,delay=1ms");
  EXPECT_NO_THROW(check_injected_ranks(f, 8));
  try {
    check_injected_ranks(f, 4);
    ADD_FAILURE() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "FACTORYBENCH_INJECT 'slow-link@ranks=0-5,delay=1ms': slow-link names rank 5, but the job has "
        "ranks 0..3");
  }
  EXPECT_THROW(check_injected_ranks(parse_injected_faults("hang@rank=2,call=3"), 2), Error);
  // A hang is found through the peers waiting for it: none in a one-rank job (it sat there until killed).
  EXPECT_THROW(check_hang_has_peers(parse_injected_faults("hang@rank=0,call=1"), 1), Error);
  EXPECT_NO_THROW(check_hang_has_peers(parse_injected_faults("hang@rank=0,call=1"), 2));
  EXPECT_NO_THROW(check_hang_has_peers(parse_injected_faults("slow-rank@rank=0,delay=1ms"), 1));
  EXPECT_NO_THROW(check_injected_ranks(parse_injected_faults("sdc@rank=1"), 2));
}

}  // namespace
}  // namespace fb
