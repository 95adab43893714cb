#include "reports/import_nccl_tests.hpp"
#include "core/json_file.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "reports/json_cursor.hpp"
#include "reports/nccl_tests_consistency.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

// The programs nccl-tests builds (src/*.cu), by the name factorybench gives the collective.
constexpr std::array<const char*, 11> kKnownOps{"allreduce", "allgather", "reducescatter", "alltoall",
                                                "alltoallv", "broadcast", "reduce",        "sendrecv",
                                                "scatter",   "gather",    "hypercube"};

struct Side {
  double time_us = 0, algbw = 0, busbw = 0;
  // Half the last printed digit of each (nccl_tests_consistency): the text's, or for JSON the table's.
  double time_half = 0, algbw_half = 0, busbw_half = 0;
  bool cpu_time = false;            // "cputime" (-C 1): not the time the bandwidths come from
  std::optional<double> wrong;      // "#wrong": elements that differ (nullopt: not checked, N/A)
  std::optional<double> max_error;  // "error" (older nccl-tests): the largest deviation
  // -I 1 (per-iteration CUDA events): the fastest, slowest and 99th-percentile iteration, and their
  // coefficient of variation in percent. Text: i_min i_max i_p99 i_cv%; JSON: *_per_iter.
  std::optional<double> iter_min_us, iter_max_us, iter_p99_us, iter_cv_pct;
};

struct Row {
  std::uint64_t bytes = 0, count = 0;
  bool count_given = true;  // a hand-made JSON may leave "count" out
  std::string type, redop = "none";
  long root = -1;
  std::optional<Side> out_of_place, in_place;
  // factorybench's console: a placement it printed as "skipped" (MoE in place), [0] out of place, [1] in
  // place.
  std::array<bool, 2> skipped{};
  std::size_t line = 0;   // 0 for JSON
  std::size_t index = 0;  // JSON: results[index]
};

struct Device {
  std::string host, name, bus_id;
  int index = 0;
};

// The ranks a device list names ("# Rank N Group G ..." lines, or the JSON's config.devices), and from them
// the sizes that matter. nccl-tests lists every rank of the run with its NCCL_TESTS_SPLIT group, but the
// figures come from rank 0's communicator, its group (src/common.cu: ncclProcs is the split communicator's
// size). Its JSON lists one entry per process, each standing for nthreads x ngpus ranks (util.cu
// parseRankInfo reads a process's first line), and the text cuts a process's lines at 2048 bytes ("...").
struct RankList {
  std::map<int, int> group;  // rank → group
  int per_entry = 1;
  bool cut = false;
  std::optional<int> world() const {
    if (group.empty() || cut) return std::nullopt;
    return ranks(group.size());
  }
  std::optional<int> communicator() const {
    if (group.empty() || cut) return std::nullopt;
    const int first = group.begin()->second;
    std::size_t n = 0;
    for (const auto& [rank, g] : group) n += g == first ? 1 : 0;
    return ranks(n);
  }
  // entries x per_entry; beyond 2^31 - 1 ranks a file is garbled, and the count unknown.
  std::optional<int> ranks(std::size_t entries) const {
    const double n = static_cast<double>(entries) * per_entry;
    return n <= 2147483647.0 ? std::optional<int>(static_cast<int>(n)) : std::nullopt;
  }
};

// One table: one run of one nccl-tests program.
struct Test {
  std::string op;       // factorybench name, or empty until known
  std::string op_from;  // where the op came from, for the summary
  std::size_t line = 0;
  std::optional<int> iters, warmup;
  std::vector<Row> rows;
  std::optional<double> avg_busbw;
  double avg_half = 0;
  std::size_t avg_line = 0;
  std::string avg_key = "average_bus_bandwidth";  // JSON
  std::optional<int> listed_ranks;  // the communicator size the "# Rank" lines above this table name
  std::optional<long> out_of_bounds;
  bool rooted = false;     // a root column
  bool op_stated = false;  // the op came from the file's own "Collective test starting" or JSON args
  // nccl-tests stopped in this table: "FILE:LINE: <its failure line>" ("Test NCCL failure ...").
  std::optional<std::string> aborted;
  std::string shape_op;     // --op named a collective its shape contradicts: the shape's (kept, and warned)
  bool unfinished = false;  // no closing "Avg bus bandwidth" line: the run did not finish, or the file is cut
  // factorybench's console: its section line above the table ("# allreduce: 4 rank(s), fp32 (group 0:
  // ranks 0-3)", "# MoE dispatch (alltoallv): ..."), which names the op (listed_ranks: its N).
  std::string name_op;                               // the results' names: op, or moe_dispatch
  std::string section_type;                          // the section's dtype, as an nccl-tests type
  std::optional<int> group;                          // --split
  nlohmann::json params = nlohmann::json::object();  // more params, as collective reports them
  std::optional<double> busiest_share;               // MoE: "busiest rank R moves X% of the traffic"
  std::size_t run = 0;                               // Parsed::runs
};

// factorybench's console: its first line ("# factorybench collective: 4 rank(s), mpi engine, ...") and
// its one footer for all the tables below it (`--op all` prints one table per op).
struct FbAverage {
  std::optional<int> group;  // "# Avg bus bandwidth (group 1) : ..." under --split
  PrintedFigure value;
  std::size_t line = 0;
  std::optional<PrintedFigure> min_busbw;  // "(--min-busbw 0.500: FAILED)"
  bool failed = false;
};
struct FbRun {
  std::size_t line = 0;
  int world = 0, iters = 0, warmup = 0;
  std::optional<int> average;         // -a
  std::string engine;                 // mpi, nccl
  std::optional<double> wrong_total;  // "# Wrong elements : N OK|FAILED"
  bool wrong_failed = false;
  std::size_t wrong_line = 0;
  std::vector<FbAverage> averages;
  std::optional<std::string> interrupted;  // "FILE:LINE" of "stopped by a signal after the sizes above"
  std::vector<std::string> hang;           // the watchdog's "hang: ..." lines
};

// The newest -J format version this reader was written against (nccl-tests 2.19 writes 3).
constexpr std::int64_t kKnownJsonVersion = 3;

struct Parsed {
  std::string source, format, tests_version, nccl_version;
  bool newer_format = false;  // a -J version past kKnownJsonVersion
  std::vector<Test> tests;
  std::map<int, Device> devices;  // by rank (JSON: each process's first rank)
  RankList ranks;                 // every rank listed
  std::optional<int> nranks;      // from NCCL INFO "comm ... nranks N": a communicator's size
  int threads = 1;                // "# nThread N": threads per process
  std::vector<FbRun> runs;        // factorybench's console (one per first line), else empty
  bool factorybench() const { return !runs.empty(); }
  // All ranks of the run, and those of the communicator the figures come from (they differ under
  // NCCL_TESTS_SPLIT). Without a whole device list: NCCL INFO's count, else unknown.
  std::optional<int> world() const {
    if (factorybench()) {
      for (const auto& r : runs)
        if (r.world != runs[0].world) return std::nullopt;
      return runs[0].world;
    }
    return ranks.world() ? ranks.world() : nranks;
  }
  std::optional<int> communicator() const { return ranks.communicator() ? ranks.communicator() : nranks; }
};

