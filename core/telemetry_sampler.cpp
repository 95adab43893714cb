#include "core/telemetry_sampler.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/statistics.hpp"

namespace fb {

using nlohmann::json;

std::string_view to_string(TelemetryMode mode) {
  switch (mode) {
    case TelemetryMode::off:
      return "off";
    case TelemetryMode::summary:
      return "summary";
    case TelemetryMode::full:
      return "full";
  }
  return "?";
}

TelemetryMode parse_telemetry_mode(std::string_view text) {
  for (const auto mode : {TelemetryMode::off, TelemetryMode::summary, TelemetryMode::full})
    if (text == to_string(mode)) return mode;
  throw usage_error(fmt::format("invalid --telemetry '{}': expected off, summary or full", text));
}

namespace {

// One table per part, so summary, series and "unavailable" cannot disagree about the fields.
template <typename Reading>
struct ValueField {
  const char* name;
  std::optional<double> Reading::*member;
};
constexpr ValueField<nvml::GpuReading> kGpuValues[] = {
    {"sm_clock_mhz", &nvml::GpuReading::sm_clock_mhz}, {"mem_clock_mhz", &nvml::GpuReading::mem_clock_mhz},
    {"power_w", &nvml::GpuReading::power_w},           {"temperature_c", &nvml::GpuReading::temperature_c},
    {"gpu_util_pct", &nvml::GpuReading::gpu_util_pct}, {"mem_util_pct", &nvml::GpuReading::mem_util_pct},
};
struct CounterField {
  const char* name;
  std::optional<std::uint64_t> nvml::GpuReading::*member;
};
constexpr CounterField kGpuCounters[] = {
    {"ecc_corrected", &nvml::GpuReading::ecc_corrected},
    {"ecc_uncorrected", &nvml::GpuReading::ecc_uncorrected},
    {"remapped_rows_corrected", &nvml::GpuReading::remapped_rows_corrected},
    {"remapped_rows_uncorrected", &nvml::GpuReading::remapped_rows_uncorrected},
    {"pcie_replays", &nvml::GpuReading::pcie_replays},
    {"nvlink_errors", &nvml::GpuReading::nvlink_errors},
};
constexpr ValueField<host::HostReading> kHostValues[] = {
    {"load1", &host::HostReading::load1},
    {"mem_available_bytes", &host::HostReading::mem_available_bytes},
    {"temperature_c", &host::HostReading::temperature_c},
};

json stat_json(std::vector<double> v) {
  const SampleStats s = summarize(v);
  return {{"min", s.min}, {"median", s.median}, {"max", s.max}};
}

std::vector<double> collect(std::span<const TelemetrySample> samples, auto&& get) {
  std::vector<double> v;
  for (const auto& s : samples)
    if (const std::optional<double> x = get(s)) v.push_back(*x);
  return v;
}

json summarize_gpu(std::span<const TelemetrySample> samples) {
  json g = json::object();
  json unavailable = json::array();
  for (const auto& f : kGpuValues) {
    auto v = collect(samples, [&](const TelemetrySample& s) { return s.gpu.*f.member; });
    if (v.empty())
      unavailable.push_back(f.name);
    else
      g[f.name] = stat_json(std::move(v));
  }
  std::uint64_t reasons = 0;
  bool any_reasons = false;
  for (const auto& s : samples)
    if (s.gpu.clock_event_reasons) {
      reasons |= *s.gpu.clock_event_reasons;
      any_reasons = true;
    }
  if (any_reasons) {
    g["clock_event_reasons"] = nvml::clock_event_reason_names(reasons);
    g["slowdown_reasons"] = nvml::clock_event_reason_names(reasons & nvml::kSlowdownReasons);
  } else {
    unavailable.push_back("clock_event_reasons");
  }
  for (const auto& f : kGpuCounters) {
    std::optional<std::uint64_t> first, last;
    for (const auto& s : samples)
      if (const auto& x = s.gpu.*f.member) {
        if (!first) first = *x;
        last = *x;
      }
    if (!last) {
      unavailable.push_back(f.name);
      continue;
    }
    g[f.name] = *last;
    // Volatile counters restart at zero when the driver reloads: then everything counted is new.
    g[std::string(f.name) + "_delta"] = *last >= *first ? *last - *first : *last;
  }
  std::optional<bool> pending;
  bool failure = false, any_remap = false;
  for (const auto& s : samples) {
    if (s.gpu.remap_pending) pending = *s.gpu.remap_pending;
    if (s.gpu.remap_failure) {
      failure = failure || *s.gpu.remap_failure;
      any_remap = true;
    }
  }
  if (pending) g["remap_pending"] = *pending;
  if (any_remap) g["remap_failure"] = failure;
  if (!pending) unavailable.push_back("remap_pending");
  g["unavailable"] = std::move(unavailable);
  return g;
}

json summarize_host(std::span<const TelemetrySample> samples) {
  json h = json::object();
  json unavailable = json::array();
  auto mins = collect(samples, [](const TelemetrySample& s) { return s.host.cpu_mhz_min; });
  if (mins.empty()) {
    unavailable.push_back("cpu_mhz");
  } else {
    auto medians = collect(samples, [](const TelemetrySample& s) { return s.host.cpu_mhz_median; });
    auto maxes = collect(samples, [](const TelemetrySample& s) { return s.host.cpu_mhz_max; });
    h["cpu_mhz"] = {{"min", *std::min_element(mins.begin(), mins.end())},
                    {"median", summarize(medians).median},
                    {"max", *std::max_element(maxes.begin(), maxes.end())}};
  }
  for (const auto& f : kHostValues) {
    auto v = collect(samples, [&](const TelemetrySample& s) { return s.host.*f.member; });
    if (v.empty())
      unavailable.push_back(f.name);
    else
      h[f.name] = stat_json(std::move(v));
  }
  h["unavailable"] = std::move(unavailable);
  return h;
}

bool any_gpu_value(std::span<const TelemetrySample> samples) {
  for (const auto& s : samples) {
    for (const auto& f : kGpuValues)
      if (s.gpu.*f.member) return true;
    for (const auto& f : kGpuCounters)
      if (s.gpu.*f.member) return true;
    if (s.gpu.clock_event_reasons || s.gpu.remap_pending) return true;
  }
  return false;
}

bool is_stat(const json& j) {
  return j.is_object() && j.contains("min") && j.contains("median") && j.contains("max");
}

// Combines the values at one key over ranks (see combine_telemetry).
json combine_values(const std::string& key, const std::vector<const json*>& values) {
  std::vector<const json*> present;
  std::vector<std::size_t> rank_of;
  for (std::size_t r = 0; r < values.size(); ++r)
    if (values[r] && !values[r]->is_null()) {
      present.push_back(values[r]);
      rank_of.push_back(r);
    }
  if (present.empty()) return nullptr;
  const json& first = *present.front();
  if (is_stat(first)) {
    double lo = 0, hi = 0;
    std::size_t lo_rank = 0, hi_rank = 0;
    std::vector<double> medians;
    for (std::size_t i = 0; i < present.size(); ++i) {
      const double mn = (*present[i])["min"].get<double>(), mx = (*present[i])["max"].get<double>();
      if (i == 0 || mn < lo) lo = mn, lo_rank = rank_of[i];
      if (i == 0 || mx > hi) hi = mx, hi_rank = rank_of[i];
      medians.push_back((*present[i])["median"].get<double>());
    }
    return {{"min", lo},
            {"median", summarize(medians).median},
            {"max", hi},
            {"min_rank", lo_rank},
            {"max_rank", hi_rank}};
  }
  if (first.is_object()) {
    std::set<std::string> keys;
    for (const auto* v : present)
      if (v->is_object())
        for (const auto& [k, x] : v->items()) keys.insert(k);
    json out = json::object();
    for (const auto& k : keys) {
      std::vector<const json*> sub(values.size(), nullptr);
      for (std::size_t r = 0; r < values.size(); ++r)
        if (values[r] && values[r]->is_object() && values[r]->contains(k)) sub[r] = &(*values[r])[k];
      out[k] = combine_values(k, sub);
    }
    // The window's bounds are one rank's, the first's (rank 0's): each rank's t_s counts from its own
    // sampler's start, so bounds from different ranks describe no rank's window, and one rank's clock keeps
    // consecutive results' windows in order (the HTML timeline draws them on rank 0's axis).
    for (const json* v : values)
      if (v && v->is_object() && v->contains("from_s") && v->contains("to_s") && (*v)["from_s"].is_number() &&
          (*v)["to_s"].is_number()) {
        out["from_s"] = (*v)["from_s"];
        out["to_s"] = (*v)["to_s"];
        break;
      }
    // The union of reasons loses who throttled: the ranks with a slowdown are listed so reports can name
    // them.
    if (out.contains("slowdown_reasons")) {
      json throttled = json::array();
      for (std::size_t r = 0; r < values.size(); ++r)
        if (values[r] && values[r]->is_object() && values[r]->contains("slowdown_reasons") &&
            (*values[r])["slowdown_reasons"].is_array() && !(*values[r])["slowdown_reasons"].empty())
          throttled.push_back(r);
      out["slowdown_ranks"] = std::move(throttled);
    }
    // A part missing on some rank is unavailable there: the combined part is only as available as its worst.
    if (out.contains("available")) {
      bool all = present.size() == values.size();
      for (const auto* v : present) all = all && v->value("available", true);
      out["available"] = all;
    }
    return out;
  }
  if (first.is_array()) {
    std::set<std::string> names;
    for (const auto* v : present)
      for (const auto& x : *v)
        if (x.is_string()) names.insert(x.get<std::string>());
    return json(std::vector<std::string>(names.begin(), names.end()));
  }
  if (first.is_boolean()) {
    bool any = false;
    for (const auto* v : present) any = any || (v->is_boolean() && v->get<bool>());
    return any;
  }
  if (first.is_number()) {
    // Durations: the longest; counts and counters: the total over ranks. (from_s/to_s are replaced by the
    // first rank's pair in the enclosing object; the max only stands for a bound without its partner.)
    const bool longest = key == "window_s" || key == "from_s" || key == "to_s" || key == "interval_ms";
    double acc = 0;
    bool integral = true;
    for (const auto* v : present) {
      const double x = v->get<double>();
      integral = integral && v->is_number_integer();
      acc = longest ? std::max(acc, x) : acc + x;
    }
    if (integral) return static_cast<std::uint64_t>(acc);
    return acc;
  }
  return first;  // strings (reasons, sources): the first rank's
}

}  // namespace

json summarize_telemetry(std::span<const TelemetrySample> samples) {
  json j = {{"samples", samples.size()},
            {"window_s", samples.empty() ? 0.0 : samples.back().t_s - samples.front().t_s}};
  if (any_gpu_value(samples)) j["gpu"] = summarize_gpu(samples);
  j["host"] = summarize_host(samples);
  return j;
}

json telemetry_series(std::span<const TelemetrySample> samples) {
  json t = json::array();
  for (const auto& s : samples) t.push_back(s.t_s);
  const auto column = [&](auto&& get) -> json {
    json c = json::array();
    bool any = false;
    for (const auto& s : samples) {
      const auto x = get(s);
      any = any || x.has_value();
      c.push_back(x ? json(*x) : json(nullptr));
    }
    return any ? c : json(nullptr);
  };
  json gpu = json::object(), host = json::object();
  for (const auto& f : kGpuValues)
    if (auto c = column([&](const TelemetrySample& s) { return s.gpu.*f.member; }); !c.is_null())
      gpu[f.name] = c;
  if (auto c = column([](const TelemetrySample& s) { return s.gpu.clock_event_reasons; }); !c.is_null())
    gpu["clock_event_reasons"] = c;
  if (auto c = column([](const TelemetrySample& s) { return s.host.cpu_mhz_median; }); !c.is_null())
    host["cpu_mhz"] = c;
  for (const auto& f : kHostValues)
    if (auto c = column([&](const TelemetrySample& s) { return s.host.*f.member; }); !c.is_null())
      host[f.name] = c;
  json j = {{"t_s", std::move(t)}};
  if (!gpu.empty()) j["gpu"] = std::move(gpu);
  j["host"] = std::move(host);
  return j;
}

json combine_telemetry(std::span<const json> ranks) {
  std::vector<const json*> values;
  for (const auto& r : ranks) values.push_back(&r);
  json out = combine_values("", values);
  if (out.is_null()) out = json::object();
  out["ranks"] = ranks.size();
  return out;
}

TelemetrySampler::TelemetrySampler(TelemetryOptions options, ReadFn read, json source)
    : options_(options), read_(std::move(read)), source_(std::move(source)) {
  start_ = std::chrono::steady_clock::now();
  start_unix_s_ = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  take(true);
  thread_ = std::thread([this] { run(); });
}

TelemetrySampler::~TelemetrySampler() {
  stop();
}

void TelemetrySampler::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

double TelemetrySampler::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double TelemetrySampler::take(bool counters) {
  std::lock_guard lock(samples_mutex_);
  TelemetrySample s;
  s.t_s = now_s();
  s.counters = counters;
  read_(s, counters);
  if (counters) last_counters_s_ = s.t_s;
  const double t_s = s.t_s;
  samples_.push_back(std::move(s));
  // About 29 hours at 100 ms: beyond that keep every other sample (and every counter reading) so memory
  // stays bounded on long runs.
  constexpr std::size_t kMaxSamples = std::size_t{1} << 20;
  if (samples_.size() > kMaxSamples) {
    std::size_t out = 0;
    for (std::size_t i = 0; i < samples_.size(); ++i)
      if (i % 2 == 0 || samples_[i].counters || i + 1 == samples_.size())
        samples_[out++] = std::move(samples_[i]);
    samples_.resize(out);
  }
  return t_s;
}

// take()'s own time: samples_.back() may already be the sampling thread's next sample.
double TelemetrySampler::mark() {
  return take(true);
}

void TelemetrySampler::run() {
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.interval_s));
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lock(stop_mutex_);
  while (!stop_) {
    // A late wake-up (a loaded host) skips ahead instead of sampling in a burst.
    next = std::max(next + interval, std::chrono::steady_clock::now());
    if (stop_cv_.wait_until(lock, next, [this] { return stop_; })) break;
    lock.unlock();
    double last_counters = 0;
    {
      std::lock_guard samples_lock(samples_mutex_);
      last_counters = last_counters_s_;
    }
    take(now_s() - last_counters >= options_.counters_interval_s);
    lock.lock();
  }
}

