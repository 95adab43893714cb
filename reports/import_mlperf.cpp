#include "reports/import_mlperf.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_file.hpp"
#include "core/statistics.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

constexpr std::string_view kTag = ":::MLLOG";
constexpr std::string_view kSysTag = ":::SYSJSON";

struct Run {
  std::string source;
  std::string benchmark;
  std::map<std::string, json> submission;  // submission_* and global_batch_size values
  std::optional<double> start_ms, stop_ms;
  std::size_t start_line = 0, stop_line = 0;
  std::optional<double> init_ms;  // init_start: the run starts after it (mlperf_logging's order)
  std::size_t init_line = 0;
  std::string stop_status;
  std::vector<double> throughput;  // samples/s, every value logged
  std::optional<double> eval_accuracy;
  std::optional<double> train_samples;
  std::optional<double> nodes, accelerators_per_node;
  std::string diverged;  // "LOG:LINE: eval_accuracy NaN": mllog writes a diverged figure as NaN
  std::string cut;       // "LOG:LINE": the log ends in the middle of an event (the run was cut short)
  json sysjson;          // the `:::SYSJSON` object (NVIDIA's run scripts print it before the MLLOG lines)
  std::optional<int> world() const {
    if (nodes && accelerators_per_node)
      return static_cast<int>(*nodes * std::max(*accelerators_per_node, 1.0));
    return std::nullopt;
  }
};

// SYSJSON values are strings ("128"); the counts are used only when they are whole positive numbers.
std::optional<double> sysjson_count(const json& sys, const char* key) {
  if (!sys.is_object() || !sys.contains(key)) return std::nullopt;
  const json& v = sys[key];
  if (v.is_number()) {
    const double n = v.get<double>();
    return n >= 1 && n <= 1e6 && n == std::floor(n) ? std::optional<double>(n) : std::nullopt;
  }
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const double n = std::stod(s);
  return n >= 1 && n <= 1e6 ? std::optional<double>(n) : std::nullopt;  // "0" nodes: unknown, not 0
}

// An event's JSON as mlperf_logging writes it, made readable for a strict parser: Python's json.dumps writes
// a diverged figure as NaN, Infinity or -Infinity (mllog.py), which become null here (`nonfinite` says one
// was seen), and a byte that is not UTF-8 (MLCommons' checker reads logs as latin-1) becomes '?'.
std::string strict_json(std::string_view text, bool& nonfinite) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {  // a UTF-8 sequence, kept whole, or '?' for a byte that starts none
      const std::size_t len = c >= 0xF0 && c < 0xF5   ? 4
                              : c >= 0xE0 && c < 0xF0 ? 3
                              : c >= 0xC2 && c < 0xE0 ? 2
                                                      : 0;
      bool ok = len > 0 && i + len <= text.size();
      for (std::size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      if (ok) {
        out.append(text.substr(i, len));
        i += len;
      } else {
        out += '?';
        ++i;
      }
      continue;
    }
    if (in_string) {
      out += text[i];
      if (text[i] == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (text[i] == '"')
        in_string = false;
      ++i;
      continue;
    }
    if (text[i] == '"') in_string = true;
    bool replaced = false;
    for (const std::string_view token : {"NaN", "Infinity", "-Infinity"})
      if (text.substr(i, token.size()) == token) {
        out += "null";
        i += token.size();
        nonfinite = replaced = true;
        break;
      }
    if (!replaced) out += text[i++];
  }
  return out;
}

