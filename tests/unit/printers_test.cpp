// Printers: Markdown golden output (compare and report), the Prometheus line grammar, JUnit/HTML structure,
// the resilience timeline derived from events, and the chart helpers' arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "core/build_info.hpp"
#include "reports/compare.hpp"
#include "reports/compare_printers.hpp"
#include "reports/gpu_slowdown.hpp"
#include "reports/json_fields.hpp"
#include "reports/report_printers.hpp"
#include "reports/report_view.hpp"
#include "reports/svg_chart.hpp"
#include "reports/text_format.hpp"
#include "reports/timeline.hpp"
#include "reports/train_extra.hpp"

namespace fb::reports {
namespace {

Metric metric(double value, Better better, std::string unit) {
  return Metric{value, std::move(unit), better, {}};
}

Result result(std::string benchmark, std::string name, std::vector<std::pair<std::string, Metric>> metrics,
              nlohmann::json params = nlohmann::json::object()) {
  Result r;
  r.benchmark = std::move(benchmark);
  r.name = std::move(name);
  r.metrics = std::move(metrics);
  r.params = std::move(params);
  return r;
}

Report run(std::string id, std::vector<Result> results) {
  Report rep;
  rep.tool = {{"name", "factorybench"}, {"version", "0.1.0"}, {"git_commit", "test"}};
  rep.run = {{"id", id},
             {"command", "factorybench collective --op allreduce"},
             {"started_at", "2026-11-29T10:00:00.000Z"},
             {"finished_at", "2026-11-29T10:01:00.000Z"},
             {"world_size", 4},
             {"hosts", {"node01"}},
             {"backend", "host"}};
  rep.results = std::move(results);
  return rep;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(CompareMarkdown, Golden) {
  auto base =
      run("base-1",
          {result("collective", "allreduce/bf16/1048576",
                  {{"busbw_gbps", metric(100, Better::higher, "GB/s")},
                   {"time_us", metric(50, Better::lower, "us")}}),
           result("gemm", "bf16/1024x1024x1024", {{"tflops", metric(2.5, Better::higher, "TFLOP/s")}})});
  auto cand = run("cand-1", {result("collective", "allreduce/bf16/1048576",
                                    {{"busbw_gbps", metric(88, Better::higher, "GB/s")},
                                     {"time_us", metric(49, Better::lower, "us")}}),
                             result("collective", "allgather/bf16/1048576",
                                    {{"busbw_gbps", metric(70, Better::higher, "GB/s")}})});
  base.summary = {{"kind", "reference"}, {"title", "test figures | v1"}};
  const auto cmp = compare_reports(base, cand, {}, "ref.json", "cand.json");
  const std::string expected =
      "## factorybench compare\n"
      "\n"
      "| | report | description |\n"
      "|---|---|---|\n"
      "| baseline | `ref.json` | published reference: test figures \\| v1 |\n"
      "| candidate | `cand.json` | run cand-1, host backend, 4 ranks |\n"
      "\n"
      "**FAIL** — 4 metrics compared: 1 SAME, 1 WORSE, 1 MISSING, 1 NEW\n"
      "\n"
      "| result | metric | published | candidate | change | fraction of published | verdict | note |\n"
      "|---|---|---:|---:|---:|---:|---|---|\n"
      "| collective/allreduce/bf16/1048576 | busbw_gbps | 100 | 88 | -12.0% | 0.880 | **WORSE** | -12.0% "
      "beyond ±5% "
      "tolerance |\n"
      "| collective/allreduce/bf16/1048576 | time_us | 50 | 49 | -2.0% | 0.980 | SAME | within ±5% tolerance "
      "|\n"
      "| gemm/bf16/1024x1024x1024 | tflops | 2.5 | – | – | – | MISSING | result not in candidate |\n"
      "| collective/allgather/bf16/1048576 | busbw_gbps | – | 70 | – | – | NEW | result not in baseline |\n";
  EXPECT_EQ(render_compare_markdown(cmp), expected);
}

// Each warning its own paragraph: consecutive "> " lines would render as one run-on paragraph.
TEST(CompareMarkdown, WarningsAreSeparateParagraphs) {
  Comparison c;
  c.warnings = {"first", "second"};
  const std::string out = render_compare_markdown(c);
  EXPECT_NE(out.find("> **Warning:** first\n>\n> **Warning:** second\n\n"), std::string::npos) << out;
}

TEST(CompareJunit, OneTestcasePerMetric) {
  auto base = run("b", {result("collective", "a<&>",
                               {{"busbw_gbps", metric(100, Better::higher, "GB/s")},
                                {"time_us", metric(10, Better::lower, "us")}})});
  auto cand = run("c", {result("collective", "a<&>",
                               {{"busbw_gbps", metric(80, Better::higher, "GB/s")},
                                {"time_us", metric(10, Better::lower, "us")}})});
  const std::string xml = render_compare_junit(compare_reports(base, cand, {}));
  std::size_t testcases = 0;
  for (std::size_t at = 0; (at = xml.find("<testcase ", at)) != std::string::npos; ++at) ++testcases;
  EXPECT_EQ(testcases, 2u);
  EXPECT_NE(xml.find("<testsuites name=\"factorybench compare\" tests=\"2\" failures=\"1\""),
            std::string::npos);
  EXPECT_NE(xml.find("classname=\"collective.a&lt;&amp;&gt;\" name=\"busbw_gbps\""), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"WORSE\""), std::string::npos);
  EXPECT_EQ(xml.find("a<&>"), std::string::npos);              // escaped everywhere
  EXPECT_EQ(xml.find("name=\"warning\""), std::string::npos);  // none to carry
}

TEST(CompareJunit, WarningsAreSuiteProperties) {
  Comparison c;
  c.warnings = {"backends differ: baseline cuda, candidate host", "a <b> & \"c\""};
  MetricComparison row;
  row.benchmark = "gemm";
  row.result = "x";
  row.metric = "tflops";
  c.rows = {row};
  const std::string xml = render_compare_junit(c);
  EXPECT_NE(
      xml.find("      <property name=\"warning\" value=\"backends differ: baseline cuda, candidate host\"/>\n"
               "      <property name=\"warning\" value=\"a &lt;b&gt; &amp; &quot;c&quot;\"/>\n"
               "    </properties>"),
      std::string::npos)
      << xml;
}

TEST(CompareTable, AlignedColumnsAndGateLine) {
  auto base = run("b", {result("gemm", "x", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  auto cand = run("c", {result("gemm", "x", {{"tflops", metric(12, Better::higher, "TFLOP/s")}})});
  const std::string table = render_compare_table(compare_reports(base, cand, {}, "b.json", "c.json"));
  const auto lines = lines_of(table);
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[3], "RESULT  METRIC  BASELINE  CANDIDATE  CHANGE  RATIO  VERDICT  NOTE");
  EXPECT_EQ(lines[4],
            "gemm/x  tflops        10         12  +20.0%  1.200  BETTER   +20.0% beyond ±5% tolerance");
  EXPECT_EQ(lines.back(), "gate: pass -> exit 0");
}

// A result's error text (any bytes a report may carry) stays on its row and cannot drive the terminal.
TEST(CompareTable, ErrorTextIsOneTerminalLine) {
  auto base = run("b", {result("gemm", "x", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  auto cand = run("c", {result("gemm", "x", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  cand.results[0].fail("rank 1:\nwrong\x1b[2J answer");
  const std::string table = render_compare_table(compare_reports(base, cand, {}, "b.json", "c.json"));
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  const auto lines = lines_of(table);
  const auto row = std::find_if(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.find("wrong") != std::string::npos; });
  ASSERT_NE(row, lines.end());
  EXPECT_NE(row->find("rank 1:"), std::string::npos);  // the whole error on the row's one line
  EXPECT_NE(row->find("answer"), std::string::npos);
}

TEST(ReportMarkdown, GoldenSingle) {
  auto rep = run("r1", {result("collective", "allreduce/fp32/1024",
                               {{"busbw_gbps", metric(1.5, Better::higher, "GB/s")},
                                {"time_us", metric(12.25, Better::lower, "us")}}),
                        result("collective", "allreduce/fp32/2048",
                               {{"busbw_gbps", metric(2.75, Better::higher, "GB/s")}})});
  rep.results[1].fail("rank 2: wrong | result");
  const std::string expected =
      "# factorybench report\n"
      "\n"
      "| run | id | command | backend | ranks | device | started |\n"
      "|---|---|---|---|---:|---|---|\n"
      "| r1 | r1 | `factorybench collective --op allreduce` | host | 4 |  | 2026-11-29T10:00:00.000Z |\n"
      "\n"
      "## collective\n"
      "\n"
      "2 results, **1 failed**\n"
      "\n"
      "| result | status | busbw_gbps (GB/s) | time_us (us) |\n"
      "|---|---|---:|---:|\n"
      "| allreduce/fp32/1024 | ok | 1.5 | 12.25 |\n"
      "| allreduce/fp32/2048 | failed: rank 2: wrong \\| result | 2.75 | – |\n";
  EXPECT_EQ(render_markdown({{"runs/r1.json", rep}}), expected);
}

// A table opens on the figures its benchmark's headline shows, in the headline's order (train: mfu,
// step_time_s, model_tflops_per_gpu, loss), then the other metrics as they came; a kind without a
// headline rule keeps that order alone.
TEST(ReportMarkdown, HeadlineFiguresLeadTheColumns) {
  auto rep =
      run("r1", {result("train", "tiny-dense/tp1-dp1-ep1-pp1/fp32/seq128-mb1-ga1",
                        {{"flops_per_step", metric(6e8, Better::none, "FLOP")},
                         {"loss", metric(0.28, Better::none, "value")},
                         {"mfu", metric(0.1, Better::higher, "fraction")},
                         {"step_time_s", metric(0.006, Better::lower, "s")},
                         {"zeta", metric(1, Better::none, "value")}}),
                 result("mystery", "m",
                        {{"b", metric(1, Better::none, "value")}, {"a", metric(2, Better::none, "value")}})});
  const std::string md = render_markdown({{"r1.json", rep}});
  EXPECT_NE(
      md.find("| result | status | mfu (fraction) | step_time_s (s) | loss | flops_per_step (FLOP) | zeta |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| result | status | b | a |"), std::string::npos) << md;
}

// Names are data, not markup: they read back as themselves in any Markdown renderer.
TEST(MarkdownText, CellsAndCodeSpansShowTheirTextLiterally) {
  EXPECT_EQ(md_cell("bus|bw<i>"), "bus\\|bw&lt;i&gt;");
  EXPECT_EQ(md_cell("x\\|y"), "x\\\\\\|y");
  EXPECT_EQ(md_cell("<script>a & *b* [c]</script>"), "&lt;script&gt;a &amp; \\*b\\* \\[c\\]&lt;/script&gt;");
  EXPECT_EQ(md_cell("busbw_gbps\nnext"), "busbw_gbps next");
  EXPECT_EQ(md_cell("a\x1b[31mred\x7f"), "a\\[31mred");  // no raw control characters
  // Tab and newline as character references: a parser keeps them in an attribute (a literal one there
  // reads as a space).
  EXPECT_EQ(xml_escape("a\tb\nc\rd"), "a&#9;b&#10;cd");
  // Not XML characters: U+FFFE/U+FFFF become U+FFFD; C0 controls but tab and newline are dropped.
  EXPECT_EQ(xml_escape("a"
                       "\xEF\xBF\xBE"
                       "b"
                       "\xEF\xBF\xBF"
                       "c"
                       "\x01"
                       "d"
                       "\xEF\xBF\xBD"
                       "e"),
            "a"
            "\xEF\xBF\xBD"
            "b"
            "\xEF\xBF\xBD"
            "c"
            "d"
            "\xEF\xBF\xBD"
            "e");
  EXPECT_EQ(md_code_cell("factorybench gemm -m 8"), "`factorybench gemm -m 8`");
  EXPECT_EQ(md_code_cell("echo `date` | x"), "``echo `date` \\| x``");
  EXPECT_EQ(md_code_cell("`x`"), "`` `x` ``");
}

TEST(ReportMarkdown, TrendOverSeveralRuns) {
  const auto a =
      run("a", {result("gemm", "bf16/8x8x8", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  const auto b =
      run("b", {result("gemm", "bf16/8x8x8", {{"tflops", metric(11, Better::higher, "TFLOP/s")}})});
  const std::string md = render_markdown({{"day1.json", a}, {"day2.json", b}});
  EXPECT_NE(md.find("| result | metric | day1 | day2 | change |"), std::string::npos);
  EXPECT_NE(md.find("| bf16/8x8x8 | tflops (TFLOP/s) | 10 | 11 | +10.0% |"), std::string::npos);
}

// Labels never repeat: a shared name is numbered by place, and so is a name that begins with '#' (a file
// named "#2 a.json" beside two a.json labelled two reports "#2 a"; the Prometheus export dropped one).
TEST(ReportLabels, NoTwoRepeat) {
  const auto r = run("r", {});
  const std::vector<NamedReport> reports{
      {"x/a.json", r}, {"y/a.json", r}, {"odd/#2 a.json", r}, {"b.json", r}, {"#b.json", r}};
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < reports.size(); ++i) labels.push_back(run_label(reports, i));
  EXPECT_EQ(labels, (std::vector<std::string>{"#1 a", "#2 a", "#3 #2 a", "b", "#5 #b"}));
}

// Every result of every run is in the trend table, with its status: a result that failed before measuring
// has a status row, a failed run's figure is marked and not taken for a trend, errors are listed under the
// table, and a metric in other units is another row (never set side by side).
TEST(ReportMarkdown, TrendKeepsFailedResultsAndUnitsApart) {
  auto stopped = result("collective", "allreduce/run", {});
  stopped.fail("nccl-tests stopped: node005 failed");
  auto slow =
      result("collective", "allreduce/fp32/1024", {{"busbw_gbps", metric(5, Better::higher, "GB/s")}});
  slow.fail("wrong results");
  const auto a = run("a", {result("collective", "allreduce/fp32/1024",
                                  {{"busbw_gbps", metric(10, Better::higher, "GB/s")},
                                   {"time_us", metric(8, Better::lower, "us")}})});
  const auto b = run("b", {slow, stopped});
  auto c = run("c", {result("collective", "allreduce/fp32/1024",
                            {{"busbw_gbps", metric(12, Better::higher, "GB/s")},
                             {"time_us", metric(0.008, Better::lower, "ms")}})});
  const std::string md = render_markdown({{"a.json", a}, {"b.json", b}, {"c.json", c}});
  EXPECT_NE(md.find("| allreduce/fp32/1024 | busbw_gbps (GB/s) | 10 | 5 (failed) | 12 | +20.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| allreduce/fp32/1024 | time_us (us) | 8 | failed | – | – |"), std::string::npos) << md;
  EXPECT_NE(md.find("| allreduce/fp32/1024 | time_us (ms) | – | failed | 0.008 | – |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| allreduce/run | status | – | failed | – | – |"), std::string::npos) << md;
  EXPECT_NE(md.find("- b: allreduce/fp32/1024 failed: wrong results\n"), std::string::npos) << md;
  EXPECT_NE(md.find("- b: allreduce/run failed: nccl-tests stopped: node005 failed\n"), std::string::npos)
      << md;
  // A failed last run is no trend.
  const std::string md2 = render_markdown({{"a.json", a}, {"b.json", b}});
  EXPECT_NE(md2.find("| allreduce/fp32/1024 | busbw_gbps (GB/s) | 10 | 5 (failed) | – |"), std::string::npos)
      << md2;
  const std::string html = render_html({{"a.json", a}, {"b.json", b}, {"c.json", c}});
  EXPECT_NE(html.find("<td class=\"num err\">failed</td>"), std::string::npos);
  EXPECT_NE(html.find("nccl-tests stopped: node005 failed"), std::string::npos);
}

// Names that map to one Prometheus family keep their own: a metric "result_ok", a metric "rank_tflops"
// beside per-rank "tflops", per-rank "time.us" beside "time_us". Every series is kept, each family once.
TEST(Prometheus, FamilyNameCollisionsKeepEverySeries) {
  auto r = result("collective", "allreduce/fp32/1024",
                  {{"result_ok", metric(0.25, Better::higher, "fraction")},
                   {"rank_tflops", metric(3, Better::higher, "TFLOP/s")}});
  r.per_rank = {{"tflops", {1.0, 2.0}}, {"time.us", {5.0, 6.0}}, {"time_us", {7.0, 8.0}}};
  const std::string prom = render_prometheus({{"c.json", run("c", {r})}});
  EXPECT_NE(prom.find("factorybench_result_ok{benchmark=\"collective\",result=\"allreduce/fp32/1024\"} 1\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(
      prom.find("factorybench_result_ok_2{benchmark=\"collective\",result=\"allreduce/fp32/1024\"} 0.25\n"),
      std::string::npos)
      << prom;
  for (const char* v : {"} 3\n", "rank=\"1\"} 2\n", "rank=\"1\"} 6\n", "rank=\"1\"} 8\n"})
    EXPECT_NE(prom.find(v), std::string::npos) << v << "\n" << prom;
  std::set<std::string> types;
  for (const auto& line : lines_of(prom))
    if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_TRUE(types.insert(line).second) << line;
    }
  EXPECT_EQ(types.size(), 6u) << prom;  // status, 2 metrics, 3 per-rank
}

// A skipped result is one factorybench_result_skipped sample, without result_ok or figures; a metric given in
// two units by two results gets a family per unit (one family, one unit in its HELP).
TEST(Prometheus, SkippedResultsAndUnitsOfAFamily) {
  auto us = result("gemm", "a", {{"time_us", metric(5, Better::lower, "us")}});
  auto ms = result("gemm", "b", {{"time_us", metric(0.5, Better::lower, "ms")}});
  auto skipped = result("health", "gpu", {{"tflops", metric(1, Better::higher, "TFLOP/s")}});
  skipped.status = Status::skipped;
  skipped.per_rank = {{"tflops", {1.0}}};
  const std::string prom = render_prometheus({{"r.json", run("r", {us, ms, skipped})}});
  EXPECT_NE(prom.find("factorybench_result_skipped{benchmark=\"health\",result=\"gpu\"} 1\n"),
            std::string::npos)
      << prom;
  std::size_t series = 0;  // nothing else of the skipped result
  for (auto at = prom.find("result=\"gpu\""); at != std::string::npos;
       at = prom.find("result=\"gpu\"", at + 1))
    ++series;
  EXPECT_EQ(series, 1u) << prom;
  EXPECT_EQ(prom.find("factorybench_tflops"), std::string::npos) << prom;
  EXPECT_NE(prom.find("factorybench_time_us{benchmark=\"gemm\",result=\"a\"} 5\n"), std::string::npos)
      << prom;
  EXPECT_NE(prom.find("factorybench_time_us_2{benchmark=\"gemm\",result=\"b\"} 0.5\n"), std::string::npos)
      << prom;
  // The status families keep their names before a metric of the same name (that one takes "_2"), and a
  // --split group's per-rank series are labelled by world rank.
  auto odd = result("gemm", "c", {{"result_skipped", metric(7, Better::none, "count")}});
  auto group = result("collective", "allreduce/fp32/8/group1", {{"time_us", metric(5, Better::lower, "us")}},
                      {{"first_rank", 2}});
  group.per_rank = {{"time_us", {5.0, 6.0}}};
  const std::string named = render_prometheus({{"r.json", run("r", {odd, skipped, group})}});
  EXPECT_NE(named.find("factorybench_result_skipped{benchmark=\"health\",result=\"gpu\"} 1\n"),
            std::string::npos)
      << named;
  EXPECT_NE(named.find("factorybench_result_skipped_2{benchmark=\"gemm\",result=\"c\"} 7\n"),
            std::string::npos)
      << named;
  EXPECT_NE(named.find("rank=\"3\"} 6\n"), std::string::npos) << named;
  EXPECT_EQ(named.find("rank=\"0\""), std::string::npos) << named;
  // A first rank past the world (hand-edited; the run has 4 ranks) is not followed, as in the HTML strip.
  group.params["first_rank"] = 1000;
  const std::string past = render_prometheus({{"r.json", run("r", {group})}});
  EXPECT_NE(past.find("rank=\"1\"} 6\n"), std::string::npos) << past;
  EXPECT_EQ(past.find("rank=\"1001\""), std::string::npos) << past;
}

// A heat strip of 512 ranks keeps every rank inside its canvas (it used to cut off ranks past about 175).
TEST(SvgChart, RankHeatStripFitsEveryRank) {
  svg::RankHeatStrip chart;
  chart.title = "tflops";
  chart.rows.push_back({"fp32/64x64x64", std::vector<double>(512, 1.0)});
  chart.rows[0].slowness[400] = 2.0;
  const std::string out = svg::render(chart);
  std::smatch vb;
  ASSERT_TRUE(std::regex_search(out, vb, std::regex("viewBox=\"0 0 ([0-9]+) ")));
  double right = 0;
  const std::regex rect("<rect x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), rect); it != std::sregex_iterator(); ++it)
    right = std::max(right, std::stod((*it)[1]) + std::stod((*it)[2]));
  EXPECT_LE(right, std::stod(vb[1]));
  EXPECT_NE(out.find("rank 511"), std::string::npos);
}

// A row label too long for its room keeps both ends: two MoE phases' rows differ in the middle, two sizes'
// rows at the end.
TEST(SvgChart, RankHeatStripRowLabelsKeepTheirTails) {
  svg::RankHeatStrip chart;
  chart.title = "time_us";
  for (const char* label :
       {"moe-dispatch/moe_dispatch/fp32/506880", "moe-dispatch/moe_combine/fp32/506880", "short/fp32/8"})
    chart.rows.push_back({label, std::vector<double>(4, 1.0)});
  const std::string out = svg::render(chart);
  EXPECT_NE(out.find(">moe-dispa…dispatch/fp32/506880<"), std::string::npos) << out;
  EXPECT_NE(out.find(">moe-dispa…_combine/fp32/506880<"), std::string::npos);
  EXPECT_NE(out.find(">short/fp32/8<"), std::string::npos);
}

// HTML: every id is unique (slugs of "ring.x" and "ring_x" coincide), another reduction or MoE phase is
// another busbw curve, and a GEMM chart past its bar limit says how many shapes it left out.
TEST(ReportHtml, UniqueIdsReductionCurvesAndShapesLeftOut) {
  std::vector<Result> results;
  for (const char* op : {"ring.x", "ring_x"})
    for (const char* redop : {"sum", "prod"})
      for (const double bytes : {1024.0, 2048.0})
        results.push_back(result("collective", fmt::format("{}/fp32/{}/{}", op, bytes, redop),
                                 {{"busbw_gbps", metric(bytes / 100, Better::higher, "GB/s")}},
                                 {{"bytes", bytes}, {"dtype", "fp32"}, {"redop", redop}}));
  for (const char* phase : {"dispatch", "combine"})
    results.push_back(result("collective", fmt::format("moe/moe_{}/fp32/4096", phase),
                             {{"busbw_gbps", metric(phase[0] == 'd' ? 3 : 2, Better::higher, "GB/s")}},
                             {{"bytes", 4096}, {"dtype", "fp32"}, {"op", "alltoallv"}, {"phase", phase}}));
  for (int i = 0; i < 100; ++i)
    results.push_back(result("gemm", fmt::format("fp32/{}x64x64", 64 + i),
                             {{"tflops", metric(1 + i, Better::higher, "TFLOP/s")}}, {{"dtype", "fp32"}}));
  const std::string html = render_html({{"r.json", run("r", results)}});
  std::set<std::string> ids;
  const std::regex id_re(" id=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), id_re); it != std::sregex_iterator(); ++it)
    EXPECT_TRUE(ids.insert((*it)[1]).second) << "duplicate id " << (*it)[1];
  EXPECT_TRUE(ids.count("busbw-ring-x") && ids.count("busbw-ring-x-2"));
  EXPECT_NE(html.find("fp32 prod"), std::string::npos);  // its own series
  EXPECT_NE(html.find("fp32 dispatch"), std::string::npos);
  EXPECT_NE(html.find("fp32 combine"), std::string::npos);
  EXPECT_NE(html.find("the first 96 of 100 shapes"), std::string::npos);
}

// Prometheus text format 0.0.4, strictly: comment lines, then samples `name{labels} value`.
TEST(Prometheus, StrictLineGrammar) {
  auto rep = run(
      "r", {result("collective", "allreduce/bf16/1048576",
                   {{"busbw_gbps", metric(123.4, Better::higher, "GB/s")},
                    {"time_us", metric(std::nan(""), Better::lower, "us")}},
                   {{"op", "allreduce"}, {"dtype", "bf16"}, {"bytes", 1048576}}),
            result("gemm", "odd \"name\" \\ with\nnewline",
                   {{"tflops", metric(1e20, Better::higher, "TFLOP/s")}}, {{"m", 8}, {"n", 8}, {"k", 8}})});
  rep.results[0].set_per_rank("time_us", {1.0, 2.5, 3.0, 4.0});
  const std::string text = render_prometheus({{"r.json", rep}});

  const std::string name = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const std::string label = "[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\\\n]|\\\\[\\\\\"n])*\"";
  const std::string value = "(?:[-+]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]Inf|NaN)";
  const std::regex help("^# HELP (" + name + ") (?:[^\\\\\\n]|\\\\[\\\\n])*$");
  const std::regex type("^# TYPE (" + name + ") (counter|gauge|histogram|summary|untyped)$");
  const std::regex sample("^(" + name + ")(\\{" + label + "(?:," + label + ")*\\})? " + value + "$");

  std::set<std::string> finished;  // families whose samples are over (each family must be contiguous)
  std::set<std::string> series;
  std::string current;
  bool typed = false;
  std::size_t samples = 0;
  std::smatch m;
  for (const auto& line : lines_of(text)) {
    if (std::regex_match(line, m, help)) {
      ASSERT_FALSE(finished.count(m[1])) << "family seen twice: " << line;
      if (!current.empty()) finished.insert(current);
      current = m[1];
      typed = false;
    } else if (std::regex_match(line, m, type)) {
      ASSERT_EQ(m[1], current) << line;
      typed = true;
    } else {
      ASSERT_TRUE(std::regex_match(line, m, sample)) << "not a valid sample line: " << line;
      ASSERT_EQ(m[1], current) << "sample outside its family: " << line;
      ASSERT_TRUE(typed) << line;
      ASSERT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << "duplicate series: " << line;
      ++samples;
    }
  }
  EXPECT_EQ(samples, 2u /*status*/ + 3u /*metrics*/ + 4u /*per rank*/);
  EXPECT_NE(text.find("factorybench_busbw_gbps{benchmark=\"collective\",result=\"allreduce/bf16/"
                      "1048576\",op=\"allreduce\","
                      "dtype=\"bf16\",size=\"1048576\"} 123.4\n"),
            std::string::npos);
  EXPECT_NE(text.find("result=\"odd \\\"name\\\" \\\\ with\\nnewline\""), std::string::npos);
  EXPECT_NE(text.find("factorybench_rank_time_us{benchmark=\"collective\",result=\"allreduce/bf16/"
                      "1048576\",op=\"allreduce\","
                      "dtype=\"bf16\",size=\"1048576\",rank=\"1\"} 2.5\n"),
            std::string::npos);
  EXPECT_NE(text.find(" NaN\n"), std::string::npos);
}

TEST(ReportJunit, FailedAndSkippedResults) {
  auto rep = run("r", {result("gemm", "a", {{"tflops", metric(1, Better::higher, "TFLOP/s")}}),
                       result("gemm", "b", {}), result("gemm", "c", {})});
  rep.results[1].fail("wrong answer");
  rep.results[2].status = Status::skipped;
  rep.results[2].error = "fp8 needs cuda";
  const std::string xml = render_junit({{"r.json", rep}});
  EXPECT_NE(
      xml.find("<testsuites name=\"factorybench\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">"),
      std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"failed\" message=\"wrong answer\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"fp8 needs cuda\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"gemm\" name=\"a\""), std::string::npos);
}

// Two runs of the same result are two tests to a CI system (classname + name), not one test twice.
TEST(ReportJunit, SeveralRunsKeepTheirTestsApart) {
  const auto rep = run("r", {result("gemm", "a", {{"tflops", metric(1, Better::higher, "TFLOP/s")}})});
  const std::string xml = render_junit({{"a/run.json", rep}, {"b/run.json", rep}});
  std::set<std::string> ids;
  const std::regex testcase("<testcase classname=\"([^\"]*)\" name=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), testcase); it != std::sregex_iterator(); ++it)
    ids.insert((*it)[1].str() + "/" + (*it)[2].str());
  EXPECT_EQ(ids.size(), 2u) << xml;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// The <figure> whose caption starts with `caption` (empty when there is none).
std::string figure_with(const std::string& html, const std::string& caption) {
  const auto at = html.find("<figcaption>" + caption);
  if (at == std::string::npos) return "";
  const auto from = html.rfind("<figure", at);
  return html.substr(from, html.find("</figure>", at) - from);
}

TEST(ReportHtml, OneSvgPerChartAndSelfContained) {
  std::vector<Result> results;
  for (const std::uint64_t bytes : {1024u, 4096u, 16384u}) {
    auto r = result("collective", "allreduce/bf16/" + std::to_string(bytes),
                    {{"busbw_gbps", metric(bytes / 1000.0, Better::higher, "GB/s")}},
                    {{"op", "allreduce"}, {"dtype", "bf16"}, {"bytes", bytes}});
    r.set_per_rank("time_us", {10, 10, 14, 10});
    results.push_back(r);
  }
  results.push_back(result("gemm", "bf16/64x64x64", {{"tflops", metric(0.5, Better::higher, "TFLOP/s")}},
                           {{"dtype", "bf16"}, {"peak_tflops", 1.0}}));
  auto train = result("train", "tiny/tp1/bf16", {{"step_time_s", metric(1, Better::lower, "s")}});
  train.extra["breakdown"] = {{"gemm", 0.6}, {"optimizer", 0.4}};
  results.push_back(train);
  auto rep = run("r", results);
  rep.events = nlohmann::json::array({{{"type", "job_start"}, {"t", 100.0}},
                                      {{"type", "init_done"}, {"t", 110.0}},
                                      {{"type", "step"}, {"step", 1}, {"t_start", 110.0}, {"t", 120.0}},
                                      {{"type", "job_end"}, {"t", 121.0}}});
  const std::string html = render_html({{"r.json", rep}});
  // busbw (allreduce) + gemm bf16 + train breakdown + resilience timeline + per-rank time_us = 5 charts.
  EXPECT_EQ(count(html, "<figure class=\"chart\""), 5u);
  EXPECT_EQ(count(html, "<svg "), 5u);
  EXPECT_EQ(count(html, "</svg>"), 5u);
  EXPECT_EQ(count(html, "<script"), 0u);
  EXPECT_EQ(count(html, "https://"), 0u);
  EXPECT_EQ(count(html, "http://"), count(html, "http://www.w3.org/2000/svg"));  // only the SVG namespace
  EXPECT_NE(html.find("rank 2 is more than 5% slower than the median in 3 of 3 rows"), std::string::npos);
}

// collective --split: each group's per-rank arrays start at its params.first_rank. The strip puts the cells
// under world ranks and counts a rank's rows among those it is in (world rank 3 was named "rank 1", and ranks
// 1 and 3 slow in their own groups were one "rank 1 ... in 2 of 2 rows").
TEST(ReportHtml, SplitGroupsSitUnderTheirWorldRanks) {
  std::vector<Result> results;
  for (const int group : {0, 1}) {
    auto r = result("collective", fmt::format("allreduce/fp32/4096/group{}", group),
                    {{"busbw_gbps", metric(1, Better::higher, "GB/s")}},
                    {{"op", "allreduce"},
                     {"dtype", "fp32"},
                     {"bytes", 4096},
                     {"group", group},
                     {"first_rank", 2 * group},
                     {"ranks", 2}});
    r.set_per_rank("time_us", {10, group == 1 ? 30.0 : 10.0});
    results.push_back(r);
  }
  auto rep = run("r", results);  // world_size 4
  std::string html = render_html({{"r.json", rep}});
  EXPECT_NE(html.find("rank 3 is more than 5% slower than the median in 1 of 1 rows"), std::string::npos)
      << html;
  EXPECT_EQ(html.find("rank 1 is more than"), std::string::npos);
  EXPECT_NE(html.find("allreduce/fp32/4096/group1 — rank 3: +50.0% vs median"), std::string::npos);
  // A first rank past the world (hand-edited) is not followed.
  rep.results[1].params["first_rank"] = 1000;
  html = render_html({{"r.json", rep}});
  EXPECT_NE(html.find("rank 1 is more than 5% slower than the median in 1 of 2 rows"), std::string::npos)
      << html;
}

// GEMM reference lines: an fp8 variant takes the "fp8" figures, a sweep's MAMF result is a line (not a bar),
// each report's own peak is drawn when reports differ, and what is not drawn is counted in the caption.
TEST(ReportHtml, GemmLinesPerReportAndWhatIsNotDrawn) {
  auto fp8 = result("gemm", "fp8_e4m3/64x64x64", {{"tflops", metric(900, Better::higher, "TFLOP/s")}},
                    {{"dtype", "fp8_e4m3"}});
  auto a = run("a", {fp8});
  a.system["peak_tflops"] = {{"values", {{"fp8", 1979.0}}}, {"mamf", {{"fp8", 1453.4}}}};
  std::string html = render_html({{"a.json", a}});
  std::string fig = figure_with(html, "GEMM fp8_e4m3");
  EXPECT_NE(fig.find("dense peak 1979 TFLOP/s; MAMF (best achievable matmul) 1453.4 TFLOP/s"),
            std::string::npos)
      << fig;

  auto shape = result("gemm", "fp32/64x64x64", {{"tflops", metric(0.2, Better::higher, "TFLOP/s")}},
                      {{"dtype", "fp32"}, {"peak_tflops", 0.25}});
  auto mamf = result("gemm", "fp32/mamf", {{"tflops", metric(0.2, Better::higher, "TFLOP/s")}},
                     {{"dtype", "fp32"}, {"best_shape", "fp32/64x64x64"}});
  auto failed = result("gemm", "fp32/128x64x64", {{"tflops", metric(0.1, Better::higher, "TFLOP/s")}},
                       {{"dtype", "fp32"}});
  failed.status = Status::failed;
  auto skipped = result("gemm", "fp32/256x64x64", {}, {{"dtype", "fp32"}});
  skipped.status = Status::skipped;
  auto other = result("gemm", "fp32/64x64x64", {{"tflops", metric(0.21, Better::higher, "TFLOP/s")}},
                      {{"dtype", "fp32"}, {"peak_tflops", 0.3}});
  html = render_html({{"b.json", run("b", {shape, mamf, failed, skipped})}, {"c.json", run("c", {other})}});
  fig = figure_with(html, "GEMM fp32");
  EXPECT_NE(fig.find("dense peak 0.25 (b), 0.3 (c) TFLOP/s"), std::string::npos) << fig;
  EXPECT_NE(fig.find("MAMF (best achievable matmul) 0.2 TFLOP/s"), std::string::npos) << fig;
  EXPECT_NE(fig.find("not drawn: 1 failed, 1 skipped (the table lists them)"), std::string::npos) << fig;
  EXPECT_EQ(fig.find(">mamf<"), std::string::npos) << "the sweep's MAMF is a line, not a bar";
}

// A train run's Markdown has its step breakdown and the collectives of a step beside the metrics table; a
// dry run's status says it measured nothing.
TEST(ReportMarkdown, TrainStepBreakdownAndDryRun) {
  auto train = result("train", "tiny/tp2/fp32", {{"step_time_s", metric(0.5, Better::lower, "s")}});
  TrainRunExtra ran;
  ran.breakdown = {{"gemm", "tp_exposed", "optimizer"}, {{"gemm", 0.25}, {"tp_exposed", 0.125}}, ""};
  ran.collective_bytes_per_step = {{"tp_allreduce/attn_out", 1048576}, {"tp_allreduce/mlp_out", 1048576}};
  ran.collective_calls_per_step = {{"tp_allreduce/attn_out", 4}, {"tp_allreduce/mlp_out", 4}};
  TrainExtra x;
  x.run = ran;
  write_train_extra(train, x);
  auto plan = result("train", "big/tp8/bf16", {{"flops_per_step", metric(2e16, Better::none, "FLOP")}});
  plan.params["dry_run"] = true;
  const std::string md = render_markdown({{"r.json", run("r", {train, plan})}});
  EXPECT_NE(md.find("| big/tp8/bf16 | ok (dry run: planned, not measured) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| result | gemm (s) | tp_exposed (s) | collectives per step |\n|---|---:|---:|---|\n"
                    "| tiny/tp2/fp32 | 0.25 | 0.125 | 2 MiB in 8 calls |\n"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| big/tp8/bf16 | –"), std::string::npos);  // the plan has no row in the step table
}

// A sweep of one model and layout: each bar is named by what differs, the caption says what all share.
TEST(ReportHtml, TrainBarsAreNamedByWhatSetsThemApart) {
  std::vector<Result> runs;
  for (const char* ga : {"ga1", "ga2"}) {
    auto r = result("train", std::string("tiny-dense/tp1-dp1-ep1-pp1/fp32/seq128-mb1-") + ga,
                    {{"step_time_s", metric(1, Better::lower, "s")}});
    r.extra["breakdown"] = {{"gemm", 0.5}};
    runs.push_back(r);
  }
  const std::string html = render_html({{"r.json", run("r", runs)}});
  EXPECT_NE(html.find(">seq128-mb1-ga1</text>"), std::string::npos) << html;
  EXPECT_NE(html.find(">seq128-mb1-ga2</text>"), std::string::npos);
  EXPECT_NE(html.find("2 runs, of tiny-dense/tp1-dp1-ep1-pp1/fp32/* (bars name the *)"), std::string::npos);
}

TEST(ReportHtml, TrainBreakdownSegmentsFollowTheCategoriesTheResultCarries) {
  // The printer knows no category names: the result's extra.breakdown_categories gives the stacking order,
  // categories it does not list follow in order of appearance.
  auto train = result("train", "tiny/tp1/fp32", {{"step_time_s", metric(1, Better::lower, "s")}});
  train.extra["breakdown"] = {{"alpha", 0.2}, {"mid", 0.3}, {"unlisted", 0.1}, {"zulu", 0.4}};
  train.extra["breakdown_categories"] = {"zulu", "alpha", "mid"};
  const std::string html = render_html({{"r.json", run("r", {train})}});
  // Each segment's rectangle is titled "<bar> \u2014 <segment>: <value>", in stacking order.
  const auto at = [&](const char* segment) { return html.find(std::string("\u2014 ") + segment + ": "); };
  ASSERT_NE(at("zulu"), std::string::npos) << html;
  ASSERT_NE(at("alpha"), std::string::npos);
  ASSERT_NE(at("mid"), std::string::npos);
  ASSERT_NE(at("unlisted"), std::string::npos);
  EXPECT_LT(at("zulu"), at("alpha"));
  EXPECT_LT(at("alpha"), at("mid"));
  EXPECT_LT(at("mid"), at("unlisted"));
}

TEST(ReportHtml, TelemetryTimelineWithClocksAndTemperatureUnderIt) {
  // --telemetry full: two results with their windows, two ranks' series (GPU readings on rank 0, the host's
  // on rank 1, which started 0.5 s later), so: the timeline, a clock chart and a temperature chart.
  auto a = result("gemm", "bf16/64x64x64", {{"tflops", metric(0.5, Better::higher, "TFLOP/s")}},
                  {{"dtype", "bf16"}});
  a.extra["telemetry"] = {{"from_s", 0.1}, {"to_s", 0.6}};
  auto b = result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(3, Better::higher, "GB/s")}});
  b.extra["telemetry"] = {{"from_s", 0.7}, {"to_s", 1.1}};
  auto rep = run("r", {a, b});
  rep.summary["telemetry"] = {
      {"mode", "full"},
      {"interval_ms", 100.0},
      {"ranks",
       {{{"rank", 0},
         {"started_at", "2026-11-29T10:00:00.000Z"},
         {"series",
          {{"t_s", {0.0, 0.5, 1.0}},
           {"gpu", {{"sm_clock_mhz", {1980, 1755, nullptr}}, {"temperature_c", {40, 61, 70}}}}}}},
        {{"rank", 1},
         {"started_at", "2026-11-29T10:00:00.500Z"},
         {"series", {{"t_s", {0.0, 0.5}}, {"host", {{"cpu_mhz", {2400, 2450}}}}}}}}}};
  const std::string html = render_html({{"r.json", rep}});
  EXPECT_NE(html.find("Benchmark timeline"), std::string::npos);
  EXPECT_NE(
      html.find("Clock per rank from summary.telemetry.ranks[].series (gpu.sm_clock_mhz, host.cpu_mhz), "
                "sampled every 100 ms"),
      std::string::npos);
  EXPECT_NE(html.find("Temperature per rank from summary.telemetry.ranks[].series (gpu.temperature_c)"),
            std::string::npos);
  EXPECT_EQ(count(html, "<figure class=\"chart\""), count(html, "<svg "));
  // One time axis: a window's start on the strip and a reading at that moment in the chart under it are at
  // the same x (b starts at 0.7 s; rank 1's first reading, shifted by its 0.5 s later start, is at 0.5 s).
  const auto x_of = [&](const std::string& figure, const std::string& title) {
    const auto at = figure.find(title);
    const auto circle = figure.rfind("<circle", at), rect = figure.rfind("<rect", at);
    const bool is_circle = circle != std::string::npos && (rect == std::string::npos || circle > rect);
    const auto x = figure.find(is_circle ? "cx=\"" : "x=\"", is_circle ? circle : rect);
    return std::stod(figure.substr(figure.find('"', x) + 1));
  };

  const std::string strip = figure_with(html, "Each result&apos;s measured window");
  const std::string clock = figure_with(html, "Clock per rank");
  ASSERT_FALSE(strip.empty());
  ASSERT_FALSE(clock.empty());
  const double strip_left = x_of(strip, "<title>gemm: 0.10"),
               strip_07 = x_of(strip, "<title>collective: 0.70");
  const double clock_0 = x_of(clock, "<title>rank 0: 0 →"), clock_05 = x_of(clock, "<title>rank 1: 0.5 →");
  // From the run's start: the strip's 0.1 s and 0.7 s, the chart's 0 s and 0.5 s, on one scale.
  const double per_s = (strip_07 - strip_left) / 0.6;
  EXPECT_NEAR(clock_05 - clock_0, 0.5 * per_s, 0.2);
  EXPECT_NEAR(strip_left - clock_0, 0.1 * per_s, 0.2);
  // Without series (--telemetry summary) there is nothing to plot over time.
  rep.summary["telemetry"]["ranks"][0].erase("series");
  rep.summary["telemetry"]["ranks"][1].erase("series");
  EXPECT_EQ(render_html({{"r.json", rep}}).find("Benchmark timeline"), std::string::npos);
}

// A column read less often than the sampling (the host clock from /proc/cpuinfo, once a second, on a VM) is
// null in most samples: its readings are kept before the series is thinned, and the caption counts them
// instead of claiming the sampling interval. A dense column is thinned and still reaches its last sample.
TEST(ReportHtml, TelemetryChartsKeepSparseReadingsAndThinDenseOnes) {
  nlohmann::json t = nlohmann::json::array(), mhz = nlohmann::json::array(), temp = nlohmann::json::array();
  for (int k = 0; k < 2000; ++k) {
    t.push_back(k * 0.001);
    mhz.push_back(k % 100 == 0 ? nlohmann::json(2400 + k / 100) : nlohmann::json(nullptr));
    temp.push_back(k == 1999 ? 99.0 : 40.0 + k % 7);
  }
  auto a = result("burnin", "burnin/node/vm", {{"tflops", metric(0.5, Better::higher, "TFLOP/s")}});
  a.extra["telemetry"] = {{"from_s", 0.0}, {"to_s", 1.999}};
  auto rep = run("r", {a});
  rep.summary["telemetry"] = {
      {"mode", "full"},
      {"interval_ms", 1.0},
      {"ranks",
       {{{"rank", 0},
         {"started_at", "2026-11-29T10:00:00.000Z"},
         {"series", {{"t_s", t}, {"host", {{"cpu_mhz", mhz}, {"temperature_c", temp}}}}}}}}};
  const std::string html = render_html({{"r.json", rep}});
  const std::string clock = figure_with(html, "Clock per rank");
  ASSERT_FALSE(clock.empty()) << html;
  EXPECT_EQ(count(clock, "<title>rank 0: "), 20u) << clock;  // every reading, none thinned away
  EXPECT_NE(clock.find("(host.cpu_mhz), points: 20 readings"), std::string::npos) << clock;
  EXPECT_EQ(clock.find("sampled every"), std::string::npos);
  const std::string temperature = figure_with(html, "Temperature per rank");
  ASSERT_FALSE(temperature.empty());
  EXPECT_EQ(count(temperature, "<title>rank 0: "), 600u);          // as the caption says
  EXPECT_NE(temperature.find("→ 99</title>"), std::string::npos);  // the last sample is kept
  EXPECT_NE(temperature.find("sampled every 1 ms, thinned to 600 points per rank"), std::string::npos);
  // Hand-edited rank entries that are not objects, or whose "rank" is not an integer, are left out (they
  // stopped the page with a JSON type error, exit 3).
  rep.summary["telemetry"]["ranks"].push_back(5);
  rep.summary["telemetry"]["ranks"].push_back({{"rank", "one"}, {"series", {{"t_s", {0.0}}}}});
  const std::string edited = render_html({{"r.json", rep}});
  EXPECT_EQ(count(figure_with(edited, "Clock per rank"), "<title>rank 0: "), 20u);
  // One reading over the limit is 600 points, not every other reading (601 drew 301).
  for (auto* column : {&t, &temp}) column->erase(column->begin() + 601, column->end());
  rep.summary["telemetry"]["ranks"] = {{{"rank", 0},
                                        {"started_at", "2026-11-29T10:00:00.000Z"},
                                        {"series", {{"t_s", t}, {"host", {{"temperature_c", temp}}}}}}};
  const std::string just_over = figure_with(render_html({{"r.json", rep}}), "Temperature per rank");
  EXPECT_EQ(count(just_over, "<title>rank 0: "), 600u) << just_over;
}

// The time axis starts at the earliest of the run's start and the ranks' sampler starts: a rank whose sampler
// started before rank 0's (another node's clock) was drawn left of the axis, or off the chart.
TEST(ReportHtml, TelemetryAxisStartsAtTheEarliestRank) {
  auto a = result("collective", "allreduce/fp32/1024", {{"busbw_gbps", metric(3, Better::higher, "GB/s")}});
  a.extra["telemetry"] = {{"from_s", 0.1}, {"to_s", 0.6}};
  auto b = result("collective", "allreduce/fp32/2048", {{"busbw_gbps", metric(3, Better::higher, "GB/s")}});
  b.extra["telemetry"] = {{"from_s", 0.7}, {"to_s", 1.1}};
  auto rep = run("r", {a, b});
  rep.run["started_at"] = "2026-11-29T10:00:01.900Z";
  rep.summary["telemetry"] = {{"mode", "full"},
                              {"interval_ms", 100.0},
                              {"ranks",
                               {{{"rank", 0},
                                 {"started_at", "2026-11-29T10:00:02.000Z"},
                                 {"series", {{"t_s", {0.0, 1.0}}, {"host", {{"cpu_mhz", {2400, 2410}}}}}}},
                                {{"rank", 1},
                                 {"started_at", "2026-11-29T10:00:00.000Z"},
                                 {"series", {{"t_s", {0.0, 3.0}}, {"host", {{"cpu_mhz", {2300, 2310}}}}}}}}}};
  const std::string html = render_html({{"r.json", rep}});
  const std::string strip = figure_with(html, "Each result&apos;s measured window");
  const std::string clock = figure_with(html, "Clock per rank");
  ASSERT_FALSE(strip.empty());
  ASSERT_FALSE(clock.empty()) << html;
  // Rank 1's first reading is the axis' 0; rank 0's, 2 s later; rank 0's windows follow its clock.
  EXPECT_NE(clock.find("<title>rank 1: 0 →"), std::string::npos) << clock;
  EXPECT_NE(clock.find("<title>rank 0: 2 →"), std::string::npos) << clock;
  EXPECT_NE(strip.find("<title>collective: 2.10"), std::string::npos) << strip;
  const auto x_at = [](const std::string& figure, const std::string& title) {
    const auto circle = figure.rfind("<circle", figure.find(title));
    return std::stod(figure.substr(figure.find("cx=\"", circle) + 4));
  };
  const auto axis_left = [](const std::string& figure) {  // the y axis: the first vertical line
    const auto line = figure.find("<line x1=\"");
    return std::stod(figure.substr(line + 10));
  };
  EXPECT_GE(x_at(clock, "<title>rank 1: 0 →"), axis_left(clock) - 0.5) << clock;
  EXPECT_GT(x_at(clock, "<title>rank 0: 2 →"), x_at(clock, "<title>rank 1: 0 →"));
}

// A suite keeps each step's series in summary.steps.<step>.telemetry (its summary.telemetry holds only the
// moments after the last step): the charts join the steps in time order, a timeline lane per step.
TEST(ReportHtml, SuiteTelemetryChartsJoinTheSteps) {
  auto g = result("gemm", "fp32/128x128x128", {{"tflops", metric(0.5, Better::higher, "TFLOP/s")}});
  g.extra["telemetry"] = {{"from_s", 0.0}, {"to_s", 0.2}};
  g.extra["suite_step"] = "z-gemm";
  auto b = result("burnin", "burnin/node/vm", {{"tflops", metric(0.4, Better::higher, "TFLOP/s")}});
  b.extra["telemetry"] = {{"from_s", 0.2}, {"to_s", 0.4}};
  b.extra["suite_step"] = "a-burnin";
  auto rep = run("s", {g, b});
  const auto block = [](nlohmann::json t, nlohmann::json clock) {
    return nlohmann::json{
        {"mode", "full"},
        {"interval_ms", 100.0},
        {"ranks",
         {{{"rank", 0},
           {"started_at", "2026-11-29T10:00:00.000Z"},
           {"series", {{"t_s", std::move(t)}, {"gpu", {{"sm_clock_mhz", std::move(clock)}}}}}}}}};
  };
  // Object keys sort by name: "a-burnin" is listed first but ran second.
  rep.summary["steps"]["z-gemm"]["telemetry"] = block({0.0, 0.1, 0.2}, {1980, 1970, 1960});
  rep.summary["steps"]["a-burnin"]["telemetry"] = block({0.2, 0.3, 0.4}, {1960, 1755, 1700});
  rep.summary["telemetry"] = block({0.4, 0.41}, {1700, 1700});
  const std::string html = render_html({{"s.json", rep}});
  const std::string clock = figure_with(html, "Clock per rank");
  ASSERT_FALSE(clock.empty()) << html;
  EXPECT_NE(clock.find("from summary.steps.&lt;step&gt;.telemetry.ranks[].series of steps z-gemm, a-burnin "
                       "(gpu.sm_clock_mhz), sampled every 100 ms"),
            std::string::npos)
      << clock;
  EXPECT_EQ(count(clock, "<title>rank 0: "), 5u);  // the shared boundary sample once, not the tail after
  const std::string timeline = figure_with(html, "Each result&apos;s measured window");
  EXPECT_NE(timeline.find("a lane per suite step"), std::string::npos);
  EXPECT_NE(timeline.find(">z-gemm<"), std::string::npos) << timeline;
  EXPECT_NE(timeline.find(">a-burnin<"), std::string::npos);
}

// A GPU slowdown during a result (extra.telemetry.gpu.slowdown_reasons) or during the run
// (summary.telemetry.ranks[].gpu) is a warning in the Markdown, the HTML and the summary line; other
// clock-event reasons (a power cap) and an empty list are not.
TEST(ReportPrinters, GpuSlowdownIsAWarning) {
  auto a = result("gemm", "bf16/8192x8192x8192", {{"tflops", metric(500, Better::higher, "TFLOP/s")}});
  a.extra["telemetry"] = {{"gpu",
                           {{"clock_event_reasons", {"hw_thermal_slowdown", "sw_power_cap"}},
                            {"slowdown_reasons", {"hw_thermal_slowdown"}},
                            {"slowdown_ranks", {3}}}}};
  auto b = result("gemm", "bf16/4096x4096x4096", {{"tflops", metric(450, Better::higher, "TFLOP/s")}});
  b.extra["telemetry"] = {
      {"gpu", {{"clock_event_reasons", {"sw_power_cap"}}, {"slowdown_reasons", nlohmann::json::array()}}}};
  auto rep = run("r", {a, b});
  rep.summary["telemetry"] = {
      {"mode", "summary"},
      {"ranks",
       {{{"rank", 3}, {"gpu", {{"slowdown_reasons", {"hw_thermal_slowdown"}}}}},
        {{"rank", 5}, {"gpu", {{"slowdown_reasons", {"hw_power_brake_slowdown"}}}}}}}};
  const std::string line = "GPU slowdown during gemm/bf16/8192x8192x8192: hw_thermal_slowdown (rank 3)";
  const std::string run_line = "GPU slowdown during the run: hw_power_brake_slowdown (rank 5)";
  const std::string md = render_markdown({{"r.json", rep}});
  EXPECT_NE(md.find("> **Warning:** " + line + "\n>\n> **Warning:** " + run_line + "\n"), std::string::npos)
      << md;
  EXPECT_EQ(count(md, "GPU slowdown"), 2u);  // rank 3's reason is the result's: not said again for the run
  const std::string html = render_html({{"r.json", rep}});
  EXPECT_NE(html.find("<b>Warning:</b> " + line), std::string::npos);
  EXPECT_NE(html.find("<b>Warning:</b> " + run_line), std::string::npos);
  const std::string summary = render_summary({{"r.json", rep}});
  EXPECT_NE(summary.find("GPU slowdown: hw_thermal_slowdown (rank 3)"), std::string::npos) << summary;

  // Power capping listed among the slowdowns (a hand-written report) is still not one (docs/reports.md).
  auto capped = b;
  capped.extra["telemetry"]["gpu"]["slowdown_reasons"] = {"sw_power_cap"};
  capped.extra["telemetry"]["gpu"]["slowdown_ranks"] = {0};
  EXPECT_EQ(render_markdown({{"c.json", run("c", {capped})}}).find("slowdown"), std::string::npos);

  // No slowdown: no warning anywhere.
  a.extra["telemetry"]["gpu"]["slowdown_reasons"] = nlohmann::json::array();
  a.extra["telemetry"]["gpu"]["slowdown_ranks"] = nlohmann::json::array();
  auto calm = run("r", {a, b});
  calm.summary["telemetry"] = {
      {"mode", "summary"},
      {"ranks", {{{"rank", 0}, {"gpu", {{"slowdown_reasons", nlohmann::json::array()}}}}}}};
  for (const auto format : {ReportFormat::markdown, ReportFormat::html, ReportFormat::summary}) {
    const std::string out = render_report({{"r.json", calm}}, format);
    EXPECT_EQ(out.find("slowdown"), std::string::npos) << out;
    EXPECT_EQ(out.find("Warning"), std::string::npos) << out;
  }
  // A suite: each step's run-level telemetry is its own (summary.steps.<step>.telemetry).
  calm.summary["steps"]["b1"]["telemetry"] = {
      {"ranks", {{{"rank", 1}, {"gpu", {{"slowdown_reasons", {"sw_thermal_slowdown"}}}}}}}};
  EXPECT_NE(render_markdown({{"r.json", calm}})
                .find("> **Warning:** GPU slowdown during step b1: sw_thermal_slowdown (rank 1)\n"),
            std::string::npos);
  // Results that carry one window (the run's telemetry, copied into health's per-rank results) are one line:
  // rank 3's throttle is not said of every rank's result.
  std::vector<Result> ranks;
  for (int k = 0; k < 4; ++k) {
    ranks.push_back(result("health", fmt::format("gemm/rank{}", k), {}));
    ranks.back().extra["telemetry"] = {
        {"from_s", 0.5},
        {"to_s", 9.5},
        {"gpu", {{"slowdown_reasons", {"hw_thermal_slowdown"}}, {"slowdown_ranks", {3}}}}};
  }
  const std::string shared = render_markdown({{"h.json", run("h", ranks)}});
  EXPECT_EQ(count(shared, "GPU slowdown"), 1u) << shared;
  EXPECT_NE(
      shared.find("GPU slowdown during the window of 4 results (health/gemm/rank0 … health/gemm/rank3): "
                  "hw_thermal_slowdown (rank 3)"),
      std::string::npos)
      << shared;
}

TEST(Timeline, CategoriesFromEventsSumToWallTime) {
  // init 10 s, steps 1-2 (5 s each), checkpoint 2 s (committed at step 2), steps 3-4, crash 1 s into step 5,
  // detected 4 s later, relaunch 6 s, init 3 s, restore 2 s (to step 2), steps 3-4 again, end.
  const auto events = nlohmann::json::parse(R"([
    {"type":"job_start","t":0}, {"type":"attempt_start","t":0}, {"type":"init_done","t":10},
    {"type":"step","step":1,"t_start":10,"t":15}, {"type":"step","step":2,"t_start":15,"t":20},
    {"type":"ckpt_save_end","t_start":20,"t":22,"step":2}, {"type":"ckpt_commit","t":22,"step":2},
    {"type":"step","step":3,"t_start":22,"t":27}, {"type":"step","step":4,"t_start":27,"t":32},
    {"type":"fault_injected","t":33,"kind":"crash","rank":1},
    {"type":"failure_detected","t":37,"kind":"crash","how":"exit"},
    {"type":"relaunch","t":37}, {"type":"attempt_start","t":43}, {"type":"init_done","t":46},
    {"type":"ckpt_restore_start","t":46}, {"type":"ckpt_restore_end","t":48,"step":2},
    {"type":"step","step":3,"t_start":48,"t":53}, {"type":"step","step":4,"t_start":53,"t":58},
    {"type":"job_end","t":58}])");
  const Timeline tl = timeline_from_events(events);
  std::map<std::string, double> seconds;
  double end = 0;
  for (const auto& s : tl.spans) {
    EXPECT_NEAR(s.start_s, end, 1e-9);  // contiguous, no overlap
    seconds[s.category] += s.end_s - s.start_s;
    end = s.end_s;
  }
  EXPECT_NEAR(end, 58, 1e-9);
  EXPECT_NEAR(seconds["init"], 13, 1e-9);
  EXPECT_NEAR(seconds["productive"], 20, 1e-9);  // steps 1, 2 and the second run of 3, 4
  EXPECT_NEAR(seconds["ckpt_save"], 2, 1e-9);
  EXPECT_NEAR(seconds["wasted"], 11, 1e-9);  // first run of steps 3, 4 and 1 s of step 5
  EXPECT_NEAR(seconds["detection"], 4, 1e-9);
  EXPECT_NEAR(seconds["relaunch"], 6, 1e-9);
  EXPECT_NEAR(seconds["ckpt_restore"], 2, 1e-9);
  EXPECT_EQ(tl.markers.size(), 2u);
}

// As the goodput ledger: the failure instant is the injected fault of the failure's kind (not a straggler's
// or an SDC's injected beside it), and after a failure nothing relaunched the rest is other, not relaunch.
TEST(Timeline, FailureInstantByKindAndNoRelaunchAfterTheLastFailure) {
  const auto events = nlohmann::json::parse(R"([
    {"type":"job_start","t":0}, {"type":"attempt_start","t":0}, {"type":"init_done","t":10},
    {"type":"step","step":1,"t_start":10,"t":15},
    {"type":"fault_injected","t":16,"kind":"crash","rank":1},
    {"type":"fault_injected","t":17,"kind":"sdc","rank":0},
    {"type":"fault_injected","t":18,"kind":"straggler","rank":0},
    {"type":"failure_detected","t":20,"kind":"crash","how":"exit"},
    {"type":"job_end","t":25}])");
  const Timeline tl = timeline_from_events(events);
  std::map<std::string, double> seconds;
  for (const auto& s : tl.spans) seconds[s.category] += s.end_s - s.start_s;
  EXPECT_NEAR(seconds["wasted"], 1, 1e-9);     // 15 → the crash at 16
  EXPECT_NEAR(seconds["detection"], 4, 1e-9);  // 16 → 20
  EXPECT_NEAR(seconds["relaunch"], 0, 1e-9);
  EXPECT_NEAR(seconds["other"], 5, 1e-9);  // 20 → 25: nothing relaunched
}

TEST(Timeline, ExplicitTimelineWins) {
  Report rep;
  rep.summary = {{"timeline", {{{"start_s", 0}, {"end_s", 5}, {"category", "productive"}}}}};
  rep.events =
      nlohmann::json::array({{{"type", "job_start"}, {"t", 0.0}}, {{"type", "job_end"}, {"t", 9.0}}});
  const auto tls = report_timelines(rep);
  ASSERT_EQ(tls.size(), 1u);
  ASSERT_EQ(tls[0].spans.size(), 1u);
  EXPECT_EQ(tls[0].spans[0].category, "productive");
}

// --policy compare logs two jobs one after the other, each with its step 1, 2, ...: each is its own timeline
// from its own start, and the second job's steps do not roll back (mark wasted) the first's. In the HTML, one
// lane per job, named by its result, with its goodput.
TEST(Timeline, EachJobOfAReportIsItsOwnLane) {
  const auto job = [](double t0) {
    return nlohmann::json::array({{{"type", "job_start"}, {"t", t0}},
                                  {{"type", "attempt_start"}, {"t", t0}},
                                  {{"type", "init_done"}, {"t", t0 + 1}},
                                  {{"type", "step"}, {"step", 1}, {"t_start", t0 + 1}, {"t", t0 + 3}},
                                  {{"type", "step"}, {"step", 2}, {"t_start", t0 + 3}, {"t", t0 + 5}},
                                  {{"type", "job_end"}, {"t", t0 + 5}}});
  };
  Report rep;
  rep.events = job(100);
  for (const auto& e : job(105)) rep.events.push_back(e);
  const auto tls = report_timelines(rep);
  ASSERT_EQ(tls.size(), 2u);
  for (const auto& tl : tls) {
    std::map<std::string, double> seconds;
    for (const auto& sp : tl.spans) seconds[sp.category] += sp.end_s - sp.start_s;
    EXPECT_NEAR(tl.spans.front().start_s, 0, 1e-9);
    EXPECT_NEAR(seconds["init"], 1, 1e-9);
    EXPECT_NEAR(seconds["productive"], 4, 1e-9);
    EXPECT_EQ(seconds.count("wasted"), 0u);
  }
  for (const char* policy : {"none", "drain"}) {
    Result r;
    r.benchmark = "resilience";
    r.name = std::string("tiny-dense/ranks2/policy-") + policy;
    r.metrics.push_back({"goodput_pct", Metric{policy[0] == 'n' ? 60.0 : 80.0, "%", Better::higher, {}}});
    rep.results.push_back(r);
  }
  const std::string html = render_html({{"cmp.json", rep}});
  // The lanes (whose labels are cut short) are named by what sets the jobs apart.
  EXPECT_NE(html.find("policy-none: goodput 60.0%; policy-drain: goodput 80.0%"), std::string::npos) << html;
  // A first job whose job_start is missing is still a job of its own.
  rep.events.erase(rep.events.begin());
  EXPECT_EQ(report_timelines(rep).size(), 2u);
}

// The footer names this renderer, and the versions that wrote the reports apart from it.
TEST(HtmlPrinter, FooterNamesTheRendererAndTheWriters) {
  Report rep;
  rep.tool = {{"name", "factorybench"}, {"version", "9.9.9"}};
  const std::string html = render_html({{"old.json", rep}});
  EXPECT_NE(html.find(fmt::format("Rendered by factorybench {} from 1 report of schema {} written by "
                                  "factorybench 9.9.9.",
                                  build::kVersion, kSchemaV1)),
            std::string::npos)
      << html.substr(html.find("<footer>"));
}

// Chart labels are cut short: names are told apart by the segments that differ, the shared part said once.
TEST(ReportView, DistinctLabelsKeepWhatDiffers) {
  auto d =
      distinct_labels({"tiny-dense/tp1-dp1/fp32/seq128-mb1-ga1", "tiny-dense/tp1-dp1/fp32/seq128-mb1-ga2"});
  EXPECT_EQ(d.labels, (std::vector<std::string>{"seq128-mb1-ga1", "seq128-mb1-ga2"}));
  EXPECT_EQ(d.shared, "tiny-dense/tp1-dp1/fp32/*");
  d = distinct_labels({"tiny/tp2-dp1/fp32/seq128", "tiny/tp1-dp2/fp32/seq256", "tiny/tp1-dp2/fp32/seq128"});
  EXPECT_EQ(d.labels, (std::vector<std::string>{"tp2-dp1/seq128", "tp1-dp2/seq256", "tp1-dp2/seq128"}));
  EXPECT_EQ(d.shared, "tiny/*/fp32/*");
  d = distinct_labels({"a/b", "x/b/c"});  // different depths: whole names
  EXPECT_EQ(d.labels, (std::vector<std::string>{"a/b", "x/b/c"}));
  EXPECT_EQ(d.shared, "");
  EXPECT_EQ(distinct_labels({"only/one"}).labels, (std::vector<std::string>{"only/one"}));
  EXPECT_EQ(distinct_labels({"same/x", "same/x"}).shared, "");
}

// A value near the largest double, a negative one and an absurd time keep every coordinate a number: the
// axis stops at 1e300 and values outside it are drawn clipped inside the plot.
TEST(SvgChart, AbsurdValuesKeepCoordinatesFinite) {
  const std::regex coord("(?:x|y|cx|cy|width|height|x1|x2|y1|y2)=\"([^\"]*)\"");
  const auto check = [&](const std::string& out) {
    for (auto it = std::sregex_iterator(out.begin(), out.end(), coord); it != std::sregex_iterator(); ++it)
      EXPECT_TRUE(std::isfinite(std::stod((*it)[1]))) << (*it)[0];
    EXPECT_EQ(out.find("nan"), std::string::npos) << out;
    EXPECT_EQ(out.find("inf"), std::string::npos) << out;
  };
  svg::LineChart line;
  line.series.push_back({"busbw", {{1024, 1.7e308}, {2048, -5}, {4096, 12}}});
  check(svg::render(line));
  svg::BarChart bar;
  bar.categories = {"a", "b"};
  bar.values = {{1.7e308, -3}};
  check(svg::render(bar));
  svg::StackedBarChart stack;
  stack.categories = {"a"};
  stack.segment_names = {"gemm", "attention"};
  stack.values = {{1.7e308}, {1.7e308}};
  check(svg::render(stack));
  svg::GanttChart gantt;
  gantt.lanes.push_back({"job", {{-1.7e308, 1.7e308, "productive"}}, {}});
  check(svg::render(gantt));
}

// The Gantt chart's label column fits its lane names: 'policy-drain-checkpoint' is not cut at 18 characters;
// a name longer than a third of the chart is cut with an ellipsis.
TEST(SvgChart, GanttLabelsFitTheirColumn) {
  svg::GanttChart gantt;
  gantt.lanes.push_back({"policy-drain-checkpoint", {{0, 10, "productive"}}, {}});
  gantt.lanes.push_back({std::string(80, 'x'), {{0, 10, "productive"}}, {}});
  const std::string out = svg::render(gantt);
  EXPECT_NE(out.find(">policy-drain-checkpoint<"), std::string::npos);
  EXPECT_EQ(out.find(std::string(80, 'x')), std::string::npos);
  EXPECT_NE(out.find("x…<"), std::string::npos);
}

// Spans narrower than a pixel's time are drawn as cells of at least that time, each in its largest
// category's colour, with every category's time kept; spans wide enough are drawn as they are.
TEST(SvgChart, SpansUnderAPixelAreGatheredIntoCells) {
  const std::vector<svg::Span> wide = {{0, 2, "init"}, {2, 2.5, "other"}, {2.5, 9, "productive"}};
  const auto same = svg::spans_at_resolution(wide, 0.5);
  ASSERT_EQ(same.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(same[i].start_s, wide[i].start_s);
    EXPECT_EQ(same[i].end_s, wide[i].end_s);
    EXPECT_EQ(same[i].category, wide[i].category);
    EXPECT_EQ(
        same[i].parts,
        (std::vector<std::pair<std::string, double>>{{wide[i].category, wide[i].end_s - wide[i].start_s}}));
  }
  // 1000 steps of 3 ms, each followed by a 1 ms gap (4 s), at 0.0999 s a pixel: 40 cells of 25 steps (0.1 s;
  // 0.0999, as 25 steps summed in floating point fall short of 0.1 by an ulp).
  std::vector<svg::Span> steps;
  for (int k = 0; k < 1000; ++k) {
    steps.push_back({k * 0.004, k * 0.004 + 0.003, "productive"});
    steps.push_back({k * 0.004 + 0.003, (k + 1) * 0.004, "other"});
  }
  const auto cells = svg::spans_at_resolution(steps, 0.0999);
  ASSERT_EQ(cells.size(), 40u);
  double productive = 0, other = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    EXPECT_EQ(cells[i].category, "productive") << i;
    EXPECT_NEAR(cells[i].start_s, 0.1 * static_cast<double>(i), 1e-9) << i;
    EXPECT_NEAR(cells[i].end_s - cells[i].start_s, 0.1, 1e-9) << i;
    ASSERT_EQ(cells[i].parts.size(), 2u);
    EXPECT_EQ(cells[i].parts[0].first, "productive");
    productive += cells[i].parts[0].second;
    other += cells[i].parts[1].second;
  }
  EXPECT_NEAR(productive, 3.0, 1e-9);
  EXPECT_NEAR(other, 1.0, 1e-9);
  // A cell of equal parts takes the category seen first; a wide span after a cell still under a pixel joins
  // it.
  const auto tie = svg::spans_at_resolution(
      {{0, 0.01, "wasted"}, {0.01, 0.02, "detection"}, {0.02, 0.05, "relaunch"}}, 0.02);
  ASSERT_EQ(tie.size(), 2u);
  EXPECT_EQ(tie[0].category, "wasted");
  EXPECT_EQ(tie[1].category, "relaunch");
  const auto joined = svg::spans_at_resolution({{0, 0.001, "other"}, {0.001, 5, "init"}}, 0.02);
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].category, "init");
  EXPECT_EQ(joined[0].end_s, 5);
  // Drawn: one rectangle per cell, not one per step (the HTML of a 20000-step run was 7.8 MB of them).
  svg::GanttChart gantt;
  gantt.lanes.push_back({"job", steps, {}});
  const std::string out = svg::render(gantt);
  std::size_t rects = 0;
  for (auto at = out.find("<rect"); at != std::string::npos; at = out.find("<rect", at + 1)) ++rects;
  EXPECT_LT(rects, 1500u);
  EXPECT_GT(rects, 100u);
  EXPECT_NE(out.find("spans too short to draw one by one: productive"), std::string::npos);
}

TEST(SvgChart, NiceTicksAndBytes) {
  EXPECT_EQ(svg::nice_ticks(0, 482.3, 5), (std::vector<double>{0, 100, 200, 300, 400, 500}));
  EXPECT_EQ(svg::nice_ticks(0, 1, 4), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(svg::short_bytes(1024), "1K");
  EXPECT_EQ(svg::short_bytes(17179869184.0), "16G");
  EXPECT_EQ(svg::short_bytes(8), "8");
}

// A hand-edited report's open objects: a field of another type, null, or a non-object reads as absent (or,
// for field_text, as its JSON text), never as nlohmann's type_error.
TEST(JsonFields, ReadOptionalFieldsOfAnyType) {
  const auto j = nlohmann::json::parse(R"({"s": "H200", "n": 3, "z": null, "o": {"a": 1}})");
  EXPECT_EQ(string_field(j, "s"), "H200");
  EXPECT_EQ(string_field(j, "n"), "");
  EXPECT_EQ(string_field(j, "z"), "");
  EXPECT_EQ(string_field(j, "missing"), "");
  EXPECT_EQ(string_field(nlohmann::json::array({1}), "s"), "");
  EXPECT_EQ(field_text(j, "s"), "H200");
  EXPECT_EQ(field_text(j, "n"), "3");
  EXPECT_EQ(field_text(j, "z"), "");
  EXPECT_EQ(field_text(j, "o"), R"({"a":1})");
  EXPECT_EQ(field_text(nlohmann::json("text"), "s"), "");
}

}  // namespace
}  // namespace fb::reports