// Bounds for the integers read from a file, so that converting them is defined: 2^53 bytes (8 PiB, more
// than any buffer nccl-tests allocates, and exact in a double) and 2^31 ranks.
constexpr double kMaxCount = 9007199254740992.0;
constexpr double kMaxRank = 2147483647.0;

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<double> to_double(std::string s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// Text taken from a file into the report (hosts, device names, types): nccl-tests prints ASCII, and the
// report must stay valid UTF-8 JSON whatever the file holds, so other bytes become '?'.
std::string ascii(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return s;
}

bool is_integer(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Inside a table, a line that starts like a number ("-8", "4096.5", "10737x1824") is a garbled row, refused,
// not a log line to skip; a log line's first word names a host or a tag ("node01:123:123", "NCCL").
bool looks_like_a_row(const std::string& word) {
  const std::size_t digit = word[0] == '-' || word[0] == '+' ? 1 : 0;
  return digit < word.size() && std::isdigit(static_cast<unsigned char>(word[digit])) &&
         word.find(':') == std::string::npos;
}

// Bytes per element of nccl-tests' type names (src/common.cu test_typenames); 0 for names it does not use.
std::size_t element_bytes(const std::string& type) {
  if (type == "int8" || type == "uint8" || type == "char" || type == "f8e4m3" || type == "f8e5m2") return 1;
  if (type == "half" || type == "bfloat16") return 2;
  if (type == "float" || type == "int32" || type == "uint32" || type == "int") return 4;
  if (type == "double" || type == "int64" || type == "uint64") return 8;
  return 0;
}

// nccl-tests' reduction names (src/common.cu test_opnames) and "none", printed by the collectives that
// do not reduce. Anything else in the column is a garbled row or another tool's table.
bool known_redop(const std::string& redop) {
  for (const char* name : {"none", "sum", "prod", "max", "min", "avg", "mulsum"})
    if (redop == name) return true;
  return false;
}

constexpr const char* kTypeNames =
    "int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, "
    "f8e4m3, f8e5m2";
constexpr const char* kRedopNames = "sum, prod, max, min, avg, mulsum or none";

// Older nccl-tests (2.10.0 still does; 2.13 prints "#wrong") printed the largest deviation from the
// expected result in its "error" column and counted a test out of bounds when it exceeded
// DeltaMaxValue(type) (src/common.cu): 1e-5 float, 1e-12 double, 1e-2 bfloat16, 1e-200 (exact) for the
// integer types, and for half 1e-2 in some versions and 5e-2 in others; the looser bound is used so that
// a run its own version passed is not failed here.
std::optional<double> max_error_tolerance(const std::string& type) {
  if (type == "half") return 5e-2;
  if (type == "bfloat16") return 1e-2;
  if (type == "float") return 1e-5;
  if (type == "double") return 1e-12;
  if (element_bytes(type) != 0 && type != "f8e4m3" && type != "f8e5m2") return 1e-200;
  return std::nullopt;
}

// factorybench's dtype names (`collective -d`) as the nccl-tests types they are, the inverse of
// nccl_tests_dtype_name; empty for any other name.
std::string type_of_factorybench_dtype(const std::string& dtype) {
  for (const char* type : {"float", "half", "bfloat16", "double", "f8e4m3", "f8e5m2", "int32", "int8"})
    if (nccl_tests_dtype_name(type) == dtype) return type;
  return "";
}
constexpr const char* kFbDtypeNames = "fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, fp64, int32, int8";

// A count the console printed with %d: at most 9 digits, so that it fits an int.
std::optional<int> small_int(const std::string& digits) {
  if (digits.empty() || digits.size() > 9 || !is_integer(digits)) return std::nullopt;
  return std::stoi(digits);
}

// NCCL_VERSION_CODE: major·10000 + minor·100 + patch from 2.9, major·1000 + minor·100 + patch before.
std::string nccl_version_from_code(long code) {
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

// `mpirun --tag-output` writes "[1,0]<stdout>:" (or "[1,mpirank:0,host]<stdout>:") before each line and
// `srun --label` writes " 0: ". Returns false for a line a rank wrote to stderr: no table is there.
bool strip_launcher_prefix(std::string& line) {
  if (!line.empty() && line[0] == '[') {
    const auto close = line.find("]<", 1);
    if (close != std::string::npos && close < 128) {
      for (const char* stream : {"stdout>:", "stderr>:"}) {
        if (line.compare(close + 2, 8, stream) != 0) continue;
        if (stream[3] == 'e') return false;
        line.erase(0, close + 10);
        return true;
      }
    }
  }
  std::size_t i = line.find_first_not_of(' ');
  const std::size_t digits = i == std::string::npos ? 0 : line.find_first_not_of("0123456789", i);
  if (i != std::string::npos && digits != std::string::npos && digits > i && line[digits] == ':' &&
      (digits + 1 == line.size() || line[digits + 1] == ' ')) {
    line.erase(0, std::min(line.size(), digits + 2));
  }
  return true;
}

// Column layout from the "# size count type redop root time algbw busbw #wrong ..." header.
struct Layout {
  std::size_t count = 1, type = 2;
  std::optional<std::size_t> redop, root;
  struct SideCols {
    std::size_t time = 0, algbw = 0, busbw = 0;
    std::optional<std::size_t> check;
    bool max_error = false;  // "error" (a deviation), not "#wrong" (a count)
    bool cpu_time = false;   // "cputime"
    std::optional<std::size_t> iter_min, iter_max, iter_p99, iter_cv;
  };
  std::vector<SideCols> sides;  // out-of-place, in-place
  std::size_t columns = 0;      // words in a row: a "timestamp" (-S 1) is two, date and time
  double us_per_time_unit = 1;  // the first nccl-tests (2017: "bytes N type op ... res") printed ms
};

std::optional<Layout> parse_header(const std::vector<std::string>& t) {
  if (t.empty() || (t[0] != "size" && t[0] != "bytes")) return std::nullopt;
  Layout l;
  if (t[0] == "bytes") l.us_per_time_unit = 1000;
  l.columns = t.size();
  std::optional<Layout::SideCols> cur;
  for (std::size_t i = 1; i < t.size(); ++i) {
    const std::string& c = t[i];
    if (c == "count" || c == "N")
      l.count = i;
    else if (c == "type")
      l.type = i;
    else if (c == "redop" || c == "op")
      l.redop = i;
    else if (c == "root")
      l.root = i;
    else if (c == "time" || c == "cputime") {
      if (cur) l.sides.push_back(*cur);
      cur = Layout::SideCols{};
      cur->time = i;
      cur->cpu_time = c == "cputime";
    } else if (cur && c == "algbw")
      cur->algbw = i;
    else if (cur && c == "busbw")
      cur->busbw = i;
    else if (cur && (c == "#wrong" || c == "wrong"))
      cur->check = i;
    else if (cur && (c == "error" || c == "res")) {
      cur->check = i;
      cur->max_error = true;
    } else if (cur && c == "i_min")
      cur->iter_min = i;
    else if (cur && c == "i_max")
      cur->iter_max = i;
    else if (cur && c == "i_p99")
      cur->iter_p99 = i;
    else if (cur && c == "i_cv%")
      cur->iter_cv = i;
    else if (c == "timestamp" && i + 1 == t.size())
      ++l.columns;  // "%Y-%m-%d %H:%M:%S"
  }
  if (cur) l.sides.push_back(*cur);
  if (l.sides.empty() || l.sides.size() > 2) return std::nullopt;
  for (const auto& s : l.sides)
    if (!s.algbw || !s.busbw) return std::nullopt;
  return l;
}

// A program name in the output ("./build/all_gather_perf -b 8 ...", "Running: ... reduce_perf"), the op
// of the next table when nccl-tests itself did not print "Collective test starting" (before 2.13).
std::optional<std::string> program_mention(const std::string& line) {
  std::size_t at = line.find("_perf");
  while (at != std::string::npos) {
    std::size_t begin = at;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(line[begin - 1])) || line[begin - 1] == '_'))
      --begin;
    std::size_t end = at + 5;
    if (line.compare(end, 4, "_mpi") == 0) end += 4;
    if (line.compare(end, 4, ".exe") == 0) end += 4;  // a Windows build
    const bool word_end = end == line.size() || !(std::isalnum(static_cast<unsigned char>(line[end])) ||
                                                  line[end] == '_' || line[end] == '.');
    if (begin < at && word_end) return line.substr(begin, end - begin);
    at = line.find("_perf", at + 5);
  }
  return std::nullopt;
}

