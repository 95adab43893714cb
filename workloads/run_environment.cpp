#include "workloads/run_environment.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/build_info.hpp"
#include "core/git_commit.hpp"
#include "core/library_versions.hpp"
#include "core/rank_collectives.hpp"
#include "core/system_info.hpp"
#include "kernels/device_probe.hpp"

namespace fb::workloads {

using nlohmann::json;

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms));
}

std::string version_line() {
  const auto v = library_versions();
  std::string cuda = build::kCuda
                         ? fmt::format("cuda {}, driver {}, cublasLt {}, nccl {}, cudnn attention {}",
                                       v.cuda_runtime, v.cuda_driver, v.cublaslt, v.nccl, v.cudnn)
                         : std::string("cuda: off");
  // The commit tells two builds of one version apart (tool.git_commit in every report).
  return fmt::format("factorybench {} (commit {}; {}; {}; {})", build::kVersion, build::kGitCommit, cuda,
                     v.mpi_short, kernels::blas_library_info());
}

namespace {

json device_json(const DeviceInfo& d) {
  json j{{"kind", d.kind},
         {"name", d.name},
         {"index", d.index},
         {"multiprocessors", d.multiprocessors},
         {"memory_bytes", d.memory_bytes}};
  if (!d.compute_capability.empty()) j["compute_capability"] = d.compute_capability;
  if (d.clock_mhz) j["clock_mhz"] = d.clock_mhz;
  if (d.memory_clock_mhz) j["memory_clock_mhz"] = d.memory_clock_mhz;
  if (!d.uuid.empty()) j["uuid"] = d.uuid;
  if (!d.pci_bus_id.empty()) j["pci_bus_id"] = d.pci_bus_id;
  return j;
}

std::string new_run_id() {
  std::random_device rd;
  return fmt::format("{}-{:08x}", utc_timestamp().substr(0, 19), rd());
}

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// run.slurm: where Slurm placed the job (absent outside Slurm). Collective: local_ids holds every rank's
// SLURM_LOCALID (index = world rank; all -1 unless every rank is an srun task: mpirun inside an allocation).
std::optional<json> slurm_json(const MpiContext* mpi) {
  const char* job = env_or_null("SLURM_JOB_ID");
  if (!job) job = env_or_null("SLURM_JOBID");
  const double local_id = slurm_task_local_id(mpi ? mpi->rank() : 0);
  std::vector<double> local_ids{local_id};
  if (mpi) local_ids = gather_to_root(*mpi, local_id);
  int any = job ? 1 : 0;
  if (mpi) any = allreduce(*mpi, any, RankReduce::any);
  if (!any || (mpi && !mpi->is_root())) return std::nullopt;
  json s{{"job_id", job ? job : ""}};
  // Field -> the variables that carry it, first found wins (srun sets the STEP_ ones, sbatch the JOB_ ones).
  struct Field {
    const char* name;
    std::vector<const char*> vars;
    bool integer;
  };
  const Field fields[] = {
      {"step_id", {"SLURM_STEP_ID", "SLURM_STEPID"}, false},
      {"nodelist", {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}, false},
      {"step_nodelist", {"SLURM_STEP_NODELIST"}, false},
      {"num_nodes", {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}, true},
      {"ntasks", {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, true},
      {"cluster", {"SLURM_CLUSTER_NAME"}, false},
      {"partition", {"SLURM_JOB_PARTITION"}, false},
      {"job_name", {"SLURM_JOB_NAME"}, false},
      {"restart_count", {"SLURM_RESTART_COUNT"}, true},
      {"array_job_id", {"SLURM_ARRAY_JOB_ID"}, false},
      {"array_task_id", {"SLURM_ARRAY_TASK_ID"}, false},
  };
  for (const auto& f : fields) {
    for (const char* var : f.vars) {
      const char* v = env_or_null(var);
      if (!v) continue;
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (!f.integer)
        s[f.name] = v;
      else if (*end == '\0')
        s[f.name] = n;
      break;
    }
  }
  // The same rule as MpiContext's local rank: SLURM_LOCALID counts only when every rank is an srun task.
  const bool all_tasks = std::none_of(local_ids.begin(), local_ids.end(), [](double id) { return id < 0; });
  json ids = json::array();
  for (double id : local_ids) ids.push_back(all_tasks ? static_cast<int>(id) : -1);
  s["local_ids"] = ids;
  return s;
}

}  // namespace

reports::Report begin_report(const MpiContext* mpi, const Backend* backend, const std::string& command_line,
                             const DevicePeak* peak) {
  reports::Report report;
  const auto versions = library_versions();
  report.tool = json{{"name", "factorybench"},
                     {"version", build::kVersion},
                     {"git_commit", build::kGitCommit},
                     {"features", version_line()}};
  const HostInfo host = read_host_info();
  const int world = mpi ? mpi->size() : 1;
  json hosts = json::array();
  if (mpi)
    for (const auto& h : mpi->unique_hosts()) hosts.push_back(h);
  else
    hosts.push_back(host.hostname);
  std::string run_id = new_run_id();
  if (mpi) {  // one id for the whole job: rank 0's
    char buf[64] = {};
    run_id.copy(buf, sizeof(buf) - 1);
    broadcast(*mpi, std::span<char>(buf));
    run_id = buf;
  }
  report.run = json{{"id", run_id},
                    {"command", command_line},
                    {"started_at", utc_timestamp()},
                    {"finished_at", ""},
                    {"world_size", world},
                    {"hosts", hosts},
                    {"backend", backend ? std::string(to_string(backend->kind())) : std::string("none")}};
  if (auto slurm = slurm_json(mpi)) report.run["slurm"] = std::move(*slurm);
  json system{
      {"cpu", {{"model", host.cpu_model}, {"cores", host.cpu_cores_online}, {"max_mhz", host.cpu_max_mhz}}},
      {"memory_bytes", host.memory_bytes},
      {"os", host.os},
      {"kernel", host.kernel},
      {"mpi", versions.mpi},
      {"openblas", kernels::blas_library_info()}};
  if (build::kCuda) {
    system["cuda"] = versions.cuda_runtime;
    system["driver"] = versions.cuda_driver;
    system["cublas"] = versions.cublaslt;
    system["nccl"] = versions.nccl;
    system["cudnn"] = versions.cudnn;  // the cuDNN attention engine: version, "off" or why it is unavailable
  }
  if (backend) {
    json mine{{"host", host.hostname}, {"device", device_json(backend->device())}};
    if (mpi) {
      mine["host"] = mpi->hostname();  // the job's view of the host (FACTORYBENCH_FAKE_HOSTS names it too)
      mine["rank"] = mpi->rank();
      mine["local_rank"] = mpi->local_rank();
      const auto all = gather_to_root(*mpi, mine.dump());
      json ranks = json::array();
      for (const auto& s : all) ranks.push_back(json::parse(s));
      system["ranks"] = ranks;
    } else {
      mine["rank"] = 0;
      mine["local_rank"] = 0;
      system["ranks"] = json::array({mine});
    }
  }
  if (peak) {
    json values = json::object();
    for (const auto& [k, v] : peak->tflops) values[k] = v;
    system["peak_tflops"] = json{{"source", peak->source}, {"measured", peak->measured}, {"values", values}};
    // MAMF (maximum achievable matmul FLOPS, published per GPU): the realistic ceiling the HTML GEMM chart
    // and the health check set beside the datasheet peak.
    if (!peak->mamf_tflops.empty()) {
      json mamf = json::object();
      for (const auto& [k, v] : peak->mamf_tflops) mamf[k] = v;
      system["peak_tflops"]["mamf"] = mamf;
    }
  }
  report.system = std::move(system);
  return report;
}

void finish_report(reports::Report& report) {
  report.run["finished_at"] = utc_timestamp();
}

}  // namespace fb::workloads
