#include "core/mpi_context.hpp"

#include "core/call_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "core/mpi_handles.hpp"

namespace fb {

struct MpiContext::Handles {
  MPI_Comm node = MPI_COMM_NULL;
};

struct MpiHandlesAccess {
  static MPI_Comm node(const MpiContext& mpi) { return mpi.handles_->node; }
};

MPI_Comm node_comm(const MpiContext& mpi) {
  return MpiHandlesAccess::node(mpi);
}

void abort_job_if_shared(int code) {
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len));
}

MpiContext::MpiContext(int* argc, char*** argv) : handles_(std::make_unique<Handles>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // Helper threads (watchdog, telemetry, async checkpoints) never call MPI: FUNNELED is enough.
    FB_CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    owns_init_ = true;
  }
  // Errors come back as codes and become exceptions, rather than aborting inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  FB_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  FB_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  // The process's numbered calls (an injected hang, the watchdog's states) are those of this world rank,
  // whatever communicator makes them: NCCL's, or none (burnin's check gathers).
  CallLog::instance().set_world_rank(rank_);
  FB_CHECK_MPI(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &handles_->node));
  FB_CHECK_MPI(MPI_Comm_rank(handles_->node, &local_rank_));
  FB_CHECK_MPI(MPI_Comm_size(handles_->node, &local_size_));
  // Under srun, SLURM_LOCALID is the index Slurm's GPU binding (--gpus-per-task, --gpu-bind) uses.
  if (const int slurm_local = slurm_task_local_id(rank_); all_true(slurm_local >= 0))
    local_rank_ = slurm_local;

  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  hostname_ = name;
  std::vector<char> all(static_cast<std::size_t>(size_) * sizeof(name));
  FB_CHECK_MPI(
      MPI_Allgather(name, sizeof(name), MPI_CHAR, all.data(), sizeof(name), MPI_CHAR, MPI_COMM_WORLD));
  hostnames_.reserve(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r)
    hostnames_.emplace_back(all.data() + static_cast<std::size_t>(r) * sizeof(name));
  apply_fake_hosts();
}

// FACTORYBENCH_FAKE_HOSTS=H (tests, issue 17): the world is cut into H contiguous blocks of ranks, each
// called "<real host>-fakeN", so one machine can stand in for H nodes when grouping ranks by host.
// The local rank (the GPU a rank would use) becomes the index within its block.
void MpiContext::apply_fake_hosts() {
  const char* env = std::getenv("FACTORYBENCH_FAKE_HOSTS");
  if (!env || !*env) return;
  char* end = nullptr;
  const long hosts = std::strtol(env, &end, 10);
  if (*end != '\0' || hosts < 1 || hosts > size_ || size_ % hosts != 0)
    throw usage_error("invalid FACTORYBENCH_FAKE_HOSTS '" + std::string(env) +
                      "': expected a number of hosts that divides the world size " + std::to_string(size_));
  const int per_host = size_ / static_cast<int>(hosts);
  for (int r = 0; r < size_; ++r)
    hostnames_[static_cast<std::size_t>(r)] += "-fake" + std::to_string(r / per_host);
  hostname_ = hostnames_[static_cast<std::size_t>(rank_)];
  local_rank_ = rank_ % per_host;
  local_size_ = per_host;
}

MpiContext::~MpiContext() {
  if (handles_->node != MPI_COMM_NULL) MPI_Comm_free(&handles_->node);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_init_ && !finalized) MPI_Finalize();
}

std::vector<std::string> MpiContext::unique_hosts() const {
  std::vector<std::string> out;
  for (const auto& h : hostnames_)
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  return out;
}

void MpiContext::barrier() const {
  WaitScope wait("barrier");
  FB_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

void MpiContext::barrier_sleeping(int poll_ms) const {
  WaitScope wait("barrier");
  MPI_Request request;
  FB_CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  for (int done = 0;;) {
    FB_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
}

bool MpiContext::all_true(bool ok) const {
  WaitScope wait("allreduce");
  int local = ok ? 1 : 0, global = 0;
  FB_CHECK_MPI(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
  return global != 0;
}

std::uint64_t MpiContext::words_digest(std::span<const std::string> words) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const auto& w : words) {
    for (unsigned char c : w) hash = (hash ^ c) * 1099511628211ull;
    hash = (hash ^ 0xFFu) * 1099511628211ull;
  }
  return hash;
}

void MpiContext::require_same_arguments(std::span<const std::string> args) const {
  if (!same_on_all_ranks(words_digest(args)))
    throw usage_error(
        "the ranks were started with different arguments; every rank must run the same command");
}

void MpiContext::require_same_content(std::uint64_t digest, const std::string& what) const {
  if (!same_on_all_ranks(digest))
    throw usage_error("the ranks loaded different " + what + "; every rank must read the same files");
}

// Min and max over the ranks differ iff some rank's value differs.
bool MpiContext::same_on_all_ranks(std::uint64_t value) const {
  std::uint64_t lo = 0, hi = 0;
  FB_CHECK_MPI(MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD));
  FB_CHECK_MPI(MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD));
  return lo == hi;
}

int slurm_task_local_id(int mpi_rank) {
  const char* procid = std::getenv("SLURM_PROCID");
  const char* localid = std::getenv("SLURM_LOCALID");
  if (!procid || !localid || std::atoi(procid) != mpi_rank) return -1;
  return std::atoi(localid);
}

namespace {

struct LauncherPlace {
  int rank = 0;
  std::optional<int> size;
};

// This process's rank (and the world's size) as its launcher set them, when it started more than one process.
std::optional<LauncherPlace> place_among_peers() {
  // A rank counts only with the launcher's world size beside it, above one: a variable left over from an
  // outer job (SLURM_PROCID=1 in a task's shell, without SLURM_NTASKS) must not make a process that is
  // alone keep its errors and its report to itself. PMIx sets no size variable; Open MPI's comes with it.
  static constexpr std::pair<const char*, const char*> kVars[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMIX_RANK", nullptr},
      {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (const auto& [rank_var, size_var] : kVars) {
    const char* rank = std::getenv(rank_var);
    if (!rank) continue;
    LauncherPlace place{std::atoi(rank), std::nullopt};
    if (size_var) {
      const char* size = std::getenv(size_var);
      if (!size && std::string_view(rank_var) == "SLURM_PROCID") size = std::getenv("SLURM_NPROCS");
      if (!size || std::atoi(size) <= 1) continue;
      place.size = std::atoi(size);
    }
    return place;
  }
  return std::nullopt;
}

}  // namespace

int launcher_rank() {
  const auto place = place_among_peers();
  return place ? place->rank : 0;
}

bool launched_with_peers() {
  return place_among_peers().has_value();
}

std::optional<int> launcher_world_size() {
  const auto place = place_among_peers();
  return place ? place->size : std::nullopt;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  if (const auto nl = s.find_first_of(",\n"); nl != std::string::npos) s.resize(nl);
  return s;
}

}  // namespace fb
