#include "reports/import_nccl_tests.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "reports/json_cursor.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

struct Side {
  double time_us = 0, algbw = 0, busbw = 0;
  std::optional<double> wrong;  // nullopt: not checked (N/A)
};

struct Row {
  std::uint64_t bytes = 0, count = 0;
  std::string type, redop;
  long root = -1;
  std::optional<Side> out_of_place, in_place;
};

struct Device {
  int rank = 0;
  std::string host, name, bus_id;
  int index = 0;
};

struct Parsed {
  std::string op = "unknown";
  std::string version;
  std::optional<int> iters, warmup;
  std::vector<Row> rows;
  std::vector<Device> devices;
  std::optional<double> avg_busbw;
  std::optional<long> out_of_bounds;
  std::string format;
};

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

bool is_integer(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Column layout from the "# size count type redop root time algbw busbw #wrong ..." header.
struct Layout {
  std::size_t size = 0, count = 1, type = 2, redop = 3;
  std::optional<std::size_t> root;
  struct SideCols {
    std::size_t time, algbw, busbw;
    std::optional<std::size_t> wrong;
  };
  std::vector<SideCols> sides;  // out-of-place, in-place
  std::size_t columns = 0;
};

std::optional<Layout> parse_header(const std::vector<std::string>& t) {
  if (t.empty() || t[0] != "size") return std::nullopt;
  Layout l;
  l.columns = t.size();
  std::optional<Layout::SideCols> cur;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& c = t[i];
    if (c == "count")
      l.count = i;
    else if (c == "type")
      l.type = i;
    else if (c == "redop")
      l.redop = i;
    else if (c == "root")
      l.root = i;
    else if (c == "time" || c == "cputime") {
      if (cur) l.sides.push_back(*cur);
      cur = Layout::SideCols{i, 0, 0, std::nullopt};
    } else if (cur && c == "algbw")
      cur->algbw = i;
    else if (cur && c == "busbw")
      cur->busbw = i;
    else if (cur && (c == "#wrong" || c == "error"))
      cur->wrong = i;
  }
  if (cur) l.sides.push_back(*cur);
  if (l.sides.empty() || l.sides.size() > 2) return std::nullopt;
  for (const auto& s : l.sides)
    if (!s.algbw || !s.busbw) return std::nullopt;
  return l;
}

Parsed parse_text(const std::string& text, const std::string& source) {
  Parsed p;
  p.format = "nccl-tests text";
  // "#  Rank  0 Group  0 Pid  12345 on node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3" (older: no Group)
  static const std::regex kRank(
      R"(^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*?)\s*$)");
  static const std::regex kProgram(R"(^#\s*Collective test starting:\s*(\S+))");
  static const std::regex kIters(R"(warmup iters:\s*(\d+)\s+iters:\s*(\d+))");
  static const std::regex kAvg(R"(^#\s*Avg bus bandwidth\s*:\s*(\S+))");
  static const std::regex kOob(R"(^#\s*Out of bounds values\s*:\s*(\d+))");
  static const std::regex kVersion(R"(^#\s*nccl-tests version\s+(\S+))");
  std::optional<Layout> layout;
  std::istringstream in(text);
  std::string line;
  std::size_t lineno = 0;
  std::smatch m;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("#")) {
      if (std::regex_search(line, m, kRank)) {
        p.devices.push_back({std::stoi(m[1]), m[2], m[5], m[4], std::stoi(m[3])});
      } else if (std::regex_search(line, m, kProgram)) {
        p.op = nccl_tests_op_name(m[1]);
      } else if (std::regex_search(line, m, kAvg)) {
        p.avg_busbw = to_double(m[1]);
      } else if (std::regex_search(line, m, kOob)) {
        p.out_of_bounds = std::stol(m[1]);
      } else if (std::regex_search(line, m, kVersion)) {
        p.version = m[1];
      } else if (std::regex_search(line, m, kIters)) {
        p.warmup = std::stoi(m[1]);
        p.iters = std::stoi(m[2]);
      } else if (auto l = parse_header(split_ws(line.substr(1)))) {
        layout = l;
      }
      continue;
    }
    const auto t = split_ws(line);
    if (t.empty() || !is_integer(t[0])) continue;  // NCCL INFO lines, warnings, blank lines
    if (!layout)
      throw input_error(fmt::format("{}:{}: a result row before the \"# size count type ...\" header line",
                                    source, lineno));
    if (t.size() < layout->columns)
      throw input_error(fmt::format("{}:{}: {} columns where the header has {}", source, lineno, t.size(),
                                    layout->columns));
    const auto number = [&](std::size_t col, const char* what) {
      const auto v = to_double(t[col]);
      if (!v)
        throw input_error(
            fmt::format("{}:{}: column {}: expected a number, got '{}'", source, lineno, what, t[col]));
      return *v;
    };
    // size, count and root are whole numbers; anything else (1e400, -3, 2.5) is refused before the cast.
    const auto whole = [&](std::size_t col, const char* what, double lo) {
      const double v = number(col, what);
      if (!(v >= lo && v <= 9.0e18) || v != std::floor(v))
        throw input_error(
            fmt::format("{}:{}: column {}: expected a whole number, got '{}'", source, lineno, what, t[col]));
      return v;
    };
    Row row;
    row.bytes = static_cast<std::uint64_t>(whole(layout->size, "size", 0));
    row.count = static_cast<std::uint64_t>(whole(layout->count, "count", 0));
    row.type = t[layout->type];
    row.redop = t[layout->redop];
    if (layout->root) row.root = static_cast<long>(whole(*layout->root, "root", -1));
    for (std::size_t s = 0; s < layout->sides.size(); ++s) {
      const auto& c = layout->sides[s];
      Side side;
      side.time_us = number(c.time, "time");
      side.algbw = number(c.algbw, "algbw");
      side.busbw = number(c.busbw, "busbw");
      if (c.wrong && t[*c.wrong] != "N/A") side.wrong = number(*c.wrong, "#wrong");
      (s == 0 ? row.out_of_place : row.in_place) = side;
    }
    p.rows.push_back(std::move(row));
  }
  if (p.rows.empty())
    throw input_error(source +
                      ": no nccl-tests result rows found (expected the table printed by all_reduce_perf & "
                      "co., or the JSON written with -J)");
  return p;
}