Parsed parse_text(const std::string& text, const std::string& source) {
  Parsed p;
  p.source = source;
  p.format = "nccl-tests text";
  // "#  Rank  0 Group  0 Pid  12345 on node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3" (older: no Group)
  static const std::regex kRank(
      R"(^#?\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*\S))");
  static const std::regex kThreads(R"(^#\s*nThread\s+(\d+)\s)");
  static const std::regex kProgram(R"(Collective test starting:\s*(\S+))");
  static const std::regex kIters(R"(warmup iters:\s*(\d+)\s+iters:\s*(\d+))");
  static const std::regex kAvg(R"(^#?\s*Avg bus bandwidth\s*:\s*(\S+))");
  static const std::regex kOob(R"(^#?\s*Out of bounds values\s*:\s*(\d+))");
  static const std::regex kVersion(R"(^#\s*nccl-tests version\s+(\S+))");
  static const std::regex kLibrary(R"(nccl-library=(\d+))");
  static const std::regex kNcclVersion(R"(NCCL version (\d+\.\d+\.\d+))");
  static const std::regex kNranks(R"(NCCL INFO comm 0x[0-9a-f]+ rank \d+ nranks (\d+))");
  std::optional<Layout> layout;
  bool open = false;  // between a header and the table's end ("Out of bounds", "Avg bus bandwidth")
  std::optional<std::string> program;  // the latest program named before the next table
  std::string program_from;
  bool program_stated = false;  // named by nccl-tests' own "Collective test starting" line
  std::optional<int> iters, warmup;
  RankList listed;  // the "# Rank" lines since the previous table
  std::istringstream in(text);
  std::string line;
  std::size_t lineno = 0;
  std::smatch m;
  const auto current = [&]() -> Test* { return p.tests.empty() ? nullptr : &p.tests.back(); };
  // nccl-tests prints a row's size, count, type, redop and root before it runs that size: a failure there
  // leaves that half row, followed by the failure line (on the same line or a later one), and a file cut
  // mid-row ends in one. Anything else after a short row is a garbled table.
  struct ShortRow {
    std::size_t line, columns;
  };
  std::optional<ShortRow> short_row;
  const auto refuse_short_row = [&] {
    if (short_row)
      throw input_error(fmt::format("{}:{}: {} columns where the header has {}", source, short_row->line,
                                    short_row->columns, layout->columns));
  };
  const auto is_failure_line = [](const std::string& l) {
    return l.find("Test NCCL failure") != std::string::npos ||
           l.find("Test CUDA failure") != std::string::npos || l.find(": Test failure") != std::string::npos;
  };
  // factorybench's console (reports/collective_console.cpp): its first line, a section line above each
  // table (the op, N and dtype of the table; nccl-tests has no such line), and one footer for all tables.
  static const std::regex kFbFirst(
      R"(^#\s*factorybench collective:\s*(\d+) rank\(s\), (\w+) engine, (\d+) iters after (\d+) warm-up\b(?:.*ranks combined by -a (\d+))?)");
  static const std::regex kFbSection(R"(^#\s*(\w+): (\d+) rank\(s\), (\w+)(.*)$)");
  static const std::regex kFbMoe(
      R"(^#\s*MoE (dispatch|combine) \(alltoallv\): (\d+) rank\(s\), (\w+), (\d+) tokens/rank, hidden (\d+), (\d+) experts, top-(\d+), skew (\S+); busiest rank (\d+) moves (\S+)% of the traffic(.*)$)");
  static const std::regex kFbGroup(R"(^ \(group (\d+): ranks (\d+)-(\d+)\)$)");
  static const std::regex kFbWrong(R"(^#\s*Wrong elements\s*:\s*(\S+)\s+(OK|FAILED)\s*$)");
  static const std::regex kFbAvg(
      R"(^#\s*Avg bus bandwidth(?: \(group (\d+)\))?\s*:\s*(\S+)(?:\s+\(--min-busbw (\S+): (OK|FAILED)\))?\s*$)");
  static const std::regex kFbStopped(R"(^#\s*factorybench collective: stopped by a signal)");
  std::optional<Test> section;  // the section line read, for the table header below it
  const auto garbled = [&](const std::string& what) {
    return input_error(fmt::format("{}:{}: {}", source, lineno, what));
  };
  const auto bandwidth = [&](const std::string& cell, const char* what) {
    const auto v = to_double(cell);
    if (!v || !std::isfinite(*v) || *v < 0)
      throw garbled(fmt::format("{} '{}' is not a bandwidth", what, ascii(cell)));
    return PrintedFigure{*v, printed_half_unit(cell)};
  };
  // One of the console's own lines (after its first line): true when read.
  const auto factorybench_line = [&]() -> bool {
    FbRun& run = p.runs.back();
    const auto count = [&](std::size_t i, const char* what) {
      const auto v = small_int(m[i].str());
      if (!v) throw garbled(fmt::format("{} '{}' is not a plausible {}", what, ascii(m[i].str()), what));
      return *v;
    };
    // What every kind of section sets: the op, N, the dtype and the --split group.
    const auto begin_section = [&](Test t, int ranks, const std::string& dtype, const std::string& rest) {
      refuse_short_row();
      t.section_type = type_of_factorybench_dtype(dtype);
      if (t.section_type.empty())
        throw garbled(
            fmt::format("section line: '{}' is not a factorybench dtype ({})", ascii(dtype), kFbDtypeNames));
      t.listed_ranks = ranks;
      t.op_stated = true;
      t.op_from = "factorybench's section line";
      t.run = p.runs.size() - 1;
      t.iters = run.iters;
      t.warmup = run.warmup;
      if (run.average) t.params["average"] = *run.average;
      std::smatch g;
      if (!rest.empty()) {
        if (!std::regex_match(rest, g, kFbGroup))
          throw garbled(
              fmt::format("'{}' after the section line's dtype is not a --split group", ascii(rest)));
        const auto group = small_int(g[1]), first = small_int(g[2]), last = small_int(g[3]);
        if (!group || !first || !last || *last < *first || *last - *first + 1 != ranks)
          throw garbled(fmt::format("group '{}' does not hold {} rank(s)", ascii(rest.substr(1)), ranks));
        t.group = *group;
        t.params["group"] = *group;
        t.params["first_rank"] = *first;
        t.params["split"] = ranks;
      }
      section = std::move(t);
      open = false;
    };
    if (std::regex_search(line, m, kFbMoe)) {
      Test t;
      t.op = "alltoallv";
      t.name_op = "moe_" + m[1].str();
      const auto skew = to_double(m[8].str());
      const auto share = to_double(m[10].str());
      if (!skew || !std::isfinite(*skew) || !share || !(*share >= 0 && *share <= 100))
        throw garbled("a MoE section line whose skew or busiest share is not a number");
      t.params.update({{"phase", m[1].str()},
                       {"tokens", count(4, "token count")},
                       {"hidden", count(5, "hidden size")},
                       {"experts", count(6, "expert count")},
                       {"top_k", count(7, "top-k")},
                       {"skew", *skew},
                       {"busiest_rank", count(9, "rank")},
                       {"busiest_share", *share / 100}});
      t.busiest_share = *share / 100;
      begin_section(std::move(t), count(2, "rank count"), m[3].str(), m[11].str());
    } else if (std::regex_search(line, m, kFbSection)) {
      Test t;
      t.op = t.name_op = ascii(m[1].str());
      begin_section(std::move(t), count(2, "rank count"), m[3].str(), m[4].str());
    } else if (std::regex_search(line, m, kFbWrong)) {
      refuse_short_row();
      const auto v = to_double(m[1].str());
      if (!v || !std::isfinite(*v) || *v < 0 || *v != std::floor(*v))
        throw garbled(fmt::format("\"Wrong elements\" '{}' is not a count", ascii(m[1].str())));
      run.wrong_total = *v;
      run.wrong_failed = m[2] == "FAILED";
      run.wrong_line = lineno;
      open = false;
    } else if (std::regex_search(line, m, kFbAvg)) {
      refuse_short_row();
      FbAverage avg;
      if (m[1].matched) avg.group = count(1, "group");
      avg.value = bandwidth(m[2].str(), "\"Avg bus bandwidth\"");
      avg.line = lineno;
      if (m[3].matched) avg.min_busbw = bandwidth(m[3].str(), "--min-busbw");
      avg.failed = m[4] == "FAILED";
      for (const auto& other : run.averages)
        if (other.group == avg.group)
          throw garbled(fmt::format("a second \"Avg bus bandwidth\"{} for the run (the first at line {})",
                                    avg.group ? fmt::format(" of group {}", *avg.group) : "", other.line));
      run.averages.push_back(avg);
      open = false;
    } else if (std::regex_search(line, m, kFbStopped)) {
      run.interrupted = fmt::format("{}:{}", source, lineno);
      open = false;
    } else {
      return false;
    }
    return true;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!strip_launcher_prefix(line)) continue;
    if (line.size() > 1024) continue;  // no nccl-tests line is this long; bounds std::regex's recursion
    auto t = split_ws(line);
    const bool comment =
        line.find_first_not_of(' ') != std::string::npos && line[line.find_first_not_of(' ')] == '#';
    // Inside a table any line that starts with a number is a row (a negative or fractional size is a
    // garbled row, refused below, not a line to skip); one that also holds a failure is the half row the
    // failed size printed, read as the failure below.
    if (!comment && !t.empty() && (is_integer(t[0]) || (open && looks_like_a_row(t[0]))) &&
        !(open && is_failure_line(line))) {
      if (!open) continue;  // a number outside a table (pids, log lines)
      Row row;
      row.line = lineno;
      // hypercube_perf passes "" as its reduction (src/hypercube.cu), which "%6s" prints as blanks.
      if (t.size() + 1 == layout->columns && layout->redop && current()->op == "hypercube")
        t.insert(t.begin() + static_cast<std::ptrdiff_t>(*layout->redop), "none");
      refuse_short_row();  // a row after a short one: the short one was garbled, not a stop
      if (t.size() < layout->columns) {
        short_row = ShortRow{lineno, t.size()};
        continue;
      }
      // More columns than the header is two rows run together (or a garbled one): refused, since reading
      // the first would silently drop the second and its #wrong.
      if (t.size() != layout->columns)
        throw input_error(fmt::format("{}:{}: {} columns where the header has {}", source, lineno, t.size(),
                                      layout->columns));
      const auto number = [&](std::size_t col, const char* what) {
        std::string cell = t[col];
        const auto v = to_double(cell);
        if (!v || !std::isfinite(*v))
          throw input_error(
              fmt::format("{}:{}: column {}: expected a number, got '{}'", source, lineno, what, t[col]));
        return *v;
      };
      // Counts are whole numbers within what the casts below can hold (a garbled row must not be UB).
      const auto whole = [&](std::size_t col, const char* what, double lo, double hi) {
        const double v = number(col, what);
        if (v != std::floor(v) || v < lo || v > hi)
          throw input_error(fmt::format("{}:{}: column {}: '{}' is not a plausible {}", source, lineno, what,
                                        t[col], what));
        return v;
      };
      row.bytes = static_cast<std::uint64_t>(whole(0, "size", 0, kMaxCount));
      row.count = static_cast<std::uint64_t>(whole(layout->count, "count", 0, kMaxCount));
      row.type = ascii(t[layout->type]);
      if (p.factorybench()) {
        const std::string type = type_of_factorybench_dtype(row.type);
        if (type.empty())
          throw input_error(fmt::format("{}:{}: column type: '{}' is not a factorybench dtype ({})", source,
                                        lineno, row.type, kFbDtypeNames));
        if (type != current()->section_type)
          throw input_error(fmt::format("{}:{}: column type: '{}' where the table's section line says {}",
                                        source, lineno, row.type,
                                        nccl_tests_dtype_name(current()->section_type)));
        row.type = type;
      }
      if (element_bytes(row.type) == 0)
        throw input_error(fmt::format("{}:{}: column type: '{}' is not an nccl-tests data type ({})", source,
                                      lineno, row.type, kTypeNames));
      if (layout->redop) row.redop = ascii(t[*layout->redop]);
      if (!known_redop(row.redop))
        throw input_error(fmt::format("{}:{}: column redop: '{}' is not an nccl-tests reduction ({})", source,
                                      lineno, row.redop, kRedopNames));
      if (layout->root) row.root = static_cast<long>(whole(*layout->root, "root", -1, kMaxRank));
      for (std::size_t s = 0; s < layout->sides.size(); ++s) {
        const auto& c = layout->sides[s];
        // factorybench prints dashes for a placement it did not measure (no --inplace, or the half of a size
        // a hang or a signal cut) and "skipped" for one the run skipped (MoE in place).
        if (p.factorybench() && t[c.algbw] == "-" && t[c.busbw] == "-" && t[*c.check] == "-" &&
            (t[c.time] == "-" || t[c.time] == "skipped")) {
          row.skipped[s] = t[c.time] == "skipped";
          continue;
        }
        Side side;
        // A time is positive and a bandwidth not negative: anything else is a garbled row, not a figure.
        const auto at_least = [&](std::size_t col, const char* what, double v, bool strict) {
          if (strict ? !(v > 0) : !(v >= 0))
            throw input_error(fmt::format("{}:{}: column {}: '{}' is not a plausible {}", source, lineno,
                                          what, t[col], what));
          return v;
        };
        side.time_us = at_least(c.time, "time", number(c.time, "time"), true);
        side.algbw = at_least(c.algbw, "algbw", number(c.algbw, "algbw"), false);
        side.busbw = at_least(c.busbw, "busbw", number(c.busbw, "busbw"), false);
        side.time_us *= layout->us_per_time_unit;
        side.time_half = printed_half_unit(t[c.time]) * layout->us_per_time_unit;
        side.algbw_half = printed_half_unit(t[c.algbw]);
        side.busbw_half = printed_half_unit(t[c.busbw]);
        side.cpu_time = c.cpu_time;
        const auto optional_col = [&](std::optional<std::size_t> col, const char* what) {
          return col ? std::optional<double>(at_least(*col, what, number(*col, what), false)) : std::nullopt;
        };
        side.iter_min_us = optional_col(c.iter_min, "i_min");
        side.iter_max_us = optional_col(c.iter_max, "i_max");
        side.iter_p99_us = optional_col(c.iter_p99, "i_p99");
        side.iter_cv_pct = optional_col(c.iter_cv, "i_cv%");
        if (c.check && t[*c.check] != "N/A") {
          std::string cell = t[*c.check];
          if (!cell.empty() && cell.back() == '*') cell.pop_back();  // rccl-tests marks errors over the bound
          const auto v = to_double(cell);
          if (!v || !std::isfinite(*v) || *v < 0)
            throw input_error(fmt::format("{}:{}: column {}: expected a number or N/A, got '{}'", source,
                                          lineno, c.max_error ? "error" : "#wrong", t[*c.check]));
          // The header says which it is; a value that is not a whole number ("7e-07") is a deviation
          // whatever the header says, never a count of wrong elements. nccl-tests prints #wrong with %g,
          // so a million wrong elements and more reads "1.67772e+07": still a whole number, still a count.
          (c.max_error || *v != std::floor(*v) ? side.max_error : side.wrong) = *v;
        }
        (s == 0 ? row.out_of_place : row.in_place) = side;
      }
      if (!row.out_of_place && !row.in_place && !row.skipped[0] && !row.skipped[1])
        throw input_error(fmt::format("{}:{}: no figures in either placement", source, lineno));
      current()->rows.push_back(std::move(row));
      continue;
    }
    // Everything else: the header, metadata, NCCL INFO and launcher lines.
    if (comment && std::regex_search(line, m, kFbFirst)) {
      if (!p.tests.empty() && !p.factorybench())
        throw garbled("factorybench's console after nccl-tests tables: import them as separate files");
      refuse_short_row();
      FbRun run;
      run.line = lineno;
      const auto world = small_int(m[1]), it = small_int(m[3]), wu = small_int(m[4]);
      if (!world || *world < 1 || !it || !wu) throw garbled("a first line whose counts are not plausible");
      run.world = *world;
      run.engine = m[2];
      if (run.engine != "mpi" && run.engine != "nccl")
        throw garbled(fmt::format("engine '{}' is not one of factorybench's (mpi, nccl)", ascii(run.engine)));
      run.iters = *it;
      run.warmup = *wu;
      if (m[5].matched) run.average = small_int(m[5]);
      p.runs.push_back(run);
      p.format = "factorybench collective console";
      section.reset();
      open = false;
      continue;
    }
    if (p.factorybench() && comment && factorybench_line()) continue;
    // The watchdog's diagnosis, printed after the table (docs/collective.md, --hang-timeout).
    if (p.factorybench() && line.starts_with("hang: ")) {
      auto& hang = p.runs.back().hang;
      const std::string what = ascii(line.substr(6));
      if (std::find(hang.begin(), hang.end(), what) == hang.end()) hang.push_back(what);
      open = false;
      continue;
    }
    const auto header = parse_header(comment ? split_ws(line.substr(line.find('#') + 1)) : t);
    if (short_row && (header || std::regex_search(line, m, kAvg)))
      refuse_short_row();  // the table went on past it
    if (const auto& l = header) {
      if (p.factorybench() && !section)
        throw garbled("a table without factorybench's section line above it (\"# OP: N rank(s), DTYPE\")");
      if (p.factorybench() && (l->sides.size() != 2 || !l->sides[0].check || !l->sides[1].check))
        throw garbled("not the columns of factorybench's console (both placements, each with #wrong)");
      layout = l;
      open = true;
      Test test;
      if (section) {
        test = std::move(*section);
        section.reset();
      } else {
        test.iters = iters;
        test.warmup = warmup;
      }
      test.line = lineno;
      test.rooted = l->root.has_value();
      // Each run of an nccl-tests program lists its ranks above its table. Tables of one file that ran on
      // different rank counts are different measurements, not repeats to take the median of.
      if (!listed.group.empty() || listed.cut) {
        test.listed_ranks = listed.communicator();
        if (test.listed_ranks)
          for (const auto& earlier : p.tests)
            if (earlier.listed_ranks && *earlier.listed_ranks != *test.listed_ranks)
              throw input_error(fmt::format(
                  "{}:{}: this table ran on {} ranks and the one at {}:{} on {}; import them separately",
                  source, lineno, *test.listed_ranks, source, earlier.line, *earlier.listed_ranks));
        listed = RankList{};
      }
      if (program && !p.factorybench()) {
        test.op = nccl_tests_op_name(*program);
        test.op_from = program_from + " " + *program;
        test.op_stated = program_stated;
      }
      program.reset();
      p.tests.push_back(std::move(test));
      continue;
    }
    // nccl-tests' own failure lines (src/common.h): "<host>: Test NCCL failure common.cu:1005 '...'",
    // "Test CUDA failure ...", " .. <host> pid N: Test failure common.cu:891". The sweep stopped there.
    if (is_failure_line(line)) {
      short_row.reset();  // the size that failed
      if (current() && !current()->aborted) {
        std::string what = line.substr(line.find_first_not_of(' '));
        if (what.size() > 200) what = what.substr(0, 200) + "...";
        current()->aborted = fmt::format("{}:{}: {}", source, lineno, ascii(what));
      }
      open = false;
      continue;
    }
    // nccl-tests cut this process's rank lines at 2048 bytes (util.cu writeDeviceReport): the list is not
    // the run's, so no size is read from it.
    // (A "# Rank ..." line that ends in "...", or "..." alone; not an NCCL log line that trails off.)
    if (line.ends_with("...") && (comment ? line.find("Rank") != std::string::npos
                                          : line.find_first_not_of(". ") == std::string::npos))
      p.ranks.cut = listed.cut = true;
    if (std::regex_search(line, m, kThreads) && m[1].length() <= 9)
      p.threads = std::stoi(m[1]);  // + iters below
    if (std::regex_search(line, m, kRank)) {
      if (m[1].length() > 9 || m[2].length() > 9 || m[4].length() > 9)
        continue;  // not a rank nccl-tests printed
      const int rank = std::stoi(m[1]);
      const int group = m[2].matched ? std::stoi(m[2]) : 0;
      p.devices[rank] = {ascii(m[3]), ascii(m[6]), ascii(m[5]), std::stoi(m[4])};
      p.ranks.group[rank] = listed.group[rank] = group;
    } else if (std::regex_search(line, m, kAvg)) {
      if (current() && open) {
        const auto avg = to_double(m[1]);
        // nccl-tests prints "-nan" only when no size ran; with rows above, it is a garbled line.
        if (!avg || !std::isfinite(*avg) || *avg < 0)
          throw input_error(fmt::format("{}:{}: \"Avg bus bandwidth\" '{}' is not a bandwidth", source,
                                        lineno, ascii(m[1])));
        current()->avg_busbw = avg;
        current()->avg_half = printed_half_unit(m[1].str());
        current()->avg_line = lineno;
      }
      open = false;
    } else if (std::regex_search(line, m, kOob)) {
      if (current() && open && m[1].length() <= 15) current()->out_of_bounds = std::stol(m[1]);
    } else if (std::regex_search(line, m, kProgram)) {
      program = ascii(m[1]);
      program_from = "\"Collective test starting:\"";
      program_stated = true;
      if (current() && open) current()->unfinished = true;  // a short row there: the size it stopped in
      short_row.reset();
      open = false;
    } else if (line.find("Collective test concluded") != std::string::npos) {
      open = false;
    } else if (std::regex_search(line, m, kVersion)) {
      p.tests_version = ascii(m[1]);
      if (std::regex_search(line, m, kLibrary) && m[1].length() <= 6)
        p.nccl_version = nccl_version_from_code(std::stol(m[1]));
    } else if (std::regex_search(line, m, kIters) && m[1].length() <= 9 && m[2].length() <= 9) {
      warmup = std::stoi(m[1]);
      iters = std::stoi(m[2]);
    } else if (std::regex_search(line, m, kNranks) && m[1].length() <= 9) {
      p.nranks = std::stoi(m[1]);
    } else if (std::regex_search(line, m, kNcclVersion)) {
      if (p.nccl_version.empty()) p.nccl_version = m[1];
    } else if (!comment || line.find("Collective test") == std::string::npos) {
      if (auto name = program_mention(line)) {
        program = *name;
        program_from = "program name in the output:";
        program_stated = false;
      }
    }
  }
  if (current() && open) current()->unfinished = true;  // a short last row: the file was cut in it
  // factorybench's footer closes all the tables of its run: without it, the run did not finish.
  for (auto& test : p.tests)
    if (p.factorybench() && p.runs[test.run].averages.empty()) test.unfinished = true;
  std::erase_if(p.tests, [](const Test& t) { return t.rows.empty(); });
  if (p.tests.empty() && p.factorybench())
    throw input_error(
        fmt::format("{}:{}: factorybench's console, but no result rows below it", source, p.runs[0].line));
  if (p.tests.empty())
    throw input_error(source +
                      ": no nccl-tests result rows found (expected the table printed by all_reduce_perf & "
                      "co., or the JSON written with -J)");
  return p;
}

