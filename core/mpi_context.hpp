#pragma once
// The MPI runtime: init/finalize (RAII), world and node-local ranks, host names. Works without mpirun as a
// world of one process (MPI singleton init). <mpi.h> stays inside core: its handles are for core's own
// .cpp files (core/mpi_handles.hpp); other layers use rank_collectives.hpp and communicator.hpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fb {

class MpiContext {
 public:
  MpiContext(int* argc, char*** argv);
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  bool is_root() const { return rank_ == 0; }
  // FACTORYBENCH_FAKE_HOSTS=H splits the world into H "hosts" for tests (mpi_context.cpp).
  const std::string& hostname() const { return hostname_; }
  // Host name of every rank, index = world rank.
  const std::vector<std::string>& hostnames() const { return hostnames_; }
  // Distinct host names in order of first appearance.
  std::vector<std::string> unique_hosts() const;

  void barrier() const;
  // A barrier that waits with sleeps of `poll_ms` instead of busy-polling, so waiting ranks leave the cores
  // to the ranks still working (the supervisor's idle ranks, the p2p matrix's ranks outside the measured
  // pair).
  void barrier_sleeping(int poll_ms) const;
  // Stops with a usage Error on every rank when the ranks were not started with identical arguments, which
  // would otherwise deadlock in mismatched collectives.
  void require_same_arguments(std::span<const std::string> args) const;
  // Throws a usage Error on every rank unless all ranks pass the same value: "the ranks loaded different
  // <what>; every rank must read the same files" (a config directory that differs between hosts).
  void require_same_content(std::uint64_t digest, const std::string& what) const;
  // FNV-1a over `words` with a separator after each: the digest require_same_arguments compares, for
  // callers that check other lists of words the same way (a suite's steps).
  static std::uint64_t words_digest(std::span<const std::string> words);
  // True on every rank when `ok` is true on every rank (logical AND), so all ranks take the same branch.
  bool all_true(bool ok) const;

 private:
  void apply_fake_hosts();
  bool same_on_all_ranks(std::uint64_t value) const;

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool owns_init_ = false;
  struct Handles;  // the node communicator (mpi_context.cpp)
  std::unique_ptr<Handles> handles_;
  friend struct MpiHandlesAccess;
  std::string hostname_;
  std::vector<std::string> hostnames_;
};

// The rank the launcher assigned (Open MPI, PMIx, Slurm, MPICH), read from the environment before MPI is
// initialised, so usage errors are printed once. 0 when not launched by one.
int launcher_rank();
// Whether a launcher started this process among others (a world of more than one rank, by its environment).
bool launched_with_peers();
// The launcher's world size, where its environment gives one (PMIx alone sets none), above one.
std::optional<int> launcher_world_size();

// SLURM_LOCALID when this process is task `mpi_rank` of an srun step (SLURM_PROCID == mpi_rank), else -1.
// Ranks that mpirun started inside an allocation inherit the batch step's SLURM_LOCALID=0 and fail the check.
int slurm_task_local_id(int mpi_rank);

// After an error: when MPI runs with more than one rank, MPI_Abort the job with `code` so that no rank waits
// forever for this one; returns when MPI is not running or this is a world of one.
void abort_job_if_shared(int code);

// "Open MPI v4.1.4, ..." first line of MPI_Get_library_version (needs no initialised MPI).
std::string mpi_library_version();

}  // namespace fb
