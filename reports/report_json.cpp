#include "reports/report_json.hpp"

#include <algorithm>
#include "core/json_file.hpp"

#include <cmath>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "reports/json_cursor.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

// JSON has no NaN or infinity: a non-finite figure is written as null.
json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json stats_json(const SampleStats& s) {
  return json{{"min", number(s.min)},
              {"median", number(s.median)},
              {"max", number(s.max)},
              {"mean", number(s.mean)},
              {"p99", number(s.p99)},
              {"stddev", number(s.stddev)},
              {"n", s.n}};
}

json result_json(const Result& r) {
  json metrics = json::object();
  for (const auto& [name, m] : r.metrics) {
    json mj{{"value", number(m.value)}, {"unit", m.unit}, {"better", to_string(m.better)}};
    if (m.stats) mj["stats"] = stats_json(*m.stats);
    metrics[name] = std::move(mj);
  }
  json per_rank = json::object();
  for (const auto& [name, values] : r.per_rank) {
    json arr = json::array();
    for (double v : values) arr.push_back(number(v));
    per_rank[name] = std::move(arr);
  }
  json j{{"benchmark", r.benchmark},
         {"name", r.name},
         {"params", r.params},
         {"metrics", metrics},
         {"per_rank", per_rank},
         {"status", to_string(r.status)},
         {"error", r.error ? json(*r.error) : json(nullptr)}};
  if (!r.extra.empty()) j["extra"] = r.extra;
  return j;
}

// Reading: a cursor that knows its JSON path so every error names where it happened.
struct Cursor : JsonCursor<Cursor> {};

SampleStats read_stats(const Cursor& c, bool closed) {
  c.object();
  // "stdev" for "stddev" would silently swap compare's noise band for the range-based one.
  if (closed) c.known_fields({"min", "median", "max", "mean", "p99", "stddev", "n"});
  SampleStats s;
  s.min = c.at("min").num();
  s.median = c.at("median").num();
  s.max = c.at("max").num();
  if (c.j.contains("mean")) s.mean = c.at("mean").num();
  if (c.j.contains("p99")) s.p99 = c.at("p99").num();
  if (c.j.contains("stddev")) s.stddev = c.at("stddev").num();
  const Cursor n = c.at("n");
  if (!n.j.is_number_unsigned() && !(n.j.is_number_integer() && n.j.get<std::int64_t>() >= 0))
    n.fail("expected a non-negative integer");
  s.n = n.j.get<std::size_t>();
  // Compare's noise band is built from the spread: a negative deviation or an inverted range would widen
  // it (squared) until a regression reads as noise.
  if (std::isfinite(s.stddev) && s.stddev < 0) c.at("stddev").fail("a standard deviation cannot be negative");
  if (std::isfinite(s.min) && std::isfinite(s.max) && s.min > s.max)
    c.at("min").fail("greater than max " + std::to_string(s.max));
  if (std::isfinite(s.median) && std::isfinite(s.min) && std::isfinite(s.max) &&
      !(s.min <= s.median && s.median <= s.max))
    c.at("median").fail("outside [min, max]");
  return s;
}

Result read_result(const Cursor& c, bool closed) {
  c.object();
  if (closed)
    c.known_fields({"benchmark", "name", "params", "metrics", "per_rank", "status", "error", "extra"});
  Result r;
  r.benchmark = c.at("benchmark").str();
  r.name = c.at("name").str();
  // As the schema has them: results are matched and printed by these names.
  if (r.benchmark.empty()) c.at("benchmark").fail("must not be empty");
  if (r.name.empty()) c.at("name").fail("must not be empty");
  // Both head lines of every rendering and error message: a newline in one would split them.
  for (const auto& [key, text] :
       {std::pair<const char*, const std::string&>{"benchmark", r.benchmark}, {"name", r.name}})
    if (has_control_character(text))
      c.at(key).fail(nlohmann::json(text).dump() + ": must not contain control characters");
  if (c.j.contains("params")) r.params = c.at("params").object();
  const Cursor metrics = c.at("metrics");
  for (const auto& [name, value] : metrics.object().items()) {
    const Cursor m = c.child(value, metrics.path + "." + name);
    // Metric names are identifiers (schema: ^[a-z][a-z0-9_]*$): Prometheus, JUnit and Markdown use them.
    const bool identifier = !name.empty() && name[0] >= 'a' && name[0] <= 'z' &&
                            std::all_of(name.begin(), name.end(), [](char ch) {
                              return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
                            });
    if (!identifier) m.fail("a metric name is lower-case letters, digits and '_', starting with a letter");
    // compare's row for the result's own status (ok, failed, skipped) is named so: a metric of that name
    // would be matched against it.
    if (name == "status") m.fail("'status' is reserved for the result's status, not a metric name");
    m.object();
    if (closed) m.known_fields({"value", "unit", "better", "stats"});
    Metric metric;
    metric.value = m.at("value").num();
    metric.unit = m.at("unit").str();
    try {
      metric.better = parse_better(m.at("better").str());
    } catch (const Error& e) {
      m.at("better").fail(e.what());
    }
    if (m.j.contains("stats")) metric.stats = read_stats(m.at("stats"), closed);
    r.metrics.emplace_back(name, std::move(metric));
  }
  if (c.j.contains("per_rank")) {
    const Cursor pr = c.at("per_rank");
    for (const auto& [name, arr] : pr.object().items()) {
      const Cursor a = c.child(arr, pr.path + "." + name);
      std::vector<double> values;
      for (std::size_t i = 0; i < a.array().size(); ++i) values.push_back(a.at(i).num());
      r.per_rank.emplace_back(name, std::move(values));
    }
  }
  try {
    r.status = parse_status(c.at("status").str());
  } catch (const Error& e) {
    if (std::string(e.what()).find(c.source) == 0) throw;
    c.at("status").fail(e.what());
  }
  if (c.j.contains("error") && !c.j.at("error").is_null()) r.error = c.at("error").str();
  if (c.j.contains("extra")) r.extra = c.at("extra").object();
  return r;
}

