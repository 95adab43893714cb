#include "workloads/health_check.hpp"
#include "workloads/health_checks.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include <fmt/format.h>

#include "core/call_log.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/nvml_loader.hpp"
#include "core/rank_collectives.hpp"
#include "core/units.hpp"

namespace fb::workloads {

using nlohmann::json;
using namespace health;

namespace {

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

namespace {

std::vector<std::string> split_models(std::string_view list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto end = list.find(',', start);
    out.emplace_back(
        list.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

bool one_model_matches(std::string_view device_name, std::string_view expected) {
  const auto upper = [](std::string_view s) {
    std::string u(s);
    for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return u;
  };
  const std::string name = upper(device_name), want = upper(expected);
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

}  // namespace

bool gpu_model_matches(std::string_view device_name, std::string_view expected) {
  if (expected.empty()) return true;
  for (const auto& model : split_models(expected))
    if (one_model_matches(device_name, model)) return true;
  return false;
}

std::string expected_models_text(std::string_view expected) {
  const auto models = split_models(expected);
  std::string out;
  for (std::size_t i = 0; i < models.size(); ++i)
    out += (i == 0 ? "" : i + 1 == models.size() ? " or " : ", ") + models[i];
  return out;
}

void validate_health_options(const HealthOptions& o) {
  if (!o.expect_gpu.empty()) {
    std::vector<std::string> seen;
    for (const auto& model : split_models(o.expect_gpu)) {
      if (std::find(std::begin(kGpuModels), std::end(kGpuModels), model) == std::end(kGpuModels))
        throw usage_error(
            fmt::format("invalid --expect-gpu '{}': '{}' is not A100, H100, GH200, H200, B200, GB200 or "
                        "GB300 (several: H100,H200)",
                        o.expect_gpu, model));
      if (std::find(seen.begin(), seen.end(), model) != seen.end())
        throw usage_error(fmt::format("invalid --expect-gpu '{}': '{}' named twice", o.expect_gpu, model));
      seen.push_back(model);
    }
  }
  if (o.gemm_floor && !(*o.gemm_floor >= 0 && *o.gemm_floor <= 1))
    throw usage_error(fmt::format("invalid --gemm-floor {}: must be a fraction in [0, 1]", *o.gemm_floor));
  if (o.gemm_size < 0 || o.gemm_size > 65536)
    throw usage_error(fmt::format("invalid --gemm-size {}: must be in [1, 65536]", o.gemm_size));
  if (o.allreduce_bytes > (std::uint64_t{64} << 30))
    throw usage_error(
        fmt::format("invalid --allreduce-size {}: at most 64 GiB", format_bytes(o.allreduce_bytes)));
  if (!(o.min_free_memory >= 0 && o.min_free_memory <= 1))
    throw usage_error(
        fmt::format("invalid --min-free-memory {}: must be a fraction in [0, 1]", o.min_free_memory));
  if (o.checkpoint_dir.empty()) throw usage_error("invalid --checkpoint-dir '': must name a directory");
  // 100 TB/s is beyond any interconnect built (GB200 NVL72 all-reduce busbw is about 0.85 TB/s).
  if (o.allreduce_floor_gbps && !(*o.allreduce_floor_gbps > 0 && *o.allreduce_floor_gbps <= 1e5))
    throw usage_error(fmt::format("invalid --allreduce-floor {}: must be a bus bandwidth in (0, 100000] GB/s",
                                  *o.allreduce_floor_gbps));
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

  read_checkpoint_dir_space(c);  // before the first gather: no rank has written its scratch file yet
  RankHealth mine;
  mine.rank = mpi.rank();
  mine.host = mpi.hostname();
  mine.device = device.name;
  // Each check is gathered to rank 0 as it is taken (a few hundred bytes per rank, seconds apart), so that a
  // report written before the end (a signal, a hang in a later check) keeps every rank's checks before it.
  // Every rank takes the same checks, so the gathers pair up.
  HealthRun run;
  for (const auto& text : gather_to_root(mpi, health_rank_to_json(mine).dump()))
    run.ranks.push_back(health_rank_from_json(json::parse(text)));
  std::vector<Verdict> verdicts;
  for (const auto& [name, fn] : kChecks) {
    log::debug("health: {}", name);
    mine.checks.push_back(guarded(name, c, fn));
    verdicts.push_back(mine.checks.back().verdict);
    const std::string outcome = check_outcome_to_json(mine.checks.back()).dump();
    // One numbered call per check, as burnin's (the hang watchdog's unit): a rank stuck inside a check (a
    // GEMM that never returns, a write to a hung file system) never enters it while the others wait in it,
    // and is named after --hang-timeout instead of stalling the job until the scheduler's limit.
    const CallScope call("health_check", outcome.size());
    const auto texts = gather_to_root(mpi, outcome);
    for (std::size_t r = 0; r < texts.size(); ++r) {
      auto& rank = run.ranks[r];
      rank.checks.push_back(check_outcome_from_json(json::parse(texts[r])));
      rank.verdict = combine_verdicts(std::vector<Verdict>{rank.verdict, rank.checks.back().verdict});
    }
    if (options.on_checks && mpi.is_root()) options.on_checks(run.ranks);
  }
  mine.verdict = combine_verdicts(verdicts);

  for (const double v : allgather(mpi, static_cast<double>(static_cast<int>(mine.verdict))))
    run.verdicts.push_back(static_cast<Verdict>(static_cast<int>(v)));
  if (options.allreduce_floor_gbps) {
    double busbw = std::numeric_limits<double>::quiet_NaN();
    if (const auto* ar = mine.find("allreduce"); ar && ar->verdict != Verdict::fail)
      for (const auto& [name, m] : ar->metrics)
        if (name == "busbw_gbps") busbw = m.value;
    run.job = allreduce_floor_outcome(allgather(mpi, busbw), *options.allreduce_floor_gbps);
  }
  if (!mpi.is_root()) run.ranks = {std::move(mine)};
  return run;
}

}  // namespace fb::workloads