Run parse_log(const MlperfLog& log) {
  Run run;
  run.source = log.source;
  // A UTF-8 byte order mark (a file saved by a Windows editor) is not part of the log.
  std::istringstream in(log.text.starts_with("\xEF\xBB\xBF") ? log.text.substr(3) : log.text);
  std::string line;
  std::size_t lineno = 0, events = 0;
  // What a file system can leave at the end of a file being written at a crash: zero bytes.
  constexpr std::string_view kBlankOrZero(" \t\r\n\0", 5);
  while (std::getline(in, line)) {
    ++lineno;
    // Zero bytes after the last line's text, its newline lost: the line is whole without them.
    if (const auto text_end = line.find_last_not_of('\0'); text_end + 1 < line.size()) {
      const auto here = in.tellg();
      const std::string rest = here < 0 ? std::string() : in.str().substr(static_cast<std::size_t>(here));
      if (rest.find_first_not_of(kBlankOrZero) == std::string::npos)
        line.erase(text_end == std::string::npos ? 0 : text_end + 1);
    }
    if (const auto sys = line.find(kSysTag); sys != std::string::npos && run.sysjson.is_null()) {
      try {
        run.sysjson = parse_json_text(line.substr(sys + kSysTag.size()), "");
      } catch (const Error&) {
        throw input_error(fmt::format(
            "{}:{}: malformed :::SYSJSON line (expected a JSON object after the tag)", log.source, lineno));
      }
      if (!run.sysjson.is_object())
        throw input_error(fmt::format("{}:{}: :::SYSJSON is not a JSON object", log.source, lineno));
      continue;
    }
    const auto at = line.find(kTag);
    if (at == std::string::npos) continue;
    json e;
    bool nonfinite = false;
    const std::string event = strict_json(std::string_view(line).substr(at + kTag.size()), nonfinite);
    // nlohmann reads a NUL as the end of its input, which would drop the rest of the line unseen: a line
    // with one is malformed.
    bool parsed = event.find('\0') == std::string::npos;
    if (parsed) try {
        e = json::parse(event);
      } catch (const json::exception&) {
        parsed = false;
      }
    if (!parsed) {
      // The last line of a log, cut in the middle: the run was cut short (a crash, a full disk), which fails
      // the run. A launcher that relays a killed job's output often ends that partial line with a newline,
      // so only blank lines may follow, or the zero bytes a file system can leave at the end of a file
      // being written at a crash. Anywhere else (or as the only event) a malformed line is a garbled log.
      const std::string rest(std::istreambuf_iterator<char>(in), {});
      if (events > 0 && rest.find_first_not_of(kBlankOrZero) == std::string::npos) {
        run.cut = fmt::format("{}:{}", log.source, lineno);
        break;
      }
      throw input_error(fmt::format("{}:{}: malformed :::MLLOG line (expected a JSON object after the tag)",
                                    log.source, lineno));
    }
    // Two "time_ms" (or "value") in one event: nlohmann keeps the last silently; the log is garbled.
    reject_duplicate_keys(event, fmt::format("{}:{}", log.source, lineno));
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string())
      throw input_error(fmt::format("{}:{}: :::MLLOG event without a \"key\"", log.source, lineno));
    const std::string key = e["key"].get<std::string>();
    ++events;
    const json value = e.value("value", json());
    const json meta = e.value("metadata", json::object());
    const auto time_ms = [&]() -> double {
      if (!e.contains("time_ms") || !e["time_ms"].is_number() || !std::isfinite(e["time_ms"].get<double>()))
        throw input_error(
            fmt::format("{}:{}: {} event without a finite numeric \"time_ms\"", log.source, lineno, key));
      // mlperf_logging stamps events with the wall clock in ms since the Unix epoch; a negative stamp or
      // one past the year 2286 (1e13 ms) is a garbled log, and would make an absurd time to train.
      const double t = e["time_ms"].get<double>();
      if (t < 0 || t > 1e13)
        throw input_error(fmt::format("{}:{}: {} event: time_ms {:g} is not a time in ms since the epoch",
                                      log.source, lineno, key, t));
      return t;
    };
    time_ms();  // every event's stamp is checked, not only those the score reads: a garbled one is a garbled
                // log
    // The figures the score is made of: a value that is not a finite number (null, "high", NaN) is a
    // garbled log, refused rather than skipped (which would report the previous accuracy as the last).
    const auto finite = [&](const json& v) {
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        if (v.is_null() && nonfinite) {  // NaN or Infinity, as mllog writes a diverged figure
          if (run.diverged.empty())
            run.diverged = fmt::format("{}:{}: {} is not finite", log.source, lineno, key);
          return std::nan("");
        }
        throw input_error(
            fmt::format("{}:{}: {} value {} is not a finite number", log.source, lineno, key, v.dump()));
      }
      return v.get<double>();
    };
    // Node and accelerator counts: whole numbers of at least 1.
    const auto count = [&](const json& v) {
      const double x = finite(v);
      if (x < 1 || x != std::floor(x) || x > 1e6)
        throw input_error(fmt::format("{}:{}: {} value {} is not a count of at least 1", log.source, lineno,
                                      key, v.dump()));
      return x;
    };
    if (key == "init_start") {
      if (!run.init_ms) {
        run.init_ms = time_ms();
        run.init_line = lineno;
      }
    } else if (key == "run_start") {
      // Ranks may each log the start and the stop of the same run: the time to train runs from the last
      // start before the first stop to that stop, as MLCommons' result summarizer reads a log
      // (mlcommons/logging result_summarizer.py _read_mlperf_score). A start after a stop is a second run.
      if (run.stop_ms)
        throw input_error(
            fmt::format("{}:{}: run_start after the run_stop at line {}: one run per log "
                        "(split the file; several logs make one report)",
                        log.source, lineno, run.stop_line));
      run.start_ms = time_ms();
      run.start_line = lineno;
    } else if (key == "run_stop") {
      if (run.stop_ms) continue;  // another rank's stop of the same run
      run.stop_ms = time_ms();
      run.stop_line = lineno;
      if (meta.is_object() && meta.contains("status") && !meta["status"].is_string())
        throw input_error(fmt::format("{}:{}: run_stop status {} is not a string", log.source, lineno,
                                      meta["status"].dump()));
      run.stop_status = meta.is_object() ? meta.value("status", std::string()) : "";
    } else if (key == "submission_benchmark" && value.is_string()) {
      run.benchmark = value.get<std::string>();
      run.submission[key] = value;
    } else if (key.starts_with("submission_") || key == "global_batch_size") {
      run.submission[key] = value;
    } else if (key == "throughput") {
      if (const double v = finite(value); std::isfinite(v)) run.throughput.push_back(v);
    } else if (key == "tracked_stats" && value.is_object() && value.contains("throughput")) {
      if (const double v = finite(value["throughput"]); std::isfinite(v)) run.throughput.push_back(v);
    } else if (key == "eval_accuracy") {
      if (const double v = finite(value); std::isfinite(v)) run.eval_accuracy = v;
    } else if (key == "train_samples") {
      run.train_samples = finite(value);
    } else if (key == "number_of_nodes") {
      run.nodes = count(value);
    } else if (key == "accelerators_per_node") {
      run.accelerators_per_node = count(value);
    }
  }
  if (!run.start_ms && !run.stop_ms && run.submission.empty())
    throw input_error(
        events == 0 ? log.source + ": no :::MLLOG lines (expected an MLPerf Training log)"
                    : fmt::format("{}: {} :::MLLOG event(s), but no run_start, run_stop or submission_* "
                                  "key (expected the log of one whole MLPerf Training run)",
                                  log.source, events));
  if (run.init_ms && run.start_ms && *run.start_ms < *run.init_ms)
    throw input_error(
        fmt::format("{}:{}: run_start (time_ms {:.0f}) comes before init_start (line {}, time_ms {:.0f})",
                    log.source, run.start_line, *run.start_ms, run.init_line, *run.init_ms));
  if (run.start_ms && run.stop_ms && !(*run.stop_ms > *run.start_ms))
    throw input_error(
        fmt::format("{}:{}: run_stop (time_ms {:.0f}) does not follow run_start (line {}, time_ms {:.0f})",
                    log.source, run.stop_line, *run.stop_ms, run.start_line, *run.start_ms));
  if (!run.nodes) run.nodes = sysjson_count(run.sysjson, "number_of_nodes");
  if (!run.accelerators_per_node)
    run.accelerators_per_node = sysjson_count(run.sysjson, "accelerators_per_node");
  if (run.benchmark.empty()) run.benchmark = "unknown";
  return run;
}