// JSON values with their path, for errors that say where.
struct Node : JsonCursor<Node> {
  double number() const {
    if (j.is_number()) return j.get<double>();
    if (j.is_string() && j.get<std::string>() == "nan") return std::nan("");  // nccl-tests writes NaN so
    fail("expected a number");
  }
  std::string text() const {
    if (!j.is_string()) fail("expected a string");
    return j.get<std::string>();
  }
};

Parsed parse_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw input_error(source + ": malformed JSON at byte " + std::to_string(e.byte));
  } catch (const json::exception& e) {  // out_of_range.406: a number beyond double (1e5000)
    throw input_error(source + ": malformed JSON: " + e.what());
  }
  Parsed p;
  const Node root{{j, "$", source}};
  if (!j.is_object()) root.fail("expected an object (nccl-tests -J output)");
  p.format = "nccl-tests JSON";
  if (root.has("version")) p.format += " v" + j["version"].dump();
  if (root.has("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string())
    p.op = nccl_tests_op_name(j["args"][0].get<std::string>());
  if (root.has("config")) {
    const Node cfg = root.at("config");
    if (cfg.has("iterations")) p.iters = static_cast<int>(cfg.at("iterations").number());
    if (cfg.has("warmup_iters")) p.warmup = static_cast<int>(cfg.at("warmup_iters").number());
    if (cfg.has("devices")) {
      const Node devs = cfg.at("devices");
      if (!devs.j.is_array()) devs.fail("expected an array");
      for (std::size_t i = 0; i < devs.j.size(); ++i) {
        const Node d = devs.at(i);
        Device dev;
        dev.rank = static_cast<int>(d.at("rank").number());
        if (d.has("hostname")) dev.host = d.at("hostname").text();
        if (d.has("device")) dev.index = static_cast<int>(d.at("device").number());
        if (d.has("device_hex")) dev.bus_id = d.at("device_hex").text();
        if (d.has("device_info")) dev.name = d.at("device_info").text();
        p.devices.push_back(dev);
      }
    }
  }
  const Node results = root.at("results");
  if (!results.j.is_array()) results.fail("expected an array");
  for (std::size_t i = 0; i < results.j.size(); ++i) {
    const Node r = results.at(i);
    Row row;
    row.bytes = static_cast<std::uint64_t>(r.at("size").number());
    row.count = r.has("count") ? static_cast<std::uint64_t>(r.at("count").number()) : 0;
    row.type = r.at("type").text();
    row.redop = r.has("redop") ? r.at("redop").text() : "none";
    if (r.has("root")) {
      const Node rt = r.at("root");  // written as a padded string ("    -1") by nccl-tests
      const auto v = rt.j.is_string() ? to_double(split_ws(rt.j.get<std::string>()).empty()
                                                      ? std::string()
                                                      : split_ws(rt.j.get<std::string>())[0])
                                      : std::optional<double>(rt.number());
      if (!v) rt.fail("expected an integer");
      row.root = static_cast<long>(*v);
    }
    for (const char* key : {"out_of_place", "in_place"}) {
      if (!r.has(key)) continue;
      const Node s = r.at(key);
      Side side;
      side.time_us = (s.has("time") ? s.at("time") : s.at("cpu_time")).number();
      side.algbw = s.at("alg_bw").number();
      side.busbw = s.at("bus_bw").number();
      if (s.has("nwrong")) side.wrong = s.at("nwrong").number();
      (std::string(key) == "out_of_place" ? row.out_of_place : row.in_place) = side;
    }
    p.rows.push_back(std::move(row));
  }
  if (root.has("average_bus_bandwidth")) {
    const Node avg = root.at("average_bus_bandwidth");
    if (avg.has("bandwidth")) p.avg_busbw = avg.at("bandwidth").number();
  }
  if (root.has("out_of_bounds") && root.at("out_of_bounds").has("count"))
    p.out_of_bounds = static_cast<long>(root.at("out_of_bounds").at("count").number());
  if (p.rows.empty()) results.fail("no result rows");
  return p;
}

}  // namespace