// The run and tool fields that compare and the renderings read: a wrong type there would be taken for
// "unknown" and silently skip a check (a world size of "eight" never warns about a size mismatch).
// `v1`: the values report-v1.json allows for what compare's warnings read (backend, world size, tool name);
// a later version may have widened them.
void check_run_fields(const Cursor& root, bool v1) {
  if (root.has("run")) {
    const Cursor run = root.at("run");
    run.object();
    for (const char* key : {"id", "command", "backend", "started_at", "finished_at"})
      if (run.has(key)) run.at(key).str();
    if (v1 && run.has("backend")) {
      const auto backend = run.at("backend").str();
      if (backend != "cuda" && backend != "host" && backend != "none" && backend != "mixed")
        run.at("backend").fail("\"" + backend + "\" is not a backend (cuda, host, none or mixed)");
    }
    if (run.has("world_size") && !run.at("world_size").j.is_null()) {
      const Cursor ws = run.at("world_size");
      if (!ws.j.is_number_integer() || ws.j.get<long long>() < 1)
        ws.fail("expected a positive integer or null");
    }
    if (run.has("hosts")) {
      const Cursor hosts = run.at("hosts");
      for (std::size_t i = 0; i < hosts.array().size(); ++i) hosts.at(i).str();
    }
  }
  if (root.has("tool")) {
    const Cursor tool = root.at("tool");
    tool.object();
    if (tool.has("version")) tool.at("version").str();
    if (tool.has("name") && tool.at("name").str() != "factorybench")
      tool.at("name").fail("\"" + tool.at("name").str() + "\": not a factorybench report");
  }
}

}  // namespace

nlohmann::json to_json(const Report& report) {
  json results = json::array();
  for (const auto& r : report.results) results.push_back(result_json(r));
  return json{{"schema", report.schema},  {"tool", report.tool}, {"run", report.run},
              {"system", report.system},  {"results", results},  {"events", report.events},
              {"summary", report.summary}};
}

Report report_from_json(const nlohmann::json& j, const std::string& source) {
  const Cursor root{{j, "$", source}};
  root.object();
  Report report;
  report.schema = root.at("schema").str();
  if (report.schema.rfind("factorybench.report/", 0) != 0)
    root.at("schema").fail("not a factorybench report (schema \"" + report.schema + "\")");
  // v1 closes the report, result and metric objects (reports/schema/report-v1.json); a report of a later
  // version may carry fields this reader does not know, and compare warns about the version instead. Any
  // other version string (v0, "", v1.1) would turn the closed-field check off silently: refused.
  const std::string version = report.schema.substr(std::string_view("factorybench.report/v").size() - 1);
  const bool numbered = version.size() >= 2 && version[0] == 'v' && version[1] != '0' &&
                        version.size() <= 10 &&
                        version.find_first_not_of("0123456789", 1) == std::string::npos;
  if (!numbered)
    root.at("schema").fail("unknown report schema version \"" + report.schema + "\" (this build reads " +
                           std::string(kSchemaV1) + " and later versions)");
  const bool closed = report.schema == kSchemaV1;
  if (closed) root.known_fields({"schema", "tool", "run", "system", "results", "events", "summary"});
  check_run_fields(root, closed);
  if (j.contains("tool")) report.tool = root.at("tool").object();
  if (j.contains("run")) report.run = root.at("run").object();
  if (j.contains("system")) report.system = root.at("system").object();
  const Cursor results = root.at("results");
  for (std::size_t i = 0; i < results.array().size(); ++i)
    report.results.push_back(read_result(results.at(i), closed));
  if (j.contains("events")) report.events = root.at("events").array();
  if (j.contains("summary")) report.summary = root.at("summary").object();
  return report;
}

void write_report(const std::filesystem::path& path, const Report& report) {
  write_file_atomic(path, to_json(report).dump(2) + "\n");
}

void write_report(const std::filesystem::path& path, Report&& report) {
  // The events moved, not copied, into the JSON: a resilience report so far holds one per step, and a copy
  // of 100000 of them was a transient 100 MB in the supervisor at each save.
  write_report_lending_events(path, report);
}

void write_report_lending_events(const std::filesystem::path& path, Report& report) {
  json events = std::move(report.events);
  report.events = json::array();
  json j;
  try {
    j = to_json(report);  // without the events: the lent ones go in after
  } catch (...) {
    report.events = std::move(events);
    throw;
  }
  j["events"] = std::move(events);
  try {
    write_file_atomic(path, j.dump(2) + "\n");
  } catch (...) {
    report.events = std::move(j["events"]);
    throw;
  }
  report.events = std::move(j["events"]);
}

Report read_report(const std::filesystem::path& path) {
  return report_from_json(read_json_file(path), path.string());
}

}  // namespace fb::reports