std::string log_stem(const std::string& source) {
  std::string s = std::filesystem::path(source).stem().string();
  return s.empty() ? source : s;
}

}  // namespace

double olympic_mean(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t drop = values.size() >= 3 ? 1 : 0;
  const double sum =
      std::accumulate(values.begin() + static_cast<long>(drop), values.end() - static_cast<long>(drop), 0.0);
  return sum / static_cast<double>(values.size() - 2 * drop);
}

std::optional<double> mlperf_olympic_score(std::vector<double> successful, std::size_t dropped,
                                           std::size_t max_dropped) {
  if (dropped > max_dropped) return std::nullopt;  // "Too many non-converging runs"
  std::sort(successful.begin(), successful.end());
  const std::size_t drop_slow = max_dropped - dropped;
  if (successful.size() <= max_dropped + drop_slow) return std::nullopt;
  const auto first = successful.begin() + static_cast<long>(max_dropped);
  const auto last = successful.end() - static_cast<long>(drop_slow);
  return std::accumulate(first, last, 0.0) / static_cast<double>(last - first);
}

MlperfScaling parse_mlperf_scaling(const std::string& source, const std::string& text) {
  const json doc = parse_json_text(text, source);
  if (!doc.is_object() || !doc.contains("scaling_factor"))
    throw input_error(
        fmt::format("{}: expected an object with \"scaling_factor\" (a scaling.json of an MLPerf "
                    "results folder)",
                    source));
  const json& f = doc["scaling_factor"];
  // A factor of 0 or less, or a runaway one, is a broken file rather than a committee's decision.
  if (!f.is_number() || !(f.get<double>() > 0 && f.get<double>() < 1e6))
    throw input_error(fmt::format("{}: scaling_factor {} is not a positive number", source, f.dump()));
  return {source, f.get<double>()};
}

