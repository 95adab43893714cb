// Fault-spec parsing (good and bad), the random Poisson plan, the JSON form and the "fired" record.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "resilience/fault_plan.hpp"

namespace fb::resilience {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FaultPlan, ParsesTheIssueScenario) {
  const auto plan = parse_fault_spec(
      "crash@step=15,rank=1;hang@step=33,rank=2;ckpt-corrupt@step=40;crash@step=45,rank=3", 4);
  ASSERT_EQ(plan.faults.size(), 4u);
  EXPECT_EQ(plan.faults[0].kind, FaultKind::crash);
  EXPECT_EQ(*plan.faults[0].step, 15);
  EXPECT_EQ(plan.faults[0].rank, 1);
  EXPECT_EQ(plan.faults[1].kind, FaultKind::hang);
  EXPECT_EQ(plan.faults[2].kind, FaultKind::ckpt_corrupt);
  EXPECT_EQ(plan.faults[2].rank, 0);  // default
  EXPECT_EQ(plan.faults[3].id, 3);
  EXPECT_EQ(plan.faults[3].text, "crash@step=45,rank=3");
  EXPECT_FALSE(plan.random);
}

TEST(FaultPlan, ParsesEveryKindAndTimeTriggers) {
  const auto plan = parse_fault_spec(
      " straggler@time=30s,rank=2,factor=3,duration=1m ; sdc@step=5 ; nan@step=6,rank=1; "
      "ckpt-write-fail@step=20",
      4);
  ASSERT_EQ(plan.faults.size(), 4u);
  EXPECT_EQ(plan.faults[0].kind, FaultKind::straggler);
  EXPECT_FALSE(plan.faults[0].step);
  EXPECT_DOUBLE_EQ(*plan.faults[0].time_s, 30);
  EXPECT_DOUBLE_EQ(plan.faults[0].factor, 3);
  EXPECT_DOUBLE_EQ(plan.faults[0].duration_s, 60);
  EXPECT_EQ(plan.faults[1].kind, FaultKind::sdc);
  EXPECT_EQ(plan.faults[2].kind, FaultKind::nan);
  EXPECT_EQ(plan.faults[3].kind, FaultKind::ckpt_write_fail);
  EXPECT_TRUE(is_fatal(FaultKind::crash));
  EXPECT_FALSE(is_fatal(FaultKind::ckpt_write_fail));
  EXPECT_EQ(to_string(FaultKind::ckpt_corrupt), "ckpt-corrupt");
}

