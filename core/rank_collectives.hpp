#pragma once
// The ranks' own bookkeeping collectives: agreeing on a flag, a deadline or a checksum, gathering per-rank
// figures for the report. Not the benchmarked traffic (core/communicator.hpp carries that, timed and numbered
// for the hang watchdog); these run on the host over MPI_COMM_WORLD (or the node's ranks) so that workloads
// and resilience hold no raw MPI calls. Implemented for int, std::int64_t, std::uint64_t, double and char.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/mpi_context.hpp"

namespace fb {

enum class RankReduce { sum, min, max, all, any };  // all/any: logical AND/OR of non-zero values

// In place, over every rank of the world.
template <class T>
void allreduce(const MpiContext& mpi, std::span<T> values, RankReduce op);
// Rank `root`'s values to every rank.
template <class T>
void broadcast(const MpiContext& mpi, std::span<T> values, int root = 0);
// The node's first rank's values to the ranks of its node.
template <class T>
void broadcast_in_node(const MpiContext& mpi, std::span<T> values);
// Every rank's `mine` (same length on all ranks), rank after rank, on every rank / on rank 0 (empty
// elsewhere).
template <class T>
std::vector<T> allgather(const MpiContext& mpi, std::span<const T> mine);
template <class T>
std::vector<T> gather_to_root(const MpiContext& mpi, std::span<const T> mine);

// One value each.
template <class T>
T allreduce(const MpiContext& mpi, T value, RankReduce op) {
  allreduce(mpi, std::span<T>(&value, 1), op);
  return value;
}
template <class T>
void broadcast(const MpiContext& mpi, T& value, int root = 0) {
  broadcast(mpi, std::span<T>(&value, 1), root);
}
template <class T>
std::vector<T> allgather(const MpiContext& mpi, const T& value) {
  return allgather(mpi, std::span<const T>(&value, 1));
}
template <class T>
std::vector<T> gather_to_root(const MpiContext& mpi, const T& value) {
  return gather_to_root(mpi, std::span<const T>(&value, 1));
}
// Strings of any length: rank 0 gets every rank's (index = rank), the others an empty vector.
std::vector<std::string> gather_to_root(const MpiContext& mpi, const std::string& value);

// Work each rank does on its own that may fail on some ranks only (reading its host's files), with the
// outcome agreed: when a usage or input Error stops any rank, every rank throws one, rank 0's with the first
// failing rank's reason (rank 0 prints usage and input errors); else it returns on every rank. Without it
// the ranks that passed would wait forever in the next collective for those that stopped. Runtime Errors
// pass through at once (main aborts the job for them).
void agree_on_errors(const MpiContext& mpi, const std::function<void()>& work);
// The same for work with a result.
template <class F>
auto agreed(const MpiContext& mpi, F&& work) {
  std::optional<decltype(work())> out;
  agree_on_errors(mpi, [&] { out.emplace(work()); });
  return std::move(*out);
}

}  // namespace fb
