#include "reports/report_json.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.hpp"

namespace fb::reports {
namespace {

Report sample_report() {
  Report r;
  r.tool = {{"name", "factorybench"}, {"version", "0.1.0"}, {"git_commit", "abc"}};
  r.run = {{"id", "x"}, {"world_size", 2}};
  Result res;
  res.benchmark = "collective";
  res.name = "allreduce/fp32/1048576";
  res.params = {{"op", "allreduce"}, {"bytes", 1048576}};
  const std::vector<double> samples{3.0, 1.0, 2.0, 4.0};
  res.set_metric("time_us", metric_from_samples(samples, "us", Better::lower));
  res.set_metric("busbw_gbps", {12.5, "GB/s", Better::higher, std::nullopt});
  res.set_per_rank("time_us", {1.0, 2.0});
  r.results.push_back(res);
  Result failed;
  failed.benchmark = "gemm";
  failed.name = "fp32/256x256x256";
  failed.fail("wrong result: 3 of 64 sampled elements outside tolerance");
  r.results.push_back(failed);
  r.summary = {{"note", "x"}};
  return r;
}

TEST(ReportJson, RoundTripKeepsEverything) {
  const Report original = sample_report();
  const Report back = report_from_json(to_json(original), "test");
  EXPECT_EQ(to_json(back), to_json(original));
  ASSERT_EQ(back.results.size(), 2u);
  const Metric* t = back.results[0].metric("time_us");
  ASSERT_NE(t, nullptr);
  EXPECT_DOUBLE_EQ(t->value, 2.5);  // median of 1,2,3,4
  ASSERT_TRUE(t->stats.has_value());
  EXPECT_EQ(t->stats->n, 4u);
  EXPECT_DOUBLE_EQ(t->stats->p99, 4.0);
  EXPECT_EQ(back.results[1].status, Status::failed);
  EXPECT_TRUE(back.any_failed());
}

TEST(ReportJson, NonFiniteValuesBecomeNull) {
  Report r = sample_report();
  r.results[0].set_metric("busbw_gbps", {std::nan(""), "GB/s", Better::higher, std::nullopt});
  const auto j = to_json(r);
  EXPECT_TRUE(j["results"][0]["metrics"]["busbw_gbps"]["value"].is_null());
}

TEST(ReportJson, ErrorsNameTheJsonPath) {
  auto j = to_json(sample_report());
  j["results"][0]["metrics"]["busbw_gbps"]["value"] = "fast";
  try {
    report_from_json(j, "run.json");
    FAIL() << "accepted a string metric value";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(
        std::string(e.what()).find("run.json: $.results[0].metrics.busbw_gbps.value: expected a number"),
        std::string::npos)
        << e.what();
  }
  auto k = to_json(sample_report());
  k["results"][1].erase("status");
  EXPECT_THROW(report_from_json(k, "x"), Error);
  auto s = to_json(sample_report());
  s["schema"] = "something/else";
  EXPECT_THROW(report_from_json(s, "x"), Error);
}

// A spread that would widen compare's noise band: refused with its path.
TEST(ReportJson, ImpossibleStatsAreRefused) {
  const auto refused = [](nlohmann::json j, const std::string& what) {
    try {
      report_from_json(j, "s.json");
      ADD_FAILURE() << "accepted " << j["results"][0]["metrics"]["time_us"]["stats"].dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("s.json: $.results[0].metrics.time_us.stats." + what),
                std::string::npos)
          << e.what();
    }
  };
  auto j = to_json(sample_report());
  j["results"][0]["metrics"]["time_us"]["stats"]["stddev"] = -500;
  refused(j, "stddev: a standard deviation cannot be negative");
  j = to_json(sample_report());
  j["results"][0]["metrics"]["time_us"]["stats"]["min"] = 9;
  refused(j, "min: greater than max");
  j = to_json(sample_report());
  j["results"][0]["metrics"]["time_us"]["stats"]["median"] = 0.5;
  refused(j, "median: outside [min, max]");
  j = to_json(sample_report());
  j["results"][0]["metrics"]["time_us"]["stats"]["n"] = -1;  // used to wrap to 2^64 - 1 samples
  refused(j, "n: expected a non-negative integer");
}

// Names as the schema has them: a metric name is an identifier, a result has a name.
TEST(ReportJson, NamesOutsideTheSchemaAreRefused) {
  const auto message = [](nlohmann::json j) {
    try {
      report_from_json(j, "s.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  auto j = to_json(sample_report());
  j["results"][0]["metrics"]["we|ird"] = j["results"][0]["metrics"]["time_us"];
  EXPECT_EQ(
      message(j),
      "s.json: $.results[0].metrics.we|ird: a metric name is lower-case letters, digits and '_', starting "
      "with a letter");
  j = to_json(sample_report());
  j["results"][0]["name"] = "";
  EXPECT_EQ(message(j), "s.json: $.results[0].name: must not be empty");
  // A newline would split every line that names the result (compare's errors, the console tables).
  j["results"][0]["name"] = "a\nb";
  EXPECT_EQ(message(j), "s.json: $.results[0].name: \"a\\nb\": must not contain control characters");
  j = to_json(sample_report());
  j["results"][0]["benchmark"] = "gemm\t";
  EXPECT_EQ(message(j), "s.json: $.results[0].benchmark: \"gemm\\t\": must not contain control characters");
}

// v1 closes the report, result and metric objects: a misspelt optional field is refused, not dropped (a
// metric's "stat" would lose its noise band silently). Another version's fields are its own business.
TEST(ReportJson, FieldsOutsideTheV1SchemaAreRefused) {
  const auto message = [](nlohmann::json j) {
    try {
      report_from_json(j, "u.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  auto j = to_json(sample_report());
  j["results"][0]["metrics"]["time_us"]["stat"] = j["results"][0]["metrics"]["time_us"]["stats"];
  EXPECT_EQ(message(j),
            "u.json: $.results[0].metrics.time_us.stat: unknown field (known: value, unit, better, stats)");
  j = to_json(sample_report());
  j["results"][0]["metrics"]["time_us"]["stats"]["stdev"] = 1.0;
  EXPECT_EQ(message(j),
            "u.json: $.results[0].metrics.time_us.stats.stdev: unknown field (known: min, median, max, "
            "mean, p99, stddev, n)");
  j = to_json(sample_report());
  j["results"][1]["errors"] = "x";
  EXPECT_EQ(message(j),
            "u.json: $.results[1].errors: unknown field (known: benchmark, name, params, metrics, "
            "per_rank, status, error, extra)");
  j = to_json(sample_report());
  j["sumary"] = nlohmann::json::object();
  EXPECT_EQ(message(j),
            "u.json: $.sumary: unknown field (known: schema, tool, run, system, results, events, summary)");
  j["schema"] = "factorybench.report/v2";
  j["results"][0]["metrics"]["time_us"]["confidence"] = 0.9;
  EXPECT_EQ(message(j), "accepted");
  // A version string that is not v<N> (N >= 1) would have turned the closed-field check off silently.
  for (const char* bad : {"factorybench.report/", "factorybench.report/v0", "factorybench.report/v1.1",
                          "factorybench.report/V1", "factorybench.report/v", "factorybench.report/v01"}) {
    j["schema"] = bad;
    EXPECT_EQ(message(j), std::string("u.json: $.schema: unknown report schema version \"") + bad +
                              "\" (this build reads factorybench.report/v1 and later versions)");
  }
  // Open objects stay open: params, extra, summary, run.
  j = to_json(sample_report());
  j["results"][0]["params"]["anything"] = 1;
  j["summary"]["anything"] = 1;
  EXPECT_EQ(message(j), "accepted");
}

// Fields that compare and the renderings read: a wrong type is refused rather than read as "unknown".
TEST(ReportJson, RunFieldsOfTheWrongTypeAreRefusedWithTheirPath) {
  const auto refused = [](nlohmann::json j, const std::string& path_and_reason) {
    try {
      report_from_json(j, "run.json");
      ADD_FAILURE() << "accepted " << j["run"].dump() << " " << j["tool"].dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::input);
      EXPECT_NE(std::string(e.what()).find("run.json: " + path_and_reason), std::string::npos) << e.what();
    }
  };
  auto j = to_json(sample_report());
  j["run"]["world_size"] = "eight";
  refused(j, "$.run.world_size: expected a positive integer or null");
  j["run"]["world_size"] = 2.5;
  refused(j, "$.run.world_size: expected a positive integer or null");
  j["run"]["world_size"] = -4;
  refused(j, "$.run.world_size: expected a positive integer or null");
  j["run"]["world_size"] = 0;  // no rank ran: report-v1.json's minimum is 1
  refused(j, "$.run.world_size: expected a positive integer or null");
  j = to_json(sample_report());
  j["run"]["backend"] = "tpu";
  refused(j, "$.run.backend: \"tpu\" is not a backend (cuda, host, none or mixed)");
  j = to_json(sample_report());
  j["tool"]["name"] = "other";
  refused(j, "$.tool.name: \"other\": not a factorybench report");
  j = to_json(sample_report());
  j["run"]["hosts"] = {"node1", 7};
  refused(j, "$.run.hosts[1]: expected a string");
  j = to_json(sample_report());
  j["run"]["backend"] = 1;
  refused(j, "$.run.backend: expected a string");
  j = to_json(sample_report());
  j["run"] = "yesterday";
  refused(j, "$.run: expected an object");
  j = to_json(sample_report());
  j["tool"]["version"] = 0.1;
  refused(j, "$.tool.version: expected a string");
  // null means unknown (an import whose source did not say) and is kept.
  j = to_json(sample_report());
  j["run"]["world_size"] = nullptr;
  EXPECT_TRUE(report_from_json(j, "run.json").run["world_size"].is_null());
}

TEST(ReportJson, WriteIsAtomicAndReadable) {
  const auto dir = std::filesystem::temp_directory_path() / "fb_report_json_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / "r.json";
  write_report(path, sample_report());
  EXPECT_EQ(to_json(read_report(path)), to_json(sample_report()));
  for (const auto& e : std::filesystem::directory_iterator(dir))  // no temporary file left behind
    EXPECT_EQ(e.path().filename(), "r.json");
  std::filesystem::remove_all(dir);
}

// A report written from an rvalue (its events moved into the JSON), or lending its events, is the same file,
// byte for byte, as one written from a const reference.
TEST(ReportJson, WrittenFromAnRvalueItIsTheSameFile) {
  const auto dir = std::filesystem::temp_directory_path() / "fb_report_json_rvalue_test";
  std::filesystem::create_directories(dir);
  Report report = sample_report();
  for (int k = 1; k <= 3; ++k)
    report.events.push_back({{"type", "step"}, {"t", 1.5 * k}, {"step", k}, {"loss", 0.25 / k}});
  write_report(dir / "copied.json", report);
  Report moved = report;
  write_report(dir / "moved.json", std::move(moved));
  const auto text = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(text(dir / "moved.json"), text(dir / "copied.json"));
  EXPECT_EQ(read_report(dir / "moved.json").events, report.events);
  // Lent (Session::finish): the same file, and the report keeps its events, also when the write fails.
  Report lent = report;
  write_report_lending_events(dir / "lent.json", lent);
  EXPECT_EQ(text(dir / "lent.json"), text(dir / "copied.json"));
  EXPECT_EQ(lent.events, report.events);
  EXPECT_THROW(write_report_lending_events(dir / "no-such-dir" / "lent.json", lent), Error);
  EXPECT_EQ(lent.events, report.events);
  std::filesystem::remove_all(dir);
}

TEST(ReportJson, MissingAndMalformedFilesAreInputErrors) {
  try {
    read_report("/nonexistent/report.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/report.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace fb::reports