TEST(FaultPlan, MalformedSpecsQuoteTheBadPart) {
  const auto msg = [](const char* spec) { return error_of([&] { parse_fault_spec(spec, 4); }); };
  EXPECT_EQ(
      msg("crash@step=15;crsh@step=3"),
      "invalid --faults 'crsh@step=3': unknown fault kind 'crsh' (expected crash, hang, straggler, sdc, nan, "
      "ckpt-corrupt, ckpt-write-fail)");
  EXPECT_EQ(msg("crash@step=x"), "invalid --faults 'crash@step=x': step='x' is not an integer");
  EXPECT_EQ(msg("crash@step=0"), "invalid --faults 'crash@step=0': step=0 must be at least 1");
  EXPECT_EQ(msg("crash@step=3,rank=4"),
            "invalid --faults 'crash@step=3,rank=4': rank=4 is not below the 4 ranks");
  EXPECT_EQ(msg("crash"), "invalid --faults 'crash': expected KIND@step=N or KIND@time=D");
  EXPECT_EQ(msg("crash@rank=1"), "invalid --faults 'crash@rank=1': give exactly one of step=N and time=D");
  EXPECT_EQ(msg("crash@step=1,time=3s"),
            "invalid --faults 'crash@step=1,time=3s': give exactly one of step=N and time=D");
  EXPECT_EQ(msg("crash@step=2,factor=2"),
            "invalid --faults 'crash@step=2,factor=2': factor and duration apply to straggler faults only");
  EXPECT_EQ(msg("straggler@step=2,factor=0.5"),
            "invalid --faults 'straggler@step=2,factor=0.5': factor=0.5 must be greater than 1");
  EXPECT_EQ(
      msg("straggler@step=2,factor=1e300"),
      "invalid --faults 'straggler@step=2,factor=1e300': factor=1e+300 is above 1000 (a rank that slow is a "
      "hang: inject hang)");
  EXPECT_NO_THROW(parse_fault_spec("straggler@step=2,factor=1000", 4));
  EXPECT_EQ(msg("hang@time=soon"),
            "invalid --faults 'hang@time=soon': time='soon' is not a duration (e.g. 30s, 5m)");
  EXPECT_EQ(
      msg("hang@step=3,colour=red"),
      "invalid --faults 'hang@step=3,colour=red': unknown key 'colour' (expected step, time, rank, factor, "
      "duration)");
  EXPECT_EQ(msg("random:mix=crash:1"),
            "invalid --faults 'random:mix=crash:1': random plans need mtbf=DURATION (positive)");
  EXPECT_EQ(
      msg("random:mtbf=1m,mix=crash:0.5/boom:0.5"),
      "invalid --faults 'random:mtbf=1m,mix=crash:0.5/boom:0.5': unknown fault kind 'boom' in mix (expected "
      "crash, hang, straggler, sdc, nan, ckpt-corrupt, ckpt-write-fail)");
  EXPECT_EQ(msg("random:mtbf=1m,flaky-ranks=9"),
            "invalid --faults 'random:mtbf=1m,flaky-ranks=9': flaky-ranks=9 exceeds the 4 ranks");
  EXPECT_EQ(msg("random:mtbf=1m,flaky-share=2"),
            "invalid --faults 'random:mtbf=1m,flaky-share=2': flaky-share must be in [0, 1]");
  EXPECT_EQ(msg("  "), "invalid --faults '': expected KIND@step=N, KIND@time=D or random:…");
  // An empty entry most likely lost a fault in editing.
  EXPECT_EQ(
      msg("crash@step=3;;hang@step=9"),
      "invalid --faults 'crash@step=3;;hang@step=9': an empty entry (a ';' twice in a row, or at an end)");
  EXPECT_EQ(msg("crash@step=3; "),
            "invalid --faults 'crash@step=3; ': an empty entry (a ';' twice in a row, or at an end)");
  // A rank beyond an int wrapped before the check against the job (4294967296 crashed rank 0).
  EXPECT_EQ(msg("crash@step=3,rank=4294967296"),
            "invalid --faults 'crash@step=3,rank=4294967296': rank=4294967296 must be at most 16777216");
  EXPECT_EQ(
      msg("random:mtbf=1m,flaky-ranks=4294967297"),
      "invalid --faults 'random:mtbf=1m,flaky-ranks=4294967297': flaky-ranks=4294967297 must be at most "
      "16777216");
  // A key given twice is a typo, not "the last one wins".
  EXPECT_EQ(msg("nan@step=1,rank=0,rank=1"),
            "invalid --faults 'nan@step=1,rank=0,rank=1': 'rank' given twice");
  EXPECT_EQ(msg("random:mtbf=5m,mtbf=6m"), "invalid --faults 'random:mtbf=5m,mtbf=6m': 'mtbf' given twice");
  EXPECT_EQ(msg("random:mtbf=5m,seed=1,seed=2"),
            "invalid --faults 'random:mtbf=5m,seed=1,seed=2': 'seed' given twice");
  EXPECT_EQ(
      msg("random:mtbf=5m,mix=crash:0.5/crash:0.5"),
      "invalid --faults 'random:mtbf=5m,mix=crash:0.5/crash:0.5': fault kind 'crash' given twice in mix");
  EXPECT_EQ(error_of([] { load_fault_plan("/nonexistent/plan.json", 4); }),
            "invalid --faults '/nonexistent/plan.json': not a fault spec (KIND@step=N, KIND@time=D, "
            "random:…, none) and no such file");
}

TEST(FaultPlan, NoneIsTheEmptyPlan) {
  const auto plan = load_fault_plan(" none ", 4);
  EXPECT_TRUE(plan.faults.empty());
  EXPECT_FALSE(plan.random);
  EXPECT_EQ(plan.source, "none");
  EXPECT_EQ(
      error_of([] { load_fault_plan("nones", 4); }),
      "invalid --faults 'nones': not a fault spec (KIND@step=N, KIND@time=D, random:…, none) and no such "
      "file");
}