std::size_t TelemetrySampler::sample_count() const {
  std::lock_guard lock(samples_mutex_);
  return samples_.size();
}

std::vector<TelemetrySample> TelemetrySampler::samples(double from_s, double to_s) const {
  std::lock_guard lock(samples_mutex_);
  std::vector<TelemetrySample> out;
  for (const auto& s : samples_)
    if (s.t_s >= from_s && s.t_s <= to_s) out.push_back(s);
  return out;
}

json TelemetrySampler::summary(double from_s, double to_s) const {
  const auto window = samples(from_s, to_s);
  json j = summarize_telemetry(window);
  j["from_s"] = from_s;
  j["to_s"] = to_s;
  j["interval_ms"] = options_.interval_s * 1e3;
  j["source"] = source_;
  // A GPU whose telemetry could not be read says why, in place of its values.
  if (source_.contains("gpu") && !source_["gpu"].value("available", false))
    j["gpu"] = {{"available", false}, {"reason", source_["gpu"].value("reason", "unavailable")}};
  else if (j.contains("gpu"))
    j["gpu"]["available"] = true;
  if (options_.mode == TelemetryMode::full) j["series"] = telemetry_series(window);
  return j;
}

std::unique_ptr<TelemetrySampler> make_telemetry_sampler(const TelemetryOptions& options,
                                                         const DeviceInfo& device,
                                                         const std::filesystem::path& host_root) {
  auto reader = std::make_shared<host::HostReader>(host_root, host::affinity_cpus());
  json source = {
      {"host",
       {{"cpus", reader->cpus().size()},
        {"cpu_clock", reader->has_cpufreq() ? "cpufreq scaling_cur_freq" : "/proc/cpuinfo (1/s)"}}}};
  std::optional<nvml::Device> gpu;
  if (device.kind == "gpu") {
    const auto library = nvml::Library::open();
    std::string why = library->reason();
    if (library->available()) gpu = library->device(device.pci_bus_id, device.index, &why);
    if (gpu) {
      const auto limits = gpu->limits();
      source["gpu"] = {{"available", true}, {"library", library->path()}, {"name", limits.name}};
    } else {
      source["gpu"] = {{"available", false}, {"reason", why}};
    }
  }
  auto read = [reader, gpu](TelemetrySample& s, bool counters) {
    if (gpu) s.gpu = gpu->read(counters);
    s.host = reader->read(counters);
  };
  return std::make_unique<TelemetrySampler>(options, std::move(read), std::move(source));
}

}  // namespace fb