std::size_t mlperf_max_dropped_runs(const std::string& benchmark) {
  return benchmark == "unet3d" ? 4 : 1;
}

std::optional<std::size_t> mlperf_required_runs(const std::string& benchmark) {
  static const std::pair<const char*, std::size_t> kRuns[] = {{"bert", 10},
                                                              {"dlrm", 5},
                                                              {"dlrm_dcnv2", 10},
                                                              {"gnmt", 10},
                                                              {"gpt3", 3},
                                                              {"maskrcnn", 5},
                                                              {"minigo", 10},
                                                              {"resnet", 5},
                                                              {"ssd", 5},
                                                              {"retinanet", 5},
                                                              {"stable_diffusion", 10},
                                                              {"transformer", 10},
                                                              {"ncf", 10},
                                                              {"rnnt", 10},
                                                              {"unet3d", 40},
                                                              {"gnn", 10},
                                                              {"rgat", 10},
                                                              {"llama2_70b_lora", 10},
                                                              {"llama31_405b", 3}};
  for (const auto& [name, runs] : kRuns)
    if (benchmark == name) return runs;
  return std::nullopt;
}

Report import_mlperf(const std::vector<MlperfLog>& logs) {
  std::vector<Run> runs;
  for (const auto& log : logs) runs.push_back(parse_log(log));

  Report rep;
  // World size: what the logs say (number_of_nodes × accelerators_per_node, from MLLOG or SYSJSON), and
  // only when they all say the same; unknown (null) otherwise.
  std::optional<int> world = runs.empty() ? std::nullopt : runs[0].world();
  for (const auto& run : runs)
    if (run.world() != world) world.reset();
  rep.run = {{"world_size", world ? json(*world) : json()}, {"hosts", json::array()}, {"backend", "none"}};
  json summary_runs = json::array();
  std::map<std::string, std::vector<double>> ttt_by_benchmark;  // successful runs
  std::map<std::string, std::size_t> index_by_benchmark, failed_by_benchmark;
  std::vector<std::string> order;
  // Each benchmark's scaling: the first log's, which every other log of it must share.
  std::map<std::string, std::pair<const MlperfLog*, std::optional<MlperfScaling>>> scaling_by_benchmark;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& log = logs[i];
    const auto [it, first] = scaling_by_benchmark.try_emplace(runs[i].benchmark, &log, log.scaling);
    const auto& [first_log, scaling] = it->second;
    const auto said = [](const MlperfLog& l) {
      return l.scaling ? fmt::format("{} says {}", l.scaling->source, l.scaling->factor)
                       : std::string("no scaling.json");
    };
    if (!first && (scaling.has_value() != log.scaling.has_value() ||
                   (scaling && scaling->factor != log.scaling->factor)))
      throw input_error(fmt::format(
          "{} and {} are runs of {} from folders scaled differently ({}; {}): the summarizer scores a "
          "results folder at a time, so import each folder on its own",
          first_log->source, log.source, runs[i].benchmark, said(*first_log), said(log)));
  }

  for (const auto& run : runs) {
    Result r;
    r.benchmark = "mlperf";
    const std::size_t n = ++index_by_benchmark[run.benchmark];
    if (n == 1) order.push_back(run.benchmark);
    r.name = fmt::format("{}/run{}", run.benchmark, n);
    r.params = {{"source", run.source}, {"log", log_stem(run.source)}};
    for (const auto& [k, v] : run.submission) r.params[k] = v;
    if (run.train_samples) r.params["train_samples"] = *run.train_samples;
    if (run.start_ms && run.stop_ms) {
      const double minutes = (*run.stop_ms - *run.start_ms) / 60000.0;
      r.set_metric("time_to_train_min", {minutes, "min", Better::lower, std::nullopt});
      if (run.stop_status == "success" && run.cut.empty() && run.diverged.empty())
        ttt_by_benchmark[run.benchmark].push_back(minutes);
    }
    if (!run.throughput.empty()) {
      // The median of the logged values: the start-up and tail steps do not move it.
      const auto s = summarize(run.throughput);
      Metric m{s.median, "samples/s", Better::higher, std::nullopt};
      if (s.n > 1) m.stats = s;
      r.set_metric("throughput_samples_per_s", m);
    }
    // The quality metric's direction differs per benchmark (accuracy up, loss down): shown, not gated.
    if (run.eval_accuracy)
      r.set_metric("eval_accuracy", {*run.eval_accuracy, "score", Better::none, std::nullopt});
    if (!run.cut.empty())
      r.fail(fmt::format("the log ends in the middle of an event at {}: the run was cut short", run.cut));
    else if (!run.diverged.empty())
      r.fail(fmt::format("the run diverged: {}", run.diverged));
    else if (!run.start_ms)
      r.fail("no run_start event");
    else if (!run.stop_ms)
      r.fail("no run_stop event (the run did not finish)");
    else if (run.stop_status != "success")
      r.fail(fmt::format("run_stop status \"{}\"", run.stop_status.empty() ? "missing" : run.stop_status));
    if (r.status == Status::failed) ++failed_by_benchmark[run.benchmark];
    summary_runs.push_back(
        {{"source", run.source}, {"benchmark", run.benchmark}, {"status", run.stop_status}});
    rep.results.push_back(std::move(r));
  }
  for (const auto& bench : order) {
    const std::size_t total = index_by_benchmark[bench];
    if (total < 2) continue;
    const auto& v = ttt_by_benchmark[bench];
    const std::size_t failed = failed_by_benchmark[bench];
    const std::size_t max_dropped = mlperf_max_dropped_runs(bench);
    Result r;
    r.benchmark = "mlperf";
    r.name = bench + "/score";
    r.params = {
        {"runs", total},
        {"successful_runs", v.size()},
        {"max_dropped_runs", max_dropped},
        {"runs_required", mlperf_required_runs(bench) ? json(*mlperf_required_runs(bench)) : json()},
        {"method",
         "MLCommons result summarizer: the fastest run and the slowest are dropped, a run that did not "
         "succeed counting as the slowest; mean of the rest"}};
    const auto& scaling = scaling_by_benchmark.at(bench).second;
    const double factor = scaling ? scaling->factor : 1.0;
    if (scaling) {
      r.params["scaling_factor"] = factor;
      r.params["scaling_file"] = scaling->source;
      r.params["method"] = r.params["method"].get<std::string>() + ", times the folder's scaling.json factor";
    }
    const auto score = mlperf_olympic_score(v, failed, max_dropped);
    if (score) {
      Metric m{*score * factor, "min", Better::lower, std::nullopt};
      // The spread in the score's units: the runs' times scaled as the score is.
      std::vector<double> scaled(v);
      for (auto& t : scaled) t *= factor;
      if (v.size() > 1) m.stats = summarize(scaled);
      r.set_metric("time_to_train_min", m);
    } else if (failed > max_dropped) {
      r.fail(fmt::format("{} of {} runs did not succeed; MLPerf scores at most {} such run", failed, total,
                         max_dropped));
    } else {
      r.status = Status::skipped;
      r.error = fmt::format(
          "{} successful runs leave none to average after dropping the fastest and the slowest", v.size());
    }
    rep.results.push_back(std::move(r));
  }
  rep.summary = {
      {"import", {{"format", "MLPerf Training :::MLLOG"}, {"logs", logs.size()}, {"runs", summary_runs}}}};
  if (!runs.empty()) {
    const Run& first = runs[0];
    json meta = json::object();
    for (const auto& [k, v] : first.submission) meta[k] = v;
    // The system as the submission names it: SYSJSON's system_name, else the logged platform.
    std::string system = "unknown";
    if (first.sysjson.is_object() && first.sysjson.value("system_name", json()).is_string())
      system = first.sysjson["system_name"].get<std::string>();
    else if (meta.contains("submission_platform") && meta["submission_platform"].is_string())
      system = meta["submission_platform"].get<std::string>();
    meta["system"] = system;
    rep.summary["mlperf"] = meta;
    if (first.sysjson.is_object()) rep.system["mlperf_system"] = first.sysjson;
  }
  return rep;
}

}  // namespace fb::reports