TEST(FaultPlan, RandomPlanIsPoissonDeterministicAndConcentratedOnFlakyRanks) {
  const double mtbf = 60, horizon = 60 * 20000.0;
  const auto plan = parse_fault_spec(
      "random:mtbf=1m,mix=crash:0.5/hang:0.2/straggler:0.2/sdc:0.1,flaky-ranks=2,flaky-share=0.75,seed=7", 16,
      horizon);
  const auto again = parse_fault_spec(
      "random:mtbf=1m,mix=crash:0.5/hang:0.2/straggler:0.2/sdc:0.1,flaky-ranks=2,flaky-share=0.75,seed=7", 16,
      horizon);
  const auto other = parse_fault_spec("random:mtbf=1m,seed=8", 16, horizon);
  ASSERT_TRUE(plan.random);
  ASSERT_EQ(plan.faults.size(), again.faults.size());
  for (std::size_t i = 0; i < plan.faults.size(); ++i) EXPECT_EQ(plan.faults[i].text, again.faults[i].text);
  EXPECT_NE(plan.faults[0].text, other.faults[0].text);
  // Count ~ horizon / mtbf = 20000 (Poisson: sd ≈ 141).
  const double n = static_cast<double>(plan.faults.size());
  EXPECT_NEAR(n, horizon / mtbf, 5 * std::sqrt(horizon / mtbf));
  // Gaps are exponential: mean ≈ mtbf, and about e^-1 of them exceed mtbf.
  double sum = 0, longer = 0, prev = 0;
  std::map<int, int> per_rank;
  std::map<FaultKind, int> per_kind;
  for (const auto& f : plan.faults) {
    ASSERT_TRUE(f.time_s);
    sum += *f.time_s - prev;
    longer += (*f.time_s - prev) > mtbf ? 1 : 0;
    prev = *f.time_s;
    ++per_rank[f.rank];
    ++per_kind[f.kind];
  }
  EXPECT_NEAR(sum / n, mtbf, 0.05 * mtbf);
  EXPECT_NEAR(longer / n, std::exp(-1.0), 0.02);
  EXPECT_NEAR(per_kind[FaultKind::crash] / n, 0.5, 0.02);
  EXPECT_NEAR(per_kind[FaultKind::sdc] / n, 0.1, 0.02);
  // Two ranks take 75% plus their share of the rest; every other rank about 0.25/14.
  std::vector<int> counts;
  for (const auto& [rank, c] : per_rank) counts.push_back(c);
  std::sort(counts.rbegin(), counts.rend());
  EXPECT_NEAR((counts[0] + counts[1]) / n, 0.75, 0.02);
  EXPECT_NEAR(counts[2] / n, 0.25 / 14, 0.01);
}

// With spares, mtbf stays the job's (its ranks'), the flaky ranks are among the job's ranks (a spare is never
// the flaky one), and each spare fails at the rate of an ordinary rank, on top.
TEST(FaultPlan, SparesAreOrdinarySlotsAndNeverTheFlakyOnes) {
  const double mtbf = 60, horizon = 60 * 20000.0;
  const std::string spec = "random:mtbf=1m,flaky-ranks=1,flaky-share=0.8,seed=";
  for (int seed = 1; seed <= 8; ++seed) {
    const auto plan = parse_fault_spec(spec + std::to_string(seed), 6, horizon, 42, 2);  // 4 ranks + 2
    std::map<int, double> per_slot;
    for (const auto& f : plan.faults) per_slot[f.rank] += 1;
    int flaky = -1;
    for (const auto& [slot, c] : per_slot)
      if (c > 0.5 * horizon / mtbf) flaky = slot;
    ASSERT_GE(flaky, 0);
    EXPECT_LT(flaky, 4) << "seed " << seed << ": the flaky slot is a spare";
    double on_ranks = 0;
    for (int r = 0; r < 4; ++r) on_ranks += per_slot[r];
    const double expected = horizon / mtbf;  // the job's ranks see the job's MTBF
    EXPECT_NEAR(on_ranks, expected, 5 * std::sqrt(expected));
    EXPECT_NEAR(per_slot[flaky] / expected, 0.8, 0.02);
    for (const int spare : {4, 5}) EXPECT_NEAR(per_slot[spare] / expected, 0.2 / 3, 0.01);
  }
  // Without spares the plan is the one it always was.
  const auto a = parse_fault_spec(spec + "3", 4, 3600), b = parse_fault_spec(spec + "3", 4, 3600, 42, 0);
  ASSERT_EQ(a.faults.size(), b.faults.size());
  for (std::size_t i = 0; i < a.faults.size(); ++i) EXPECT_EQ(a.faults[i].text, b.faults[i].text);
  EXPECT_THROW(parse_fault_spec("random:mtbf=1m,flaky-ranks=5", 6, 60, 42, 2), Error);  // 4 ranks
}