std::string nccl_tests_op_name(const std::string& program) {
  std::string base =
      program.substr(program.find_last_of('/') == std::string::npos ? 0 : program.find_last_of('/') + 1);
  if (base.ends_with("_perf")) base.resize(base.size() - 5);
  std::string out;
  for (const char ch : base)
    if (ch != '_') out += ch;
  return out.empty() ? "unknown" : out;
}

std::string nccl_tests_dtype_name(const std::string& type) {
  static const std::pair<const char*, const char*> kMap[] = {
      {"float", "fp32"},      {"half", "fp16"},       {"bfloat16", "bf16"}, {"double", "fp64"},
      {"f8e4m3", "fp8_e4m3"}, {"f8e5m2", "fp8_e5m2"}, {"int", "int32"},     {"char", "int8"}};
  for (const auto& [from, to] : kMap)
    if (type == from) return to;
  return type;
}

Report import_nccl_tests(const std::string& text, const std::string& source) {
  const auto first = text.find_first_not_of(" \t\r\n");
  const Parsed p =
      first != std::string::npos && text[first] == '{' ? parse_json(text, source) : parse_text(text, source);

  Report rep;
  int world = static_cast<int>(p.devices.size());
  if (world == 0) world = 1;
  json hosts = json::array();
  json ranks = json::array();
  std::unordered_set<std::string> seen_hosts;
  for (const auto& d : p.devices) {
    if (seen_hosts.insert(d.host).second) hosts.push_back(d.host);
    json dev{{"kind", "gpu"}, {"name", d.name}, {"index", d.index}};
    if (!d.bus_id.empty()) dev["pci_bus_id"] = d.bus_id;
    ranks.push_back({{"rank", d.rank}, {"host", d.host}, {"device", dev}});
  }
  rep.run = {{"world_size", world}, {"hosts", hosts}, {"backend", "cuda"}};
  rep.system = json::object();
  if (!ranks.empty()) rep.system["ranks"] = ranks;
  rep.summary = {
      {"import", {{"source", source}, {"format", p.format}, {"op", p.op}, {"rows", p.rows.size()}}}};
  if (!p.version.empty()) rep.summary["import"]["nccl_tests_version"] = p.version;
  if (p.out_of_bounds) rep.summary["import"]["out_of_bounds"] = *p.out_of_bounds;

  std::unordered_set<std::string> names;
  for (const auto& row : p.rows) {
    const std::string dtype = nccl_tests_dtype_name(row.type);
    for (const bool inplace : {false, true}) {
      const auto& side = inplace ? row.in_place : row.out_of_place;
      if (!side) continue;
      Result r;
      r.benchmark = "collective";
      r.name = fmt::format("{}/{}/{}{}", p.op, dtype, row.bytes, inplace ? "/inplace" : "");
      if (!names.insert(r.name).second) continue;  // a repeated size (nccl-tests -R): the first run counts
      r.params = {{"op", p.op},           {"dtype", dtype},   {"bytes", row.bytes},
                  {"count", row.count},   {"ranks", world},   {"inplace", inplace},
                  {"redop", row.redop},   {"root", row.root}, {"source", "nccl-tests"},
                  {"nccl_type", row.type}};
      if (p.iters) r.params["iters"] = *p.iters;
      if (p.warmup) r.params["warmup"] = *p.warmup;
      r.set_metric("time_us", {side->time_us, "us", Better::lower, std::nullopt});
      r.set_metric("algbw_gbps", {side->algbw, "GB/s", Better::higher, std::nullopt});
      r.set_metric("busbw_gbps", {side->busbw, "GB/s", Better::higher, std::nullopt});
      if (side->wrong) {
        r.set_metric("wrong", {*side->wrong, "count", Better::lower, std::nullopt});
        if (*side->wrong > 0) r.fail(fmt::format("nccl-tests reported {} wrong elements", *side->wrong));
      }
      rep.results.push_back(std::move(r));
    }
  }
  if (p.avg_busbw) {
    Result r;
    r.benchmark = "collective";
    r.name = "avg_busbw";
    r.params = {{"op", p.op},
                {"ranks", world},
                {"source", "nccl-tests"},
                {"definition", "nccl-tests' \"Avg bus bandwidth\": mean busbw over the sizes run"}};
    r.set_metric("busbw_gbps", {*p.avg_busbw, "GB/s", Better::higher, std::nullopt});
    rep.results.push_back(std::move(r));
  }
  return rep;
}

}  // namespace fb::reports