// JSON values with their path, for errors that say where.
struct Node : JsonCursor<Node> {
  double number() const {
    if (j.is_number()) {
      const double v = j.get<double>();
      if (std::isfinite(v)) return v;
    }
    if (j.is_string() && j.get<std::string>() == "nan") fail("not a number (nan)");
    fail("expected a number");
  }
  // A whole number in [lo, hi].
  double integer(double lo, double hi) const {
    const double v = number();
    if (v != std::floor(v) || v < lo || v > hi)
      fail(fmt::format("expected a whole number in [{:g}, {:g}]", lo, hi));
    return v;
  }
  std::string text() const {
    if (!j.is_string()) fail("expected a string");
    return j.get<std::string>();
  }
};

Parsed parse_json(const std::string& text, const std::string& source) {
  const json j = parse_json_text(text, source);
  Parsed p;
  p.source = source;
  const Node root{{j, "$", source}};
  if (!j.is_object()) root.fail("expected an object (nccl-tests -J output)");
  p.format = "nccl-tests JSON";
  if (root.has("version")) {
    // Versions 1 to 3 (nccl-tests 2.19) are the ones this reader knows; a later one is read the same way,
    // and the import says so (summary.import[].newer_format, and a warning).
    if (!j["version"].is_number_integer() || j["version"].get<std::int64_t>() < 1)
      root.at("version").fail(
          fmt::format("expected a format version of at least 1, got {}", j["version"].dump()));
    p.format += " v" + j["version"].dump();
    if (j["version"].get<std::int64_t>() > kKnownJsonVersion) p.newer_format = true;
  }
  Test test;
  if (root.has("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string()) {
    test.op = nccl_tests_op_name(j["args"][0].get<std::string>());
    test.op_from = "args[0] " + j["args"][0].get<std::string>();
    test.op_stated = true;
  }
  if (root.has("nccl_version") && j["nccl_version"].is_number_integer() &&
      j["nccl_version"].get<long>() > 0 && j["nccl_version"].get<long>() < 1000000)
    p.nccl_version = nccl_version_from_code(j["nccl_version"].get<long>());
  if (root.has("config")) {
    const Node cfg = root.at("config");
    if (cfg.has("iterations")) test.iters = static_cast<int>(cfg.at("iterations").integer(0, kMaxRank));
    if (cfg.has("warmup_iters")) test.warmup = static_cast<int>(cfg.at("warmup_iters").integer(0, kMaxRank));
    // Each entry of "devices" is a process, which drives nthreads x ngpus ranks.
    for (const char* per_process : {"nthreads", "ngpus"})  // each at most 1024: the product fits an int
      if (cfg.has(per_process)) p.ranks.per_entry *= static_cast<int>(cfg.at(per_process).integer(1, 1024));
    if (cfg.has("nthreads")) p.threads = static_cast<int>(cfg.at("nthreads").integer(1, 1024));
    if (cfg.has("devices")) {
      const Node devs = cfg.at("devices");
      if (!devs.j.is_array()) devs.fail("expected an array");
      for (std::size_t i = 0; i < devs.j.size(); ++i) {
        const Node d = devs.at(i);
        Device dev;
        const int rank = static_cast<int>(d.at("rank").integer(0, kMaxRank));
        if (d.has("hostname")) dev.host = d.at("hostname").text();
        if (d.has("device")) dev.index = static_cast<int>(d.at("device").integer(0, kMaxRank));
        if (d.has("device_hex")) dev.bus_id = d.at("device_hex").text();
        if (d.has("device_info")) dev.name = d.at("device_info").text();
        p.devices[rank] = dev;
        p.ranks.group[rank] = d.has("group") ? static_cast<int>(d.at("group").integer(0, kMaxRank)) : 0;
      }
      test.listed_ranks = p.ranks.communicator();
    }
  }
  const Node results = root.at("results");
  if (!results.j.is_array()) results.fail("expected an array");
  for (std::size_t i = 0; i < results.j.size(); ++i) {
    const Node r = results.at(i);
    Row row;
    row.index = i;
    row.bytes = static_cast<std::uint64_t>(r.at("size").integer(0, kMaxCount));
    row.count_given = r.has("count");
    row.count = row.count_given ? static_cast<std::uint64_t>(r.at("count").integer(0, kMaxCount)) : 0;
    row.type = r.at("type").text();
    if (element_bytes(row.type) == 0)
      r.at("type").fail(fmt::format("'{}' is not an nccl-tests data type ({})", row.type, kTypeNames));
    row.redop = r.has("redop") ? r.at("redop").text() : "none";
    if (row.redop.empty()) row.redop = "none";  // hypercube_perf passes "" (src/hypercube.cu)
    if (!known_redop(row.redop))
      r.at("redop").fail(fmt::format("'{}' is not an nccl-tests reduction ({})", row.redop, kRedopNames));
    if (r.has("root")) {
      const Node rt = r.at("root");  // written as a padded string ("    -1") by nccl-tests
      const auto words = rt.j.is_string() ? split_ws(rt.j.get<std::string>()) : std::vector<std::string>{};
      const auto v = rt.j.is_string() ? (words.empty() ? std::nullopt : to_double(words[0]))
                                      : std::optional<double>(rt.number());
      if (!v || *v != std::floor(*v) || *v < -1 || *v > kMaxRank) rt.fail("expected an integer");
      row.root = static_cast<long>(*v);
      test.rooted = true;
    }
    for (const char* key : {"out_of_place", "in_place"}) {
      if (!r.has(key)) continue;
      const Node s = r.at(key);
      Side side;
      // "time" when the file has it (null there is an error about "time"), else "cpu_time" (-C 1).
      const Node time = s.j.is_object() && s.j.contains("time") ? s.at("time") : s.at("cpu_time");
      side.time_us = time.number();
      side.cpu_time = !(s.j.is_object() && s.j.contains("time"));
      if (!(side.time_us > 0)) time.fail("a time must be positive");
      const Node alg = s.at("alg_bw"), bus = s.at("bus_bw");
      side.algbw = alg.number();
      side.busbw = bus.number();
      if (side.algbw < 0) alg.fail("a bandwidth cannot be negative");
      if (side.busbw < 0) bus.fail("a bandwidth cannot be negative");
      side.time_half = printed_half_unit(table_text(side.time_us, kTimeWidth));
      side.algbw_half = printed_half_unit(table_text(side.algbw, kBandwidthWidth));
      side.busbw_half = printed_half_unit(table_text(side.busbw, kBandwidthWidth));
      const std::string per_iter = std::string(key) + "_per_iter";
      if (r.has(per_iter.c_str())) {
        const Node it = r.at(per_iter.c_str());
        it.object();
        const auto figure = [&](const char* name, std::optional<double>& to) {
          if (!it.has(name)) return;
          to = it.at(name).number();
          if (*to < 0) it.at(name).fail("cannot be negative");
        };
        figure("min_us", side.iter_min_us);
        figure("max_us", side.iter_max_us);
        figure("p99_us", side.iter_p99_us);
        figure("cv_pct", side.iter_cv_pct);
      }
      if (s.has("nwrong")) side.wrong = s.at("nwrong").integer(0, kMaxCount);
      (std::string(key) == "out_of_place" ? row.out_of_place : row.in_place) = side;
    }
    if (!row.out_of_place && !row.in_place) r.fail("neither \"out_of_place\" nor \"in_place\": no figure");
    test.rows.push_back(std::move(row));
  }
  // Both are objects in nccl-tests' -J output; another type is a hand-made or garbled file, refused rather
  // than read as "no figure" (an out_of_bounds of 5 would pass for none).
  // nccl-tests 2.17.5 to 2.17.8 spelled both keys "bandwidith" (fixed in its commit 85ca91d).
  for (const char* key : {"average_bus_bandwidth", "average_bus_bandwidith"}) {
    if (!root.has(key)) continue;
    const Node avg = root.at(key);
    avg.object();
    for (const char* figure : {"bandwidth", "bandwidith"})
      if (avg.has(figure)) {
        test.avg_busbw = avg.at(figure).number();
        test.avg_half = printed_half_unit(fmt::format("{:g}", *test.avg_busbw));  // the table's "%g"
        test.avg_key = key;
      }
  }
  // nccl-tests writes the average after the last size: without it the run did not finish, as a text table
  // without its "Avg bus bandwidth" line.
  if (!test.avg_busbw) test.unfinished = true;
  if (root.has("out_of_bounds")) {
    const Node oob = root.at("out_of_bounds");
    oob.object();
    if (oob.has("count")) test.out_of_bounds = static_cast<long>(oob.at("count").integer(0, kMaxCount));
  }
  if (test.rows.empty()) results.fail("no result rows");
  p.tests.push_back(std::move(test));
  return p;
}

// The collective a table measured, from its shape, following nccl-tests' column definitions
// (src/*.cu GetCollByteCount and doc/PERFORMANCE.md): "size" is the larger of the send and receive
// buffers and "count" the per-rank parameter, so size = count·elem for allreduce, broadcast, reduce and
// sendrecv, and size = count·elem·nranks for allgather, reducescatter and alltoall; busbw/algbw is
// 2(n−1)/n (> 1 from 3 ranks) for allreduce and 1 for broadcast and reduce.
std::optional<std::string> op_from_shape(const Test& test) {
  std::set<std::uint64_t> ratios;
  bool reduces = false, rooted = false, above_one = false;
  for (const auto& row : test.rows) {
    const std::size_t elem = element_bytes(row.type);
    if (row.count == 0 || elem == 0 || row.count > row.bytes) continue;
    const std::uint64_t per = row.count * elem;  // ≤ 8·2^53: no overflow
    if (row.bytes % per != 0) return std::nullopt;
    ratios.insert(row.bytes / per);
    reduces = reduces || row.redop != "none";
    rooted = rooted || row.root >= 0;
    for (const auto& side : {row.out_of_place, row.in_place})
      if (side && side->algbw >= 0.1 && side->busbw > side->algbw * 1.05) above_one = true;
  }
  if (ratios.size() != 1) return std::nullopt;
  if (*ratios.begin() == 1) {
    if (rooted) return reduces ? "reduce" : "broadcast";
    if (reduces && above_one) return "allreduce";
    return std::nullopt;  // sendrecv, or allreduce on 2 ranks (busbw = algbw for both)
  }
  if (reduces && !rooted) return "reducescatter";
  return std::nullopt;  // allgather, alltoall, gather and scatter share the shape
}

std::string known_ops_list() {
  std::string s;
  for (const char* op : kKnownOps) s += std::string(s.empty() ? "" : ", ") + op;
  return s;
}

void resolve_ops(Parsed& p, const NcclTestsImportOptions& options) {
  for (auto& test : p.tests) {
    if (options.op) {
      // --op names the collective of a table the file does not name; it does not overrule the file.
      const std::string op = nccl_tests_op_name(*options.op);
      if (test.op_stated && test.op != op)
        throw input_error(fmt::format("{}: --op {} but the file says this table measured {} (from {})",
                                      test.line ? fmt::format("{}:{}", p.source, test.line) : p.source,
                                      *options.op, test.op, test.op_from));
      // The user's word stands over the shape's (a run with other column rules), but not unsaid: a table
      // whose shape names one collective (a reduction, size = count x elem, busbw > algbw: an all-reduce)
      // imported under another is recorded, and import warns.
      if (!test.op_stated)
        if (const auto shaped = op_from_shape(test); shaped && *shaped != op) test.shape_op = *shaped;
      test.op = op;
      test.op_from = "--op";
    } else if (test.op.empty()) {
      if (auto op = op_from_shape(test)) {
        test.op = *op;
        test.op_from = "table shape";
      }
    }
    const std::string where = test.line ? fmt::format("{}:{}", p.source, test.line) : p.source;
    if (test.op.empty())
      throw input_error(where +
                        ": cannot tell which collective this table measured (no \"Collective test starting\" "
                        "line or program name, and its shape fits several); give --op");
    if (std::find(kKnownOps.begin(), kKnownOps.end(), test.op) == kKnownOps.end())
      throw input_error(fmt::format("{}: unknown collective '{}' (from {}; expected one of {})", where,
                                    test.op, test.op_from, known_ops_list()));
  }
}

// A row's figures for the rules of reports/nccl_tests_consistency.hpp, under `op` (the table's, or the one
// its shape says where --op overruled it) and the rank count the output gives the table.
NcclTestsRow figures_of(const Parsed& p, const Test& test, const std::string& op, const Row& row,
                        const Side& side) {
  NcclTestsRow figures{op,
                       test.listed_ranks ? test.listed_ranks : p.communicator(),
                       row.bytes,
                       row.count_given ? std::optional<std::uint64_t>(row.count) : std::nullopt,
                       element_bytes(row.type),
                       std::nullopt,
                       {side.algbw, side.algbw_half},
                       {side.busbw, side.busbw_half}};
  if (!side.cpu_time) figures.time_us = PrintedFigure{side.time_us, side.time_half};
  figures.factorybench = p.factorybench();
  return figures;
}

// Every row's figures, and each table's average, as nccl-tests computes them from one time
// (reports/nccl_tests_consistency.hpp): a row that disagrees beyond its printed digits is garbled or was
// edited, and a table whose average is not its rows' mean lost rows; neither is a measurement to compare.
void check_figures(const Parsed& p) {
  for (const auto& test : p.tests) {
    // --op overruled the table's shape: its rules are not nccl-tests' for that op, and import warns.
    if (!test.shape_op.empty()) continue;
    std::vector<PrintedFigure> busbw;
    for (const auto& row : test.rows) {
      for (const bool inplace : {false, true}) {
        const auto& side = inplace ? row.in_place : row.out_of_place;
        if (!side) continue;
        if (const auto why = nccl_tests_row_mismatch(figures_of(p, test, test.op, row, *side))) {
          const char* which = inplace ? "in-place" : "out-of-place";
          // A collective guessed from the shape may be the wrong one (on 1 rank every shape is a
          // broadcast's).
          const std::string hint =
              test.op_from == "table shape"
                  ? fmt::format(" (or not a {}: the collective came from the table's shape; give --op)",
                                test.op)
                  : "";
          throw input_error(row.line
                                ? fmt::format("{}:{}: {} {}: a garbled or edited row{}", p.source, row.line,
                                              which, *why, hint)
                                : fmt::format("{}: $.results[{}].{}: {}: a garbled or edited row{}", p.source,
                                              row.index, inplace ? "in_place" : "out_of_place", *why, hint));
        }
        busbw.push_back({side->busbw, side->busbw_half});
      }
    }
    // Before nccl-tests 2.11 (its commit 547e119, 2021) each thread of -t timed its own loop and the
    // average took every thread's figures, while only thread 0's rows were printed. Those outputs have no
    // "nccl-tests version" line (2.17 on), so with several threads and none, the average is not checked.
    const bool threads_own_figures = p.threads > 1 && p.tests_version.empty();
    if (test.avg_busbw && !threads_own_figures)
      if (const auto why = nccl_tests_average_mismatch({*test.avg_busbw, test.avg_half}, busbw))
        throw input_error(fmt::format(
            "{}: {}: rows were dropped or edited",
            test.avg_line ? fmt::format("{}:{}", p.source, test.avg_line) : p.source + ": $." + test.avg_key,
            *why));
  }
  // factorybench's footer is over every table of its run (reports/collective_console.cpp print_footer):
  // "Wrong elements" sums the #wrong of every row, and "Avg bus bandwidth" is the mean busbw of every row
  // measured, out of place and in place, of all the ops (per --split group;
  // workloads/collective_benchmark.cpp add_averages).
  for (std::size_t r = 0; r < p.runs.size(); ++r) {
    const FbRun& run = p.runs[r];
    double wrong = 0;
    for (const auto& test : p.tests)
      for (const auto& row : test.rows)
        for (const auto& side : {row.out_of_place, row.in_place})
          if (test.run == r && side && side->wrong) wrong += *side->wrong;
    if (run.wrong_total && (*run.wrong_total != wrong || run.wrong_failed != (wrong > 0)))
      throw input_error(fmt::format(
          "{}:{}: \"Wrong elements\" {:g} {} is not the tables' #wrong ({:g} in all): rows were dropped or "
          "edited",
          p.source, run.wrong_line, *run.wrong_total, run.wrong_failed ? "FAILED" : "OK", wrong));
    for (const auto& avg : run.averages) {
      std::vector<PrintedFigure> busbw;
      for (const auto& test : p.tests)
        for (const auto& row : test.rows)
          for (const auto& side : {row.out_of_place, row.in_place})
            if (test.run == r && test.group == avg.group && side)
              busbw.push_back({side->busbw, side->busbw_half});
      if (const auto why = nccl_tests_average_mismatch(avg.value, busbw))
        throw input_error(fmt::format(
            "{}:{}: {} (factorybench averages every row above it, out of place and in place, of every op): "
            "rows were dropped or edited",
            p.source, avg.line, *why));
      // Its verdict, against the threshold as printed (both with 3 decimals).
      if (const auto& min = avg.min_busbw) {
        const bool surely_below = avg.value.value + avg.value.half_unit < min->value - min->half_unit;
        const bool surely_not = avg.value.value - avg.value.half_unit >= min->value + min->half_unit;
        if ((avg.failed && surely_not) || (!avg.failed && surely_below))
          throw input_error(
              fmt::format("{}:{}: \"Avg bus bandwidth\" {:g} GB/s printed {} against --min-busbw {:g}: a "
                          "garbled or edited line",
                          p.source, avg.line, avg.value.value, avg.failed ? "FAILED" : "OK", min->value));
      }
    }
  }
}

// One result: a size of one test, with every repeat of it (in this file or others).
struct Group {
  std::string op, dtype, type, redop;
  std::string name_op;  // the name's first part (factorybench's MoE: moe_dispatch, moe_combine)
  std::string tool;     // "nccl-tests" or "factorybench": who printed it
  long root = -1;
  std::uint64_t bytes = 0, count = 0;
  bool inplace = false;
  std::optional<int> ranks, group;
  std::optional<int> iters, warmup;
  std::optional<double> bus_factor;  // busbw / algbw; unknown without the rank count
  bool factor_read = false;          // bus_factor is a repeat's (or a skipped placement's)
  nlohmann::json params;             // factorybench's section: MoE, --split, -a
  std::vector<Side> repeats;
  std::vector<std::string> where;  // FILE:LINE of each repeat
  std::vector<double> busiest_share;
  std::string skipped_at;  // FILE:LINE where the console printed "skipped" (no repeat measured)
};

// An "Avg bus bandwidth": nccl-tests' of one table, factorybench's of all the tables of a run (or group).
struct Average {
  std::vector<double> values;
  std::optional<int> ranks;
  std::string tool;
  std::optional<PrintedFigure> min_busbw;
  std::vector<std::string> below_min;  // FILE:LINE of each average factorybench printed FAILED
  std::set<std::size_t> rows;          // factorybench: the figures each average is over
};

Metric metric_of(const std::vector<double>& v, const char* unit, Better better) {
  if (v.size() == 1) return Metric{v[0], unit, better, std::nullopt};
  return metric_from_samples(v, unit, better);
}

std::string json_or_unknown(const std::optional<int>& v) {
  return v ? std::to_string(*v) : std::string("unknown");
}

}  // namespace