TEST(FaultPlan, JsonFileFormAndPathErrors) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb_faults_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "plan.json";
  std::ofstream(file) << R"({"faults": [{"kind": "crash", "step": 15, "rank": 1},
                                        {"kind": "straggler", "time": "30s", "factor": 2.5, "rank": 3}],
                             "random": {"mtbf": "10m", "mix": {"hang": 1}, "seed": 3}})";
  const auto plan = load_fault_plan(file.string(), 4, 3600);
  ASSERT_GE(plan.faults.size(), 2u);
  EXPECT_EQ(plan.faults[0].text, "crash@step=15,rank=1");
  EXPECT_EQ(plan.faults[1].text, "straggler@time=30s,rank=3,factor=2.5");
  ASSERT_TRUE(plan.random);
  EXPECT_EQ(plan.random->seed, 3u);
  for (std::size_t i = 2; i < plan.faults.size(); ++i) EXPECT_EQ(plan.faults[i].kind, FaultKind::hang);
  std::ofstream(file) << R"({"faults": [{"kind": "crash", "step": 15}, {"kind": "crash", "step": 2.5}]})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": $.faults[1]: invalid --faults 'crash@step=2.5': step='2.5' is not an integer");
  // Numbers are JSON numbers; only durations may be strings.
  std::ofstream(file) << R"({"faults": [{"kind": "crash", "step": "3"}]})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": $.faults[0].step: expected a number");
  std::ofstream(file) << R"({"random": {"mtbf": "10m", "mix": {"crash": "1"}}})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": $.random.mix.crash: expected a number");
  std::ofstream(file) << R"({"faults": [{"kind": "hang", "time": true}]})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": $.faults[0].time: expected a number of seconds or a duration string");
  std::ofstream(file) << R"({"faults": [{"kind": "hang", "time": 90, "rank": 2}]})";
  EXPECT_EQ(load_fault_plan(file.string(), 4).faults.at(0).text, "hang@time=90s,rank=2");
  // Malformed JSON is named as every other JSON input names it (it used to say only "not valid JSON").
  std::ofstream(file) << R"({"faults": [})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": malformed JSON at byte 13");
  std::ofstream(file) << R"({"faults": [{"kind": "crash", "step": 1, "step": 2}]})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": $.faults[0].step: duplicate key");
  // A file whose name holds '@' is still the file, not a spec.
  const auto at_file = dir / "crash@15.json";
  std::ofstream(at_file) << R"({"faults": [{"kind": "crash", "step": 15, "rank": 1}]})";
  const auto at_plan = load_fault_plan(at_file.string(), 4, 3600);
  ASSERT_EQ(at_plan.faults.size(), 1u);
  EXPECT_EQ(at_plan.faults[0].text, "crash@step=15,rank=1");
  EXPECT_EQ(at_plan.source, at_file.string());
  std::ofstream(file) << R"({"fault": []})";
  EXPECT_EQ(error_of([&] { load_fault_plan(file.string(), 4); }),
            file.string() + ": $.fault: unknown key (expected faults, random)");
  std::filesystem::remove_all(dir);
}

TEST(FaultPlan, FiredRecordPersistsAcrossRestarts) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb_fired_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto plan = parse_fault_spec("crash@step=15,rank=1;crash@step=45,rank=3", 4);
  {
    FiredRecord rec(dir / "faults.fired");
    EXPECT_FALSE(rec.fired(plan.faults[0]));
    rec.mark(plan.faults[0]);
    EXPECT_TRUE(rec.fired(plan.faults[0]));
  }
  FiredRecord after_restart(dir / "faults.fired");
  EXPECT_TRUE(after_restart.fired(plan.faults[0]));
  EXPECT_FALSE(after_restart.fired(plan.faults[1]));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fb::resilience
