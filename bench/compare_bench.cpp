// compare on two reports of 100,000 metrics each (10,000 results x 10 metrics): the CI gate must stay well
// under a second at that size (issue 7). Variants: the comparison alone, parsing both reports from JSON
// first, and rendering the JUnit XML after.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "reports/compare.hpp"
#include "reports/compare_printers.hpp"
#include "reports/report_json.hpp"

namespace {

using namespace fb::reports;

constexpr int kResults = 10000;
constexpr int kMetricsPerResult = 10;

Report make_report(double scale) {
  Report rep;
  rep.run = {{"id", "bench"}, {"backend", "host"}, {"world_size", 8}};
  rep.results.reserve(kResults);
  for (int i = 0; i < kResults; ++i) {
    Result r;
    r.benchmark = i % 2 ? "collective" : "gemm";
    r.name = fmt::format("case/{}/{}", i % 7, i);
    for (int m = 0; m < kMetricsPerResult; ++m) {
      Metric metric;
      // Deterministic spread of values; every 97th metric of the candidate moves by 10%.
      metric.value = 100.0 + (i * 31 + m * 17) % 1000;
      if (scale != 1.0 && (i * kMetricsPerResult + m) % 97 == 0) metric.value *= scale;
      metric.unit = m % 2 ? "us" : "GB/s";
      metric.better = m % 2 ? Better::lower : Better::higher;
      if (m < 3) {
        fb::SampleStats s;
        s.min = metric.value * 0.98;
        s.median = metric.value;
        s.max = metric.value * 1.03;
        s.mean = metric.value;
        s.p99 = s.max;
        s.stddev = metric.value * 0.01;
        s.n = 20;
        metric.stats = s;
      }
      r.metrics.emplace_back(fmt::format("metric_{}_{}", m, m % 2 ? "us" : "gbps"), std::move(metric));
    }
    rep.results.push_back(std::move(r));
  }
  return rep;
}

// What the comparison must find: every moved metric (a 10% fall) is WORSE where higher is better (even m)
// and BETTER where lower is better (odd m); the rest are SAME. A fast but wrong comparison fails the run.
void verify(benchmark::State& state, const Comparison& cmp) {
  std::size_t worse = 0, better = 0;
  for (int i = 0; i < kResults; ++i)
    for (int m = 0; m < kMetricsPerResult; ++m)
      if ((i * kMetricsPerResult + m) % 97 == 0) ++(m % 2 ? better : worse);
  const auto counts = cmp.counts();
  const auto n = [&](Verdict v) { return counts[static_cast<std::size_t>(v)]; };
  const std::size_t rows = static_cast<std::size_t>(kResults) * kMetricsPerResult;
  if (cmp.rows.size() != rows || n(Verdict::worse) != worse || n(Verdict::better) != better ||
      n(Verdict::same) != rows - worse - better)
    state.SkipWithError(fmt::format("wrong comparison: {} rows ({} expected), {} WORSE ({}), {} BETTER ({}), "
                                    "{} SAME ({})",
                                    cmp.rows.size(), rows, n(Verdict::worse), worse, n(Verdict::better),
                                    better, n(Verdict::same), rows - worse - better)
                            .c_str());
}

CompareRules rules() {
  CompareRules r;
  r.rules.push_back(parse_bound_rule("collective/case/3/* metric_0_gbps >= 50", "bench"));
  MetricRule tol;
  tol.benchmark = "gemm";
  tol.metric = "metric_*_us";
  tol.tolerance = 0.08;
  r.rules.push_back(tol);
  return r;
}

void BM_CompareReports(benchmark::State& state) {
  const Report base = make_report(1.0), cand = make_report(0.9);
  const CompareRules r = rules();
  for (auto _ : state) {
    auto cmp = compare_reports(base, cand, r);
    benchmark::DoNotOptimize(cmp.rows.data());
  }
  state.SetItemsProcessed(state.iterations() * kResults * kMetricsPerResult);
  verify(state, compare_reports(base, cand, r));
}
BENCHMARK(BM_CompareReports)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_CompareFromJson(benchmark::State& state) {
  const auto base_json = to_json(make_report(1.0)), cand_json = to_json(make_report(0.9));
  const CompareRules r = rules();
  for (auto _ : state) {
    const auto base = report_from_json(base_json, "base.json");
    const auto cand = report_from_json(cand_json, "cand.json");
    auto cmp = compare_reports(base, cand, r);
    benchmark::DoNotOptimize(cmp.rows.data());
  }
  state.SetItemsProcessed(state.iterations() * kResults * kMetricsPerResult);
  verify(state, compare_reports(report_from_json(base_json, "base.json"),
                                report_from_json(cand_json, "cand.json"), r));
}
BENCHMARK(BM_CompareFromJson)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

void BM_CompareAndRenderJunit(benchmark::State& state) {
  const Report base = make_report(1.0), cand = make_report(0.9);
  const CompareRules r = rules();
  for (auto _ : state) {
    const std::string xml = render_compare_junit(compare_reports(base, cand, r));
    benchmark::DoNotOptimize(xml.data());
  }
  state.SetItemsProcessed(state.iterations() * kResults * kMetricsPerResult);
  const auto cmp = compare_reports(base, cand, r);
  verify(state, cmp);
  // One <testcase> per compared metric.
  const std::string xml = render_compare_junit(cmp);
  std::size_t cases = 0;
  for (auto at = xml.find("<testcase"); at != std::string::npos; at = xml.find("<testcase", at + 1)) ++cases;
  if (cases != cmp.rows.size())
    state.SkipWithError(fmt::format("JUnit has {} testcases for {} rows", cases, cmp.rows.size()).c_str());
}
BENCHMARK(BM_CompareAndRenderJunit)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
