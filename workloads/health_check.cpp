#include "workloads/health_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/communicator.hpp"
#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/host_telemetry.hpp"
#include "core/nvml_loader.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "kernels/gemm_engine.hpp"
#include "kernels/host/gemm_reference.hpp"
#include "workloads/collective_bandwidth.hpp"
#include "workloads/collective_check.hpp"
#include "workloads/gemm_benchmark.hpp"
#include "workloads/gemm_flops.hpp"
#include "workloads/measurement_loop.hpp"

namespace fb::workloads {

using nlohmann::json;
using reports::Better;
using reports::Metric;

namespace {

constexpr std::string_view kGpuModels[] = {"H100", "H200", "B200", "GB200", "GB300"};
constexpr double kWarnFreeMemory = 0.9;  // below this fraction free: someone else holds memory

Metric metric(double value, std::string unit, Better better) {
  return {value, std::move(unit), better, std::nullopt};
}

CheckOutcome outcome(std::string_view check, Verdict verdict, std::string reason) {
  return make_outcome(check, verdict, std::move(reason));
}

std::string percent(double fraction) {
  return fmt::format("{:.0f}%", fraction * 100.0);
}

// Everything one rank's checks share.
struct Context {
  Context(MpiContext& m, Backend& b, const DevicePeak& p, const HealthOptions& o, TelemetrySampler* t)
      : mpi(m), backend(b), peak(p), options(o), telemetry(t) {}
  MpiContext& mpi;
  Backend& backend;
  const DevicePeak& peak;
  const HealthOptions& options;
  TelemetrySampler* telemetry;
  bool cuda = false;
  std::shared_ptr<nvml::Library> nvml;
  std::optional<nvml::Device> gpu;
  std::string nvml_reason;                       // why `gpu` is empty on cuda
  std::optional<double> gemm_from_s, gemm_to_s;  // the GEMM's telemetry window
};

std::string nvml_skip(const Context& c) {
  return "NVML unavailable: " + c.nvml_reason;
}

CheckOutcome check_device(Context& c) {
  const DeviceInfo d = c.backend.device();
  const auto& expect = c.options.expect_gpu;
  CheckOutcome o;
  if (!c.cuda) {
    o = expect.empty() ? outcome("device", Verdict::pass,
                                 fmt::format("{} ({} cores for this rank)", d.name, d.multiprocessors))
                       : outcome("device", Verdict::fail,
                                 fmt::format("expected an {} but the host backend has no GPU (CPU: {})",
                                             expect, d.name));
  } else if (!expect.empty() && !gpu_model_matches(d.name, expect)) {
    o = outcome("device", Verdict::fail,
                fmt::format("expected an {} but device {} is '{}'", expect, d.index, d.name));
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

// The test hook's slow rank: every GEMM runs kSlowGemmRepeat times, so the rank is slow for real.
class RepeatingEngine final : public kernels::GemmEngine {
 public:
  RepeatingEngine(std::unique_ptr<kernels::GemmEngine> inner, int repeat)
      : inner_(std::move(inner)), repeat_(repeat) {}
  std::string name() const override { return inner_->name(); }
  DType dtype() const override { return inner_->dtype(); }
  bool emulated() const override { return inner_->emulated(); }
  kernels::GemmPlanInfo prepare(const kernels::GemmProblem& p, const void* a, const void* b, void* c,
                                const kernels::GemmScales& s) override {
    return inner_->prepare(p, a, b, c, s);
  }
  void run(const kernels::GemmProblem& p, const void* a, const void* b, void* c,
           const kernels::GemmScales& s) override {
    for (int i = 0; i < repeat_; ++i) inner_->run(p, a, b, c, s);
  }

 private:
  std::unique_ptr<kernels::GemmEngine> inner_;
  int repeat_;
};

// This rank's GEMM through the gemm benchmark's measurement (buffer rotation, the shared loop, the fp64
// check on 64 samples).
GemmMeasurement measure_health_gemm(Context& c, const GemmCase& gc) {
  const auto& d = c.backend.defaults();
  kernels::GemmEngineOptions eo;
  eo.autotune = 4;
  eo.local_ranks = c.mpi.local_size();
  eo.workspace_bytes = d.gemm.workspace_bytes;
  std::unique_ptr<kernels::GemmEngine> engine = kernels::make_gemm_engine(c.backend, gc.problem.dtype, eo);
  if (c.options.slow_gemm_rank == c.mpi.rank())
    engine = std::make_unique<RepeatingEngine>(std::move(engine), kSlowGemmRepeat);
  GemmRunOptions o;
  o.warmup = d.health.gemm_warmup;
  o.iters = d.health.gemm_iters;
  o.autotune = eo.autotune;
  o.check_samples = 64;
  o.seed = c.options.seed;
  o.telemetry = c.telemetry;
  GemmMeasurement m = measure_gemm_case(c.mpi, c.backend, *engine, gc, o, 0);
  if (engine->emulated()) m.plan.algo += " (emulated)";
  return m;
}

CheckOutcome check_gemm(Context& c) {
  GemmCase gc;
  gc.problem.dtype = c.backend.defaults().gemm.dtype;
  gc.problem.m = gc.problem.n = gc.problem.k =
      c.options.gemm_size ? c.options.gemm_size : c.backend.defaults().health.gemm_dim;
  gc.name = gemm_case_name(gc.problem);
  // Every rank reaches the gather below, whatever happened to its own measurement.
  std::optional<GemmMeasurement> m;
  std::string error;
  try {
    m = measure_health_gemm(c, gc);
  } catch (const std::exception& e) {
    error = e.what();
  }
  const double flops = gemm_flops(gc.problem.m, gc.problem.n, gc.problem.k, 1);
  const SampleStats stats = m ? summarize(m->seconds) : SampleStats{};
  const double median_s = stats.median;
  const double tflops = m && median_s > 0 ? flops / median_s / 1e12 : 0;
  const double cpu_tflops =
      m && m->cpu_seconds > 0 ? flops * static_cast<double>(m->seconds.size()) / m->cpu_seconds / 1e12 : 0;
  // The host class is judged per CPU-second: on a shared, loaded machine wall time also counts the time a
  // rank waited for a core (up to 8x on the 2-core CI machine), which says nothing of the rank's health;
  // the CPU time of the same GEMM does, and a slow core or a rank doing more work shows in it.
  const double judged = c.peak.measured ? cpu_tflops : tflops;
  const auto rank_tflops = allgather(c.mpi, judged);
  if (!m) return outcome("gemm", Verdict::fail, error);
  c.gemm_from_s = m->timed_from_s;
  c.gemm_to_s = m->timed_to_s;

  const std::string name(to_string(gc.problem.dtype));
  const std::string shape =
      fmt::format("{} {}x{}x{}{}", name, gc.problem.m, gc.problem.n, gc.problem.k,
                  m->plan.algo.find("(emulated)") != std::string::npos ? " (emulated)" : "");
  CheckOutcome o;
  o.metrics = {{"tflops", metric(tflops, "TFLOP/s", Better::higher)},
               {"cpu_tflops", metric(cpu_tflops, "TFLOP/s", Better::higher)},
               {"time_us", metric(median_s * 1e6, "us", Better::lower)},
               {"buffer_sets", metric(m->sets, "count", Better::none)}};
  // A wrong product is a broken device, whatever its speed.
  o.check = "gemm";
  if (!m->check.ok()) {
    o.verdict = Verdict::fail;
    o.reason = fmt::format("{}: wrong result, {} of {} samples off: {}", shape, m->check.mismatches,
                           m->check.checked, m->check.detail);
    return o;
  }
  const auto expected = gemm_expectation(c.peak, name, rank_tflops);
  if (!expected) {
    o.verdict = Verdict::warn;
    o.reason = fmt::format("{}: {:.3g} TFLOP/s, not judged: no {} expectation ({})", shape, tflops, name,
                           c.peak.source);
    return o;
  }
  const double floor = gemm_floor(c.options, c.peak);
  const double required = floor * expected->tflops;
  const std::string what = c.peak.measured ? "per CPU-second" : "median";
  const std::string floor_from = c.options.gemm_floor ? "--gemm-floor"
                                 : c.peak.health_gemm_floor
                                     ? fmt::format("the {} class floor", c.peak.class_name)
                                     : "the default floor";
  const std::string seen =
      fmt::format("{}: {:.3g} TFLOP/s {} = {:.2f} x the expected {:.3g} ({})", shape, judged, what,
                  judged / expected->tflops, expected->tflops, expected->basis);
  o.verdict = judged >= required ? Verdict::pass : Verdict::fail;
  o.reason = judged >= required ? fmt::format("{}; floor {:.3g}", seen, required)
                                : fmt::format("{}, below the floor {:.3g} = {} {} x expected", seen, required,
                                              floor_from, floor);
  o.metrics.emplace_back("expected_tflops", metric(expected->tflops, "TFLOP/s", Better::none));
  o.metrics.emplace_back("expected_fraction", metric(judged / expected->tflops, "fraction", Better::higher));
  o.metrics.emplace_back("required_tflops", metric(required, "TFLOP/s", Better::none));
  if (const auto peak = c.peak.for_dtype(name); peak && *peak > 0)
    o.metrics.emplace_back("peak_fraction", metric(tflops / *peak, "fraction", Better::higher));
  return o;
}

// The GEMM window's telemetry summary, if the sampler ran during it.
std::optional<json> gemm_window(const Context& c) {
  if (!c.telemetry || !c.gemm_from_s || !c.gemm_to_s) return std::nullopt;
  return c.telemetry->summary(*c.gemm_from_s, *c.gemm_to_s);
}

CheckOutcome check_clocks(Context& c) {
  const auto window = gemm_window(c);
  if (c.cuda)
    return c.gpu ? gpu_clocks_outcome(*c.gpu, window) : outcome("clocks", Verdict::skip, nvml_skip(c));
  std::optional<double> load_clock;
  if (window && (*window)["host"].contains("cpu_mhz"))
    load_clock = (*window)["host"]["cpu_mhz"]["median"].get<double>();
  else if (const auto mhz = host::read_cpu_mhz("/", host::affinity_cpus()); !mhz.empty())
    load_clock = summarize(mhz).median;
  return clocks_outcome("CPU clock", Verdict::pass, {}, {}, {},
                        host::read_cpu_max_mhz("/", host::affinity_cpus()), load_clock);
}

CheckOutcome check_slowdown(Context& c) {
  if (!c.cuda) return outcome("slowdown", Verdict::skip, "no clock-event reasons on the host backend");
  if (!c.gpu) return outcome("slowdown", Verdict::skip, nvml_skip(c));
  return gpu_slowdown_outcome(*c.gpu, gemm_window(c));
}

CheckOutcome check_allreduce(Context& c) {
  const DType type = DType::fp32;
  const std::uint64_t bytes =
      c.options.allreduce_bytes ? c.options.allreduce_bytes : c.backend.defaults().health.allreduce_bytes;
  const std::size_t count = std::max<std::size_t>(1, bytes / dtype_bytes(type));
  const std::size_t size_bytes = count * dtype_bytes(type);
  const int n = c.mpi.size();
  const CheckPattern pattern(type, ReduceOp::sum, n);
  std::vector<unsigned char> input(size_bytes), output(size_bytes);
  for (std::size_t i = 0; i < count; ++i)
    store_element(input.data(), type, i, pattern.reduce_input(c.mpi.rank(), i));
  // Every rank must reach the collective or none: agree that the buffers exist first.
  std::string why;
  DeviceBuffer send, recv;
  try {
    send = c.backend.allocate(size_bytes);
    recv = c.backend.allocate(size_bytes);
    c.backend.copy_to_device(send, input.data(), size_bytes);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!c.mpi.all_true(why.empty()))
    return outcome("allreduce", Verdict::fail,
                   why.empty() ? "not run: another rank could not allocate its buffers" : "not run: " + why);
  auto comm = make_communicator(c.mpi, c.backend);
  MeasureLoop loop;
  loop.warmup = 2;
  loop.iters = 5;
  loop.before_timing = loop.after_timing = [&] { comm->synchronize(); };
  const Measurement timed = measure(
      c.backend, loop, [&](int) { comm->allreduce(send.data(), recv.data(), count, type, ReduceOp::sum); });
  c.backend.copy_to_host(output.data(), recv, size_bytes);
  std::size_t wrong = 0;
  std::string first;
  for (std::size_t i = 0; i < count; ++i) {
    const double got = load_element(output.data(), type, i), expected = pattern.reduce_expected(i);
    if (pattern.matches(got, expected)) continue;
    if (wrong++ == 0) first = fmt::format("element {}: got {} expected {}", i, got, expected);
  }
  const double t = timed.stats.median;
  const double busbw = algbw_gbps(size_bytes, t) * bus_factor(CollectiveOp::allreduce, n);
  const std::string what =
      fmt::format("{} fp32 sum over {} rank(s) ({})", format_bytes(size_bytes), n, comm->engine());
  CheckOutcome o =
      wrong ? outcome("allreduce", Verdict::fail,
                      fmt::format("{}: {} of {} elements wrong, first {}", what, wrong, count, first))
            : outcome("allreduce", Verdict::pass, fmt::format("{}: exact, busbw {:.2f} GB/s", what, busbw));
  o.metrics.emplace_back("busbw_gbps", metric(busbw, "GB/s", Better::higher));
  o.metrics.emplace_back("time_us", metric(t * 1e6, "us", Better::lower));
  o.metrics.emplace_back("wrong_elements", metric(static_cast<double>(wrong), "count", Better::lower));
  return o;
}

// The test hook's read-only directory: a fresh 0555 directory, or /sys when running as root, whom
// permission bits do not stop (sysfs refuses to create files for anyone).
std::filesystem::path readonly_directory(bool& remove_after) {
  remove_after = false;
  if (geteuid() == 0) return "/sys";
  auto dir = std::filesystem::temp_directory_path() / fmt::format("factorybench-readonly-{}", getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                   std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                   std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  remove_after = true;
  return dir;
}

CheckOutcome check_checkpoint_dir(Context& c) {
  std::filesystem::path dir = c.options.checkpoint_dir;
  std::string label = fmt::format("checkpoint dir '{}'", dir.string());
  bool remove_after = false;
  if (c.options.readonly_checkpoint_rank == c.mpi.rank()) {
    dir = readonly_directory(remove_after);
    label = fmt::format("checkpoint dir '{}' (test hook FACTORYBENCH_TEST_READONLY_CKPT_RANK)", dir.string());
  }
  struct Cleanup {
    std::filesystem::path dir;
    bool remove;
    ~Cleanup() {
      if (!remove) return;
      std::error_code ec;
      std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir, remove_after};

  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return outcome("checkpoint_dir", Verdict::fail, label + " is not a directory");
  const std::uint64_t bytes =
      c.options.checkpoint_bytes ? c.options.checkpoint_bytes : c.backend.defaults().health.checkpoint_bytes;
  const auto host = c.mpi.hostname();
  const auto file = dir / fmt::format(".factorybench-health-{}-r{}-{}.tmp", host, c.mpi.rank(), getpid());
  const int fd = ::open(file.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0)
    return outcome("checkpoint_dir", Verdict::fail,
                   fmt::format("{} is not writable: cannot create {}: {}", label, file.filename().string(),
                               std::strerror(errno)));
  // Random data, so a compressing or deduplicating file system does not flatter the figure.
  std::vector<std::uint64_t> chunk((std::min<std::uint64_t>(bytes, 4ull << 20) + 7) / 8);
  SplitMix64 rng(derive_seed(c.options.seed, 0xC4E0 + static_cast<std::uint64_t>(c.mpi.rank())));
  for (auto& w : chunk) w = rng.next();
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t done = 0; done < bytes && error.empty();) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, chunk.size() * 8));
    const ssize_t w = ::write(fd, chunk.data(), n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      error = fmt::format("write failed after {}: {}", format_bytes(done), std::strerror(errno));
    else
      done += static_cast<std::uint64_t>(w);
  }
  if (error.empty() && ::fsync(fd) != 0) error = fmt::format("fsync failed: {}", std::strerror(errno));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  ::unlink(file.c_str());
  if (!error.empty()) return outcome("checkpoint_dir", Verdict::fail, label + ": " + error);
  const double gbps = static_cast<double>(bytes) / seconds / 1e9;
  CheckOutcome o =
      outcome("checkpoint_dir", Verdict::pass,
              fmt::format("{}: {} written and fsync'ed at {:.2f} GB/s", label, format_bytes(bytes), gbps));
  o.metrics.emplace_back("write_gbps", metric(gbps, "GB/s", Better::higher));
  o.metrics.emplace_back("write_bytes", metric(static_cast<double>(bytes), "bytes", Better::none));
  if (struct statvfs fs{}; ::statvfs(dir.c_str(), &fs) == 0)
    o.metrics.emplace_back(
        "free_bytes",
        metric(static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize), "bytes", Better::higher));
  return o;
}

// Runs one check; an error in it fails that check, not the whole run.
CheckOutcome guarded(std::string_view check, Context& c, CheckOutcome (*fn)(Context&)) {
  try {
    CheckOutcome o = fn(c);
    o.check = std::string(check);
    return o;
  } catch (const std::exception& e) {
    return outcome(check, Verdict::fail, e.what());
  }
}

}  // namespace

bool gpu_model_matches(std::string_view device_name, std::string_view expected) {
  const auto upper = [](std::string_view s) {
    std::string u(s);
    for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return u;
  };
  const std::string name = upper(device_name), want = upper(expected);
  if (want.empty()) return true;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = name.find_first_of(" -_", start);
    const std::string_view word =
        std::string_view(name).substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (word == want) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

void validate_health_options(const HealthOptions& o) {
  if (!o.expect_gpu.empty() &&
      std::find(std::begin(kGpuModels), std::end(kGpuModels), o.expect_gpu) == std::end(kGpuModels))
    throw usage_error(
        fmt::format("invalid --expect-gpu '{}': expected H100, H200, B200, GB200 or GB300", o.expect_gpu));
  if (o.gemm_floor && !(*o.gemm_floor >= 0 && *o.gemm_floor <= 1))
    throw usage_error(fmt::format("invalid --gemm-floor {}: must be a fraction in [0, 1]", *o.gemm_floor));
  if (o.gemm_size < 0)
    throw usage_error(fmt::format("invalid --gemm-size {}: must be positive", o.gemm_size));
  if (!(o.min_free_memory >= 0 && o.min_free_memory <= 1))
    throw usage_error(
        fmt::format("invalid --min-free-memory {}: must be a fraction in [0, 1]", o.min_free_memory));
  if (o.checkpoint_dir.empty()) throw usage_error("invalid --checkpoint-dir '': must name a directory");
}

HealthRun run_health_checks(MpiContext& mpi, Backend& backend, const DevicePeak& peak,
                            const HealthOptions& options, TelemetrySampler* telemetry) {
  Context c(mpi, backend, peak, options, telemetry);
  const DeviceInfo device = backend.device();
  c.cuda = device.kind == "gpu";  // NVML's device readings, else the host's
  if (c.cuda) {
    c.nvml = nvml::Library::open();
    c.nvml_reason = c.nvml->reason();
    if (c.nvml->available()) c.gpu = c.nvml->device(device.pci_bus_id, device.index, &c.nvml_reason);
  }
  using Fn = CheckOutcome (*)(Context&);
  static constexpr std::pair<std::string_view, Fn> kChecks[] = {{"device", check_device},
                                                                {"memory", check_memory},
                                                                {"ecc", check_ecc},
                                                                {"row_remap", check_row_remap},
                                                                {"gemm", check_gemm},
                                                                {"clocks", check_clocks},
                                                                {"slowdown", check_slowdown},
                                                                {"allreduce", check_allreduce},
                                                                {"checkpoint_dir", check_checkpoint_dir}};
  static_assert(std::size(kChecks) == std::size(kHealthChecks));

  RankHealth mine;
  mine.rank = mpi.rank();
  mine.host = mpi.hostname();
  mine.device = device.name;
  std::vector<Verdict> verdicts;
  for (const auto& [name, fn] : kChecks) {
    mine.checks.push_back(guarded(name, c, fn));
    verdicts.push_back(mine.checks.back().verdict);
  }
  mine.verdict = combine_verdicts(verdicts);

  HealthRun run;
  for (const double v : allgather(mpi, static_cast<double>(static_cast<int>(mine.verdict))))
    run.verdicts.push_back(static_cast<Verdict>(static_cast<int>(v)));
  const auto all = gather_to_root(mpi, health_rank_to_json(mine).dump());
  if (mpi.is_root())
    for (const auto& text : all) run.ranks.push_back(health_rank_from_json(json::parse(text)));
  else
    run.ranks.push_back(std::move(mine));
  return run;
}

}  // namespace fb::workloads
