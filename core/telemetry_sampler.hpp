#pragma once
// What the hardware did while a benchmark ran: a background thread samples the GPU (NVML) and the host
// (/proc, /sys) every --telemetry-interval, and summarises any window of the run (clocks, temperature,
// power, clock-event reasons, ECC / row-remap / PCIe / NVLink error deltas). The JSON shapes are described
// in docs/health.md. Core knows nothing of reports: workloads/telemetry_report.hpp puts these into Results.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/host_telemetry.hpp"
#include "core/nvml_loader.hpp"

namespace fb {

enum class TelemetryMode { off, summary, full };
std::string_view to_string(TelemetryMode mode);
// off|summary|full; a usage Error naming --telemetry otherwise.
TelemetryMode parse_telemetry_mode(std::string_view text);

struct TelemetryOptions {
  TelemetryMode mode = TelemetryMode::summary;
  double interval_s = 0.1;  // --telemetry-interval
  double counters_interval_s =
      1.0;  // error counters (many more NVML calls) are read this often, and at marks
};

struct TelemetrySample {
  double t_s = 0;         // seconds since the sampler was created
  bool counters = false;  // the error counters were read in this sample
  nvml::GpuReading gpu;   // empty without a GPU or NVML
  host::HostReading host;
};

// Pure functions of samples in time order (the sampler's, or a test's).
// Per-rank summary: {"samples", "window_s", "gpu": {...}, "host": {...}} (fields in docs/health.md); a
// value no sample had is listed in the part's "unavailable" array instead.
nlohmann::json summarize_telemetry(std::span<const TelemetrySample> samples);
// Columnar series: {"t_s": [...], "gpu": {"sm_clock_mhz": [...], ...}, "host": {...}}, null where a sample
// lacked the value; columns with no value at all are left out.
nlohmann::json telemetry_series(std::span<const TelemetrySample> samples);
// One summary from every rank's (same shape): min of minima, max of maxima, median of medians, sums of
// deltas, union of reasons and of unavailable values, `available` only when available on every rank;
// window_s is the longest, from_s/to_s the first rank's window (on its clock: ranks' clocks start apart).
// Stat objects gain "min_rank" / "max_rank" (index into `ranks`) so the outlier can be named, and a part with
// "slowdown_reasons" gains "slowdown_ranks".
nlohmann::json combine_telemetry(std::span<const nlohmann::json> ranks);

class TelemetrySampler {
 public:
  // Fills a sample's gpu/host readings; `counters` asks for the error counters too. Called from the
  // sampling thread and from mark(), never concurrently.
  using ReadFn = std::function<void(TelemetrySample& sample, bool counters)>;

  // `source` describes what is sampled (kept in every summary). Starts sampling at once.
  TelemetrySampler(TelemetryOptions options, ReadFn read, nlohmann::json source);
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  // Takes a sample now, with counters, and returns its time: the bounds of a measured interval, so even a
  // window shorter than the interval has readings at both ends.
  double mark();
  void stop();  // joins the thread (idempotent); summaries stay available

  const TelemetryOptions& options() const { return options_; }
  const nlohmann::json& source() const { return source_; }
  double start_unix_s() const { return start_unix_s_; }
  std::size_t sample_count() const;

  // Samples with from_s <= t_s <= to_s.
  std::vector<TelemetrySample> samples(double from_s, double to_s) const;
  // summarize_telemetry of the window plus "from_s", "to_s", "interval_ms", "source", and in full mode
  // "series".
  nlohmann::json summary(double from_s, double to_s) const;

 private:
  void run();
  double take(bool counters);  // returns the sample's t_s
  double now_s() const;

  TelemetryOptions options_;
  ReadFn read_;
  nlohmann::json source_;
  std::chrono::steady_clock::time_point start_;
  double start_unix_s_ = 0;
  double last_counters_s_ = -1e300;

  mutable std::mutex samples_mutex_;  // guards samples_ and serialises read_
  std::vector<TelemetrySample> samples_;

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The sampler for a rank's device: NVML for a "gpu" device (matched by PCI bus id, else index; the reason
// is recorded in source()["gpu"] when NVML or the device is unavailable) plus the host, for the CPUs of
// this process's affinity mask. `host_root` is "/" except in tests.
std::unique_ptr<TelemetrySampler> make_telemetry_sampler(const TelemetryOptions& options,
                                                         const DeviceInfo& device,
                                                         const std::filesystem::path& host_root = "/");

}  // namespace fb