std::string nccl_tests_op_name(const std::string& program) {
  // A path ('\\' on Windows, nccl-tests 2.19.1 on), ".exe", and the build's NAME_SUFFIX after "_perf"
  // ("_mpi" in NGC containers) go.
  const std::size_t slash = program.find_last_of("/\\");
  std::string base = program.substr(slash == std::string::npos ? 0 : slash + 1);
  if (base.size() > 4 && (base.ends_with(".exe") || base.ends_with(".EXE"))) base.resize(base.size() - 4);
  if (const std::size_t perf = base.rfind("_perf"); perf != std::string::npos && perf > 0) base.resize(perf);
  std::string out;
  for (const char ch : base)
    if (ch != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
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

Report import_nccl_tests(const std::vector<NcclTestsFile>& files, const NcclTestsImportOptions& options) {
  if (options.op) {
    const std::string op = nccl_tests_op_name(*options.op);
    if (std::find(kKnownOps.begin(), kKnownOps.end(), op) == kKnownOps.end())
      throw usage_error(fmt::format("invalid --op '{}' (expected one of {})", *options.op, known_ops_list()));
  }
  std::vector<Parsed> parsed;
  for (const auto& f : files) {
    // A UTF-8 byte order mark (a file saved by a Windows editor) is not part of the output.
    const std::string text = f.text.starts_with("\xEF\xBB\xBF") ? f.text.substr(3) : f.text;
    const auto first = text.find_first_not_of(" \t\r\n");
    parsed.push_back(first != std::string::npos && text[first] == '{' ? parse_json(text, f.source)
                                                                      : parse_text(text, f.source));
    resolve_ops(parsed.back(), options);
    check_figures(parsed.back());
  }

  Report rep;
  // World size: what the files say, and only when they all say the same.
  // The communicator's size likewise (it differs from the world under NCCL_TESTS_SPLIT). -1: unknown.
  const int world = parsed.empty() ? -1 : parsed[0].world().value_or(-1);
  const int communicator = parsed.empty() ? -1 : parsed[0].communicator().value_or(-1);
  bool same_world = true, same_communicator = true;
  for (const auto& p : parsed) {
    same_world = same_world && p.world().value_or(-1) == world;
    same_communicator = same_communicator && p.communicator().value_or(-1) == communicator;
  }
  const json world_size = same_world && world >= 0 ? json(world) : json();
  const json communicator_ranks = same_communicator && communicator >= 0 ? json(communicator) : json();
  json hosts = json::array();
  json ranks = json::array();
  std::unordered_set<std::string> seen_hosts;
  std::string nccl;
  for (const auto& p : parsed) {
    if (nccl.empty()) nccl = p.nccl_version;
    if (!ranks.empty() || p.devices.empty()) continue;
    for (const auto& [rank, d] : p.devices) {
      if (seen_hosts.insert(d.host).second) hosts.push_back(d.host);
      json dev{{"kind", "gpu"}, {"name", d.name}, {"index", d.index}};
      if (!d.bus_id.empty()) dev["pci_bus_id"] = d.bus_id;
      ranks.push_back({{"rank", rank}, {"host", d.host}, {"device", dev}});
    }
  }
  // nccl-tests drives NCCL on GPUs; factorybench's console names its engine (mpi: the host backend).
  std::set<std::string> backends;
  bool nccl_ran = false;
  for (const auto& p : parsed) {
    if (!p.factorybench()) backends.insert("cuda");
    for (const auto& run : p.runs) backends.insert(run.engine == "mpi" ? "host" : "cuda");
    nccl_ran = nccl_ran || !p.factorybench();
    for (const auto& run : p.runs) nccl_ran = nccl_ran || run.engine == "nccl";
  }
  rep.run = {{"world_size", world_size},
             {"hosts", hosts},
             {"backend", backends.size() == 1 ? *backends.begin() : "mixed"}};
  rep.system = json::object();
  if (nccl_ran) rep.system["nccl"] = nccl.empty() ? "unknown" : nccl;
  if (!ranks.empty()) rep.system["ranks"] = ranks;

  // Group the rows of every table by what they measured; the first appearance sets the order.
  std::vector<Group> groups;
  std::map<std::string, std::size_t> index;  // key → groups
  // By op (factorybench: the op averaged, "all" for several) and --split group.
  std::map<std::pair<std::string, std::optional<int>>, Average> averages;
  std::map<std::pair<std::string, std::optional<int>>, std::string> average_dtype;
  std::map<std::string, long> out_of_bounds_by_op;
  std::map<std::string, std::vector<std::string>> aborted_by_op;
  std::vector<std::string> interrupted, hangs;  // factorybench's console: a signal, the watchdog
  const auto output_of = [](const std::string& tool) {
    return tool == "nccl-tests" ? std::string("nccl-tests' output") : tool + "'s console";
  };
  // Two tools' averages are two measurements, not repeats of one (as their rows, below).
  const auto average_of = [&](const std::pair<std::string, std::optional<int>>& key, const std::string& tool,
                              const std::string& where) -> Average& {
    Average& avg = averages[key];
    if (!avg.tool.empty() && avg.tool != tool)
      throw input_error(
          fmt::format("{}: the {} average is in {} here and in {} in another file; import them separately",
                      where, key.first, output_of(tool), output_of(avg.tool)));
    avg.tool = tool;
    return avg;
  };
  json summary = json::array();
  for (const auto& p : parsed) {
    json ops = json::array();
    std::size_t rows = 0;
    for (const auto& test : p.tests) {
      json entry = {{"op", test.op}, {"from", test.op_from}};
      if (test.name_op != test.op && !test.name_op.empty()) entry["name"] = test.name_op;
      if (test.group) entry["group"] = *test.group;
      if (!test.shape_op.empty()) {
        entry["shape_says"] = test.shape_op;
        entry["at"] = test.line ? fmt::format("{}:{}", p.source, test.line) : p.source;
      }
      if (test.aborted) {
        entry["aborted"] = *test.aborted;
        aborted_by_op[test.op].push_back(*test.aborted);
      } else if (test.unfinished) {
        entry["unfinished"] = test.line ? fmt::format("{}:{}", p.source, test.line) : p.source;
      }
      ops.push_back(entry);
      rows += test.rows.size();
      if (test.avg_busbw) {
        Average& avg = average_of({test.op, std::nullopt}, "nccl-tests",
                                  test.avg_line ? fmt::format("{}:{}", p.source, test.avg_line) : p.source);
        avg.values.push_back(*test.avg_busbw);
        avg.ranks = communicator_ranks.is_null() ? std::nullopt : std::optional<int>(communicator_ranks);
      }
      if (test.out_of_bounds) out_of_bounds_by_op[test.op] += *test.out_of_bounds;
      const std::string tool = p.factorybench() ? "factorybench" : "nccl-tests";
      // factorybench's tables give their own N (a --split group's); nccl-tests' the communicator's.
      const std::optional<int> table_ranks = p.factorybench() ? test.listed_ranks : p.communicator();
      const std::string name_op = test.name_op.empty() ? test.op : test.name_op;
      // busbw / algbw as the file computed it, by the shape's op where --op overruled it. A table whose rows
      // follow nccl-tests' pre-2.10 rule is read by it whole (its small rows fit both within their digits).
      const std::string factor_op = test.shape_op.empty() ? test.op : test.shape_op;
      bool before_2_10 = false;
      // Where the output names no rank count, a table of an op whose size is n x count x element (all-gather,
      // reduce-scatter, all-to-all, ...) shows it in its rows: rows of size 0 take it from their neighbours.
      std::optional<int> sized_ranks;
      bool sizes_agree = true;
      for (const auto& row : test.rows)
        for (const auto* side : {&row.out_of_place, &row.in_place})
          if (*side) {
            const NcclTestsRow figures = figures_of(p, test, factor_op, row, **side);
            before_2_10 = before_2_10 || nccl_tests_row_before_2_10(figures);
            if (const auto n = nccl_tests_ranks_by_size(figures)) {
              sizes_agree = sizes_agree && (!sized_ranks || *sized_ranks == *n);
              sized_ranks = n;
            }
          }
      if (!sizes_agree) sized_ranks.reset();
      for (const auto& row : test.rows) {
        for (const bool inplace : {false, true}) {
          const auto& side = inplace ? row.in_place : row.out_of_place;
          const bool skipped = row.skipped[inplace ? 1 : 0];
          if (!side && !skipped) continue;
          const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}", name_op, row.type, row.bytes, inplace,
                                              row.redop, row.root, test.group.value_or(-1));
          auto [it, fresh] = index.emplace(key, groups.size());
          if (fresh) {
            Group g;
            g.op = test.op;
            g.name_op = name_op;
            g.tool = tool;
            g.group = test.group;
            g.params = test.params;
            g.type = row.type;
            g.dtype = nccl_tests_dtype_name(row.type);
            g.redop = row.redop;
            g.root = row.root;
            g.bytes = row.bytes;
            g.count = row.count;
            g.inplace = inplace;
            g.ranks = table_ranks;
            g.iters = test.iters;
            g.warmup = test.warmup;
            groups.push_back(std::move(g));
          }
          Group& g = groups[it->second];
          const std::string where = row.line ? fmt::format("{}:{}", p.source, row.line) : p.source;
          const std::string before = g.where.empty() ? g.skipped_at : g.where.front();
          if (g.ranks != table_ranks)
            throw input_error(fmt::format(
                "{}: {}/{}/{} ran on {} ranks here and on {} ranks in {}; import them separately", where,
                g.name_op, g.dtype, g.bytes, json_or_unknown(table_ranks), json_or_unknown(g.ranks), before));
          // Two tools' figures of one size are two measurements, not repeats of one.
          if (g.tool != tool)
            throw input_error(
                fmt::format("{}: {}/{}/{} is in {} here and in {} in {}; import them separately", where,
                            g.name_op, g.dtype, g.bytes, output_of(tool), output_of(g.tool), before));
          // For a placement factorybench skipped, its op's. Repeats that disagree (nccl-tests before and
          // after 2.10) have no one factor.
          NcclTestsRow figures = figures_of(p, test, factor_op, row, side ? *side : Side{});
          if (!figures.ranks) figures.ranks = sized_ranks;
          const auto factor = nccl_tests_bus_factor(figures, before_2_10);
          if (!g.factor_read)
            g.bus_factor = factor;
          else if (g.bus_factor && (!factor || std::abs(*factor - *g.bus_factor) > 1e-12))
            g.bus_factor.reset();
          g.factor_read = true;
          if (skipped) {
            if (g.skipped_at.empty()) g.skipped_at = where;
            continue;
          }
          g.repeats.push_back(*side);
          g.where.push_back(where);
          if (test.busiest_share) g.busiest_share.push_back(*test.busiest_share);
        }
      }
    }
    // factorybench's footer: one average per run (and --split group) over all its tables.
    for (std::size_t r = 0; r < p.runs.size(); ++r) {
      std::set<std::string> run_ops;
      for (const auto& test : p.tests)
        if (test.run == r) run_ops.insert(test.op);
      const std::string op = run_ops.size() == 1 ? *run_ops.begin() : "all";
      for (const auto& line : p.runs[r].averages) {
        Average& avg =
            average_of({op, line.group}, "factorybench", fmt::format("{}:{}", p.source, line.line));
        avg.values.push_back(line.value.value);
        std::size_t figures = 0;
        for (const auto& test : p.tests)
          if (test.run == r && test.group == line.group) {
            avg.ranks = test.listed_ranks;
            average_dtype[{op, line.group}] = nccl_tests_dtype_name(test.section_type);
            for (const auto& row : test.rows) figures += (row.out_of_place ? 1 : 0) + (row.in_place ? 1 : 0);
          }
        avg.rows.insert(figures);
        if (line.min_busbw) avg.min_busbw = line.min_busbw;
        if (line.failed) avg.below_min.push_back(fmt::format("{}:{}", p.source, line.line));
      }
      if (p.runs[r].interrupted) interrupted.push_back(*p.runs[r].interrupted);
      hangs.insert(hangs.end(), p.runs[r].hang.begin(), p.runs[r].hang.end());
    }
    json item = {{"source", p.source}, {"format", p.format}, {"ops", ops}, {"rows", rows}};
    if (p.newer_format)
      item["newer_format"] = fmt::format(
          "newer than the -J format versions 1 to {} this import knows; read as "
          "version {}",
          kKnownJsonVersion, kKnownJsonVersion);
    if (!p.tests_version.empty()) item["nccl_tests_version"] = p.tests_version;
    if (p.factorybench()) {
      item["engine"] = p.runs[0].engine;
      item["runs"] = p.runs.size();
    } else {
      item["nccl"] = p.nccl_version.empty() ? "unknown" : p.nccl_version;
    }
    item["world_size"] = p.world() ? json(*p.world()) : json();
    summary.push_back(item);
  }
  rep.summary = {{"import", summary}};

  // Names as `factorybench collective` gives them; a reduction operator or root is added only where one
  // op/dtype ran with several (nccl-tests -o all, -r all), so the names stay unique.
  // factorybench's --split results end in "/groupG".
  std::map<std::string, std::set<std::string>> variants;
  for (const auto& g : groups)
    variants[g.name_op + "/" + g.dtype].insert(fmt::format("{}|{}", g.redop, g.root));
  bool any_failed = false;
  for (const auto& g : groups) {
    Result r;
    r.benchmark = "collective";
    r.name = fmt::format("{}/{}/{}{}", g.name_op, g.dtype, g.bytes, g.inplace ? "/inplace" : "");
    if (variants[g.name_op + "/" + g.dtype].size() > 1)
      r.name += fmt::format("/{}{}", g.redop, g.root >= 0 ? fmt::format("/root{}", g.root) : "");
    if (g.group) r.name += fmt::format("/group{}", *g.group);
    r.params = {{"op", g.op},
                {"dtype", g.dtype},
                {"bytes", g.bytes},
                {"count", g.count},
                {"inplace", g.inplace},
                {"redop", g.redop},
                {"root", g.root},
                {"source", g.tool == "factorybench" ? "factorybench collective console" : "nccl-tests"},
                {"repeats", g.repeats.size()}};
    if (g.tool == "nccl-tests") r.params["nccl_type"] = g.type;
    r.params.update(g.params);
    r.params["ranks"] = g.ranks ? json(*g.ranks) : json();
    r.params["bus_factor"] = g.bus_factor ? json(*g.bus_factor) : json();
    if (g.iters) r.params["iters"] = *g.iters;
    if (g.warmup) r.params["warmup"] = *g.warmup;
    // A placement the console printed as "skipped" and no file measured: skipped, as the run reported it.
    if (g.repeats.empty()) {
      r.status = Status::skipped;
      r.error = fmt::format("skipped in the run ({})", g.skipped_at);
      rep.results.push_back(std::move(r));
      continue;
    }
    std::vector<double> time, algbw, busbw, wrong, max_error, iter_min, iter_max, iter_p99, iter_cv;
    std::vector<std::string> failures;
    const auto tolerance = max_error_tolerance(g.type);
    for (std::size_t i = 0; i < g.repeats.size(); ++i) {
      const Side& s = g.repeats[i];
      time.push_back(s.time_us);
      algbw.push_back(s.algbw);
      busbw.push_back(s.busbw);
      if (s.iter_min_us) iter_min.push_back(*s.iter_min_us);
      if (s.iter_max_us) iter_max.push_back(*s.iter_max_us);
      if (s.iter_p99_us) iter_p99.push_back(*s.iter_p99_us);
      if (s.iter_cv_pct) iter_cv.push_back(*s.iter_cv_pct);
      if (s.wrong) {
        wrong.push_back(*s.wrong);
        if (*s.wrong > 0) failures.push_back(fmt::format("{} wrong elements ({})", *s.wrong, g.where[i]));
      }
      if (s.max_error) {
        max_error.push_back(*s.max_error);
        if (tolerance && *s.max_error > *tolerance)
          failures.push_back(fmt::format("max error {:g} above nccl-tests' bound {:g} for {} ({})",
                                         *s.max_error, *tolerance, g.type, g.where[i]));
      }
    }
    r.set_metric("time_us", metric_of(time, "us", Better::lower));
    r.set_metric("algbw_gbps", metric_of(algbw, "GB/s", Better::higher));
    r.set_metric("busbw_gbps", metric_of(busbw, "GB/s", Better::higher));
    // -I 1's spread of the iterations: shown, not gated (a 20-iteration p99 is its slowest iteration or
    // two, noise a gate would trip on); a rules file can bound them. Only where every repeat has them.
    const auto spread = [&](const char* name, const std::vector<double>& v, const char* unit) {
      if (!v.empty() && v.size() == g.repeats.size()) r.set_metric(name, metric_of(v, unit, Better::none));
    };
    spread("iter_min_us", iter_min, "us");
    spread("iter_max_us", iter_max, "us");
    spread("iter_p99_us", iter_p99, "us");
    spread("iter_cv_pct", iter_cv, "%");
    if (!wrong.empty())
      r.set_metric("wrong",
                   {*std::max_element(wrong.begin(), wrong.end()), "count", Better::lower, std::nullopt});
    // Shown, not gated: rounding noise (2e-07 against 5e-07) is no regression; the bound above is the
    // verdict.
    if (!max_error.empty())
      r.set_metric("max_error", {*std::max_element(max_error.begin(), max_error.end()), "abs", Better::none,
                                 std::nullopt});
    if (!g.busiest_share.empty() && g.busiest_share.size() == g.repeats.size())
      r.set_metric("busiest_share", metric_of(g.busiest_share, "fraction", Better::lower));
    if (!failures.empty()) {
      std::string msg = g.tool + " reported " + failures[0];
      if (failures.size() > 1) msg += fmt::format(" and {} more", failures.size() - 1);
      r.fail(msg);
      any_failed = true;
    }
    rep.results.push_back(std::move(r));
  }
  std::set<std::string> averaged_ops;
  for (const auto& [key, avg] : averages) averaged_ops.insert(key.first);
  for (const auto& [key, avg] : averages) {
    const auto& [op, group] = key;
    Result r;
    r.benchmark = "collective";
    r.name = averaged_ops.size() == 1 ? "avg_busbw" : op + "/avg_busbw";
    if (group) r.name += fmt::format("/group{}", *group);
    const bool fb = avg.tool == "factorybench";
    r.params = {
        {"op", op},
        {"source", fb ? "factorybench collective console" : "nccl-tests"},
        {"repeats", avg.values.size()},
        {"definition", fb ? "factorybench's \"Avg bus bandwidth\": mean busbw over every row measured, out "
                            "of place and in place, of every op"
                          : "nccl-tests' \"Avg bus bandwidth\": mean busbw over the sizes run"}};
    r.params["ranks"] = avg.ranks ? json(*avg.ranks) : json();
    if (const auto dtype = average_dtype.find(key); dtype != average_dtype.end())
      r.params["dtype"] = dtype->second;
    if (group) {
      r.params["group"] = *group;
      if (avg.ranks) r.params["split"] = *avg.ranks;
    }
    if (avg.rows.size() == 1) r.params["rows"] = *avg.rows.begin();
    if (avg.min_busbw) r.params["min_busbw_gbps"] = avg.min_busbw->value;
    r.set_metric("busbw_gbps", metric_of(avg.values, "GB/s", Better::higher));
    // nccl-tests' own verdict, where no row said which size was wrong.
    if (const auto oob = out_of_bounds_by_op.find(op);
        !fb && oob != out_of_bounds_by_op.end() && oob->second > 0 && !any_failed)
      r.fail(fmt::format("nccl-tests reported {} out-of-bounds values", oob->second));
    // factorybench's --min-busbw gate, as the run judged it.
    if (!avg.below_min.empty())
      r.fail(fmt::format("average busbw {:.3f} GB/s is below --min-busbw {:.3f} ({})",
                         r.metric("busbw_gbps")->value, avg.min_busbw ? avg.min_busbw->value : 0.0,
                         avg.below_min.front()));
    rep.results.push_back(std::move(r));
  }
  // A sweep nccl-tests itself reported as stopped fails, whatever its rows say: the sizes after the last
  // row never ran.
  for (const auto& [op, where] : aborted_by_op) {
    Result r;
    r.benchmark = "collective";
    r.name = op + "/run";
    r.params = {{"op", op}, {"source", "nccl-tests"}, {"aborted_tables", where.size()}};
    std::string msg = "nccl-tests stopped: " + where.front();
    if (where.size() > 1) msg += fmt::format(" (and {} more table(s))", where.size() - 1);
    r.fail(msg);
    rep.results.push_back(std::move(r));
  }
  // factorybench's run ended by a signal or by its hang watchdog, as its report names them.
  if (!interrupted.empty()) {
    Result r;
    r.benchmark = "collective";
    r.name = "interrupted";
    r.params = {{"test", "interrupted"}, {"source", "factorybench collective console"}};
    r.fail(fmt::format("stopped by a signal after the sizes above ({})", interrupted.front()));
    rep.results.push_back(std::move(r));
  }
  if (!hangs.empty()) {
    Result r;
    r.benchmark = "collective";
    r.name = "hang";
    r.params = {{"test", "hang"}, {"source", "factorybench collective console"}};
    std::string msg;
    for (const auto& l : hangs) msg += (msg.empty() ? "" : "; ") + l;
    r.fail(msg);
    rep.results.push_back(std::move(r));
  }
  return rep;
}

Report import_nccl_tests(const std::string& text, const std::string& source) {
  return import_nccl_tests({{source, text}}, {});
}

}  // namespace fb::reports
