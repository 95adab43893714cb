// The device-state checks of `health` (health_checks.hpp).
#include "workloads/health_checks.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/host_telemetry.hpp"
#include "core/nvml_loader.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"

namespace fb::workloads::health {

using nlohmann::json;
using reports::Better;
using reports::Metric;

namespace {

constexpr double kWarnFreeMemory = 0.9;  // below this fraction free: someone else holds memory

// The GEMM window's telemetry summary, if the sampler ran during it.
std::optional<json> gemm_window(const Context& c) {
  if (!c.telemetry || !c.gemm_from_s || !c.gemm_to_s) return std::nullopt;
  return c.telemetry->summary(*c.gemm_from_s, *c.gemm_to_s);
}

}  // namespace

CheckOutcome check_device(Context& c) {
  const DeviceInfo d = c.backend.device();
  const auto& expect = c.options.expect_gpu;
  CheckOutcome o;
  if (!c.cuda) {
    o = expect.empty() ? outcome("device", Verdict::pass,
                                 fmt::format("{} ({} cores for this rank)", d.name, d.multiprocessors))
                       : outcome("device", Verdict::fail,
                                 fmt::format("expected an {} but the host backend has no GPU (CPU: {})",
                                             expected_models_text(expect), d.name));
  } else if (!expect.empty() && !gpu_model_matches(d.name, expect)) {
    o = outcome(
        "device", Verdict::fail,
        fmt::format("expected an {} but device {} is '{}'", expected_models_text(expect), d.index, d.name));
  } else if (!c.gpu) {
    o = outcome("device", Verdict::warn,
                fmt::format("{} visible, but {}: ECC, row-remap, clock and slowdown checks are skipped",
                            d.name, nvml_skip(c)));
  } else {
    o = outcome("device", Verdict::pass,
                fmt::format("{} (device {}, cc {}, {} SMs, {})", d.name, d.index, d.compute_capability,
                            d.multiprocessors, format_bytes(d.memory_bytes)));
  }
  o.metrics.emplace_back("multiprocessors", metric(d.multiprocessors, "count", Better::none));
  o.metrics.emplace_back("memory_bytes", metric(static_cast<double>(d.memory_bytes), "bytes", Better::none));
  return o;
}

CheckOutcome check_memory(Context& c) {
  std::uint64_t total = 0, free = 0;
  std::string what;
  if (c.cuda) {
    total = c.backend.device().memory_bytes;
    free = c.backend.free_memory_bytes();
    if (c.gpu) {  // NVML sees what other processes hold too, before this one allocates
      const auto l = c.gpu->limits();
      if (l.memory_total_bytes && l.memory_free_bytes)
        total = *l.memory_total_bytes, free = *l.memory_free_bytes;
    }
    what = "device memory";
  } else {
    const auto m = host::read_meminfo("/");
    if (!m) return outcome("memory", Verdict::skip, "/proc/meminfo is unreadable");
    total = m->total_bytes;
    free = m->available_bytes;
    what = "host memory (MemAvailable)";
  }
  if (total == 0) return outcome("memory", Verdict::skip, "total memory unknown");
  const double fraction = static_cast<double>(free) / static_cast<double>(total);
  const std::string seen =
      fmt::format("{} of {} {} free ({})", format_bytes(free), format_bytes(total), what, percent(fraction));
  CheckOutcome o =
      fraction < c.options.min_free_memory
          ? outcome("memory", Verdict::fail,
                    fmt::format("only {}, below --min-free-memory {}: another process holds memory", seen,
                                c.options.min_free_memory))
      : fraction < kWarnFreeMemory
          ? outcome("memory", Verdict::warn,
                    fmt::format("only {} (below {})", seen, percent(kWarnFreeMemory)))
          : outcome("memory", Verdict::pass, seen);
  o.metrics.emplace_back("free_bytes", metric(static_cast<double>(free), "bytes", Better::higher));
  o.metrics.emplace_back("free_fraction", metric(fraction, "fraction", Better::higher));
  return o;
}

CheckOutcome check_ecc(Context& c) {
  std::optional<std::uint64_t> corrected, uncorrected;
  std::string since;
  if (c.cuda) {
    if (!c.gpu) return outcome("ecc", Verdict::skip, nvml_skip(c));
    const auto r = c.gpu->read(true);
    corrected = r.ecc_corrected;
    uncorrected = r.ecc_uncorrected;
    if (!uncorrected)
      return outcome("ecc", Verdict::skip, "ECC counters unavailable (ECC disabled or not supported)");
    since = "volatile ECC (since driver load)";
  } else {
    const auto e = host::read_edac("/");
    if (!e) return outcome("ecc", Verdict::skip, "no EDAC memory-controller counters on this host");
    corrected = e->corrected;
    uncorrected = e->uncorrected;
    since = fmt::format("EDAC, {} memory controller(s)", e->controllers);
  }
  CheckOutcome o =
      *uncorrected > 0
          ? outcome("ecc", Verdict::fail,
                    fmt::format("{} uncorrected memory errors ({})", *uncorrected, since))
          : outcome("ecc", Verdict::pass,
                    fmt::format("0 uncorrected, {} corrected ({})", corrected.value_or(0), since));
  o.metrics.emplace_back("uncorrected", metric(static_cast<double>(*uncorrected), "count", Better::lower));
  if (corrected)
    o.metrics.emplace_back("corrected", metric(static_cast<double>(*corrected), "count", Better::lower));
  return o;
}

CheckOutcome check_row_remap(Context& c) {
  if (!c.cuda) return outcome("row_remap", Verdict::skip, "no row remapping on the host backend");
  if (!c.gpu) return outcome("row_remap", Verdict::skip, nvml_skip(c));
  const auto r = c.gpu->read(true);
  if (!r.remap_pending) return outcome("row_remap", Verdict::skip, "row remapping not supported by this GPU");
  CheckOutcome o =
      *r.remap_pending
          ? outcome("row_remap", Verdict::fail, "a row remap is pending: reset the GPU to apply it")
      : r.remap_failure.value_or(false)
          ? outcome("row_remap", Verdict::fail, "row remapping failed: the GPU is out of spare rows")
          : outcome(
                "row_remap", Verdict::pass,
                fmt::format("none pending; {} rows remapped for uncorrectable, {} for correctable errors",
                            r.remapped_rows_uncorrected.value_or(0), r.remapped_rows_corrected.value_or(0)));
  o.metrics.emplace_back(
      "rows_uncorrectable",
      metric(static_cast<double>(r.remapped_rows_uncorrected.value_or(0)), "count", Better::lower));
  o.metrics.emplace_back(
      "rows_correctable",
      metric(static_cast<double>(r.remapped_rows_corrected.value_or(0)), "count", Better::lower));
  return o;
}

CheckOutcome check_clocks(Context& c) {
  const auto window = gemm_window(c);
  if (c.cuda)
    return c.gpu ? gpu_clocks_outcome(*c.gpu, window, clock_thresholds(c.peak))
                 : outcome("clocks", Verdict::skip, nvml_skip(c));
  const auto max_clock = host::read_cpu_max_mhz("/", host::affinity_cpus());
  if (!(window && (*window)["host"].contains("cpu_mhz"))) {
    // No sample during the GEMM (--telemetry off): a reading now is an idle clock, shown but not judged as
    // the clock under load (a CPU that clocked down after the work would warn for nothing).
    const auto mhz = host::read_cpu_mhz("/", host::affinity_cpus());
    auto o =
        outcome("clocks", Verdict::skip,
                mhz.empty() ? std::string("no CPU clock readings")
                            : fmt::format("CPU clock {:.0f} MHz idle, not under load: no telemetry sample "
                                          "during the GEMM (--telemetry off); not judged",
                                          summarize(mhz).median));
    if (!mhz.empty())
      o.metrics.emplace_back("clock_idle_mhz", metric(summarize(mhz).median, "MHz", Better::none));
    if (max_clock) o.metrics.emplace_back("max_clock_mhz", metric(*max_clock, "MHz", Better::none));
    return o;
  }
  const std::optional<double> load_clock = (*window)["host"]["cpu_mhz"]["median"].get<double>();
  CheckOutcome o =
      clocks_outcome("CPU clock", Verdict::pass, {}, {}, {}, max_clock, load_clock, clock_thresholds(c.peak));
  // Without cpufreq's maximum (a VM, a container) nothing was compared: a skip that shows the clock, not a
  // pass that checked nothing.
  if (o.verdict == Verdict::pass && !(max_clock && *max_clock > 0)) {
    o.verdict = Verdict::skip;
    o.reason += "; no maximum clock (cpufreq cpuinfo_max_freq) to hold it to";
  }
  return o;
}

CheckOutcome check_slowdown(Context& c) {
  if (!c.cuda) return outcome("slowdown", Verdict::skip, "no clock-event reasons on the host backend");
  if (!c.gpu) return outcome("slowdown", Verdict::skip, nvml_skip(c));
  return gpu_slowdown_outcome(*c.gpu, gemm_window(c));
}

}  // namespace fb::workloads::health
