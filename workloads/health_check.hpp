#pragma once
// `factorybench health`: a per-rank pre-flight check, seconds long, that says whether a node can take a
// job: device, free memory, ECC, row remaps, a short GEMM against the expected throughput, clocks and
// power limit under that load, hardware slowdown reasons, a short all-reduce with an exact check, and the
// checkpoint directory's write bandwidth. Each check of each rank is pass / warn / fail / skip with a
// reason. Measures and returns data; never prints (reports/health_console.cpp does).
//
// Report shape (docs/health.md): one Result per rank per check, benchmark "health", name
// "<check>/rank<R>", status ok (pass, warn), failed (fail) or skipped (skip), error = the reason of a fail
// or skip, extra = {"verdict", "reason"}; summary["health"] = {"verdict", "ranks": [...]}.
//
// Supervisor hook (resilience --preflight): run_health_checks inside a job gives every rank every rank's
// verdict; health_from_report reads the verdicts back from a `factorybench health --output` report when the
// supervisor ran the check as a separate job.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "core/nvml_loader.hpp"
#include "core/telemetry_sampler.hpp"
#include "reports/report.hpp"
#include "workloads/device_peak.hpp"

namespace fb::workloads {

enum class Verdict { pass, warn, fail, skip };
std::string_view to_string(Verdict v);
Verdict parse_verdict(std::string_view text);  // input Error otherwise
// The rank's verdict from its checks: fail if any failed, else warn if any warned, else pass (a skipped
// check is no evidence either way).
Verdict combine_verdicts(std::span<const Verdict> checks);

// The checks, in the order every rank runs them.
inline constexpr std::string_view kHealthChecks[] = {
    "device", "memory", "ecc", "row_remap", "gemm", "clocks", "slowdown", "allreduce", "checkpoint_dir"};

struct CheckOutcome {
  std::string check;  // one of kHealthChecks
  Verdict verdict = Verdict::pass;
  std::string reason;  // why it warned, failed or was skipped; for a pass, what was seen
  std::vector<std::pair<std::string, reports::Metric>> metrics;
};

struct RankHealth {
  int rank = 0;
  std::string host;
  std::string device;  // "NVIDIA H200" or the CPU model
  Verdict verdict = Verdict::pass;
  std::vector<CheckOutcome> checks;
  const CheckOutcome* find(std::string_view check) const;
  // "checkpoint_dir: cannot create ...; gemm: ..." for the failed (then warned) checks.
  std::string reasons(Verdict which) const;
};

struct HealthOptions {
  std::string expect_gpu;  // "", or a comma-separated list of H100, H200, B200, GB200, GB300 (any matches)
  // Pass the GEMM at or above floor x the expected throughput (gemm_expectation). Unset: the device
  // class's floor (configs/hardware health.gemm_floor), else kDefaultGemmFloor.
  std::optional<double> gemm_floor;
  std::int64_t gemm_size = 0;          // m = n = k; 0 = 8192 (cuda) or 768 (host)
  std::uint64_t allreduce_bytes = 0;   // 0 = 256 MiB (cuda) or 4 MiB (host)
  std::uint64_t checkpoint_bytes = 0;  // written and fsync'ed; 0 = 256 MiB (cuda) or 32 MiB (host)
  std::filesystem::path checkpoint_dir = ".";
  double min_free_memory = 0.5;  // fail below this fraction of device (host) memory free; warn below 0.9
  // The job-level floor on the all-reduce's bus bandwidth (--allreduce-floor, GB/s). A slow rank or link
  // slows the collective for every rank alike, so it cannot fail one node: it fails the job (HealthRun::job)
  // and leaves the ranks' verdicts alone; `locate` finds the culprit. Unset: no floor.
  std::optional<double> allreduce_floor_gbps;
  // Test hook (FACTORYBENCH_TEST_READONLY_CKPT_RANK): this rank checks a read-only directory instead.
  std::optional<int> readonly_checkpoint_rank;
  // Test hook (FACTORYBENCH_TEST_SLOW_GEMM_RANK): this rank runs every GEMM kSlowGemmRepeat times, a
  // genuinely slow rank.
  std::optional<int> slow_gemm_rank;
  std::uint64_t seed = 42;
  // Called on rank 0 after each check has been gathered from every rank, with every rank's checks so far
  // (in rank order, each rank's verdict over them): what a report written before the end (a signal, a
  // hang) keeps.
  std::function<void(const std::vector<RankHealth>&)> on_checks;
};

inline constexpr double kDefaultGemmFloor = 0.8;
inline constexpr int kSlowGemmRepeat = 8;

// What a rank's GEMM is judged against, per device class: on GPUs the MAMF of the hardware table (the best
// achievable matmul others measured; the dense peak when the table has none); on the host, the median of
// the job's ranks running the same OpenBLAS GEMM on the same share of cores (a calibration on this
// machine, not the FMA peak, which OpenBLAS reaches only in part). `rank_tflops`: every rank's figure
// (0 = that rank failed to measure). nullopt when there is nothing to judge against.
struct GemmExpectation {
  double tflops = 0;
  std::string basis;  // "MAMF 783.5 (H200 SXM)", "median of 2 ranks"
};
std::optional<GemmExpectation> gemm_expectation(const DevicePeak& peak, const std::string& dtype,
                                                std::span<const double> rank_tflops);
// The floor in force: --gemm-floor, else the device class's, else kDefaultGemmFloor.
double gemm_floor(const HealthOptions& options, const DevicePeak& peak);

// The clocks check's thresholds, fractions: a power limit below power_limit_fail of the default fails,
// below power_limit_warn warns; a clock under load below clock_under_load_warn of the max warns. The device
// class may set each (configs/hardware health.*): a site that caps power on purpose sets its cap.
struct ClockThresholds {
  double power_limit_fail = 0.75;
  double power_limit_warn = 0.95;
  double clock_under_load_warn = 0.7;
};
ClockThresholds clock_thresholds(const DevicePeak& peak);

// The clocks verdict from the readings: the clock under load (the GEMM window's median, else a reading
// now) against the max clock (warn below t.clock_under_load_warn), after the power-limit findings so far
// (`verdict`, `problems`, `seen`, and `o`'s metrics). `unit_name`: "SM clock" or "CPU clock".
CheckOutcome clocks_outcome(const char* unit_name, Verdict verdict, std::vector<std::string> problems,
                            std::vector<std::string> seen, CheckOutcome o, std::optional<double> max_clock,
                            std::optional<double> load_clock, const ClockThresholds& t = {});

// The cuda path's NVML verdicts, from the device and the GEMM window's telemetry summary (nullopt: none):
// `clocks` (power limit vs default, SM clock under load vs max) and `slowdown` (active hardware slowdown
// reasons now or during the GEMM). Exposed for the scripted-NVML tests (tests/fakes/fake_nvml.c).
CheckOutcome gpu_clocks_outcome(const nvml::Device& gpu, const std::optional<nlohmann::json>& window,
                                const ClockThresholds& t = {});
CheckOutcome gpu_slowdown_outcome(const nvml::Device& gpu, const std::optional<nlohmann::json>& window);

// Usage Errors naming the option (--expect-gpu, --gemm-floor, --gemm-size, --min-free-memory,
// --allreduce-floor).
void validate_health_options(const HealthOptions& options);

struct HealthRun {
  std::vector<RankHealth> ranks;  // rank 0: every rank, in rank order; other ranks: their own only
  std::vector<Verdict> verdicts;  // every rank: each rank's verdict (index = rank)
  // Every rank: the job-level all-reduce floor's outcome (check "allreduce_floor"), when one was set.
  std::optional<CheckOutcome> job;
  bool all_pass() const;  // no rank failed (warnings pass); the job-level check aside
  bool passed() const;    // all_pass() and the job-level check did not fail: the command's exit status
  std::vector<int> failed_ranks() const;
};

// The job-level verdict on the all-reduce: the median of the ranks' bus bandwidths (NaN: that rank did not
// measure it) against `floor_gbps`. Fail below it, naming the figure, the floor and the slowest rank (a
// hint, not a verdict on that rank: every rank waits for the slowest link); skip when no rank measured.
CheckOutcome allreduce_floor_outcome(std::span<const double> rank_busbw_gbps, double floor_gbps);

// Collective over the world. `telemetry` (may be null) gives the clocks and clock-event reasons during
// the GEMM; without it only the readings before and after are used.
HealthRun run_health_checks(MpiContext& mpi, Backend& backend, const DevicePeak& peak,
                            const HealthOptions& options, TelemetrySampler* telemetry = nullptr);

// A check's outcome (workloads/health_report.cpp holds the report side).
CheckOutcome make_outcome(std::string_view check, Verdict verdict, std::string reason);
// One rank's health (one check's outcome) as JSON and back: what the ranks gather to rank 0.
nlohmann::json health_rank_to_json(const RankHealth& rank);
RankHealth health_rank_from_json(const nlohmann::json& j);
nlohmann::json check_outcome_to_json(const CheckOutcome& check);
CheckOutcome check_outcome_from_json(const nlohmann::json& j);

// Rank 0: the report's results (one per rank per check) and summary["health"].
std::vector<reports::Result> health_results(const HealthRun& run);
nlohmann::json health_summary(const HealthRun& run, const HealthOptions& options);
// The per-rank verdicts of a health report (results of benchmark "health"), in rank order; an input Error
// naming the result when one is malformed.
std::vector<RankHealth> health_from_report(const reports::Report& report);

// True when `device_name` ("NVIDIA H100 80GB HBM3") names the model `expected` ("H100"): a whole word
// of the name (split at spaces and '-'), case-insensitive, so B200 does not match "NVIDIA GB200".
bool gpu_model_matches(std::string_view device_name, std::string_view expected);
// "H100 or H200" for the --expect-gpu list "H100,H200".
std::string expected_models_text(std::string_view expected);

}  // namespace fb::workloads
