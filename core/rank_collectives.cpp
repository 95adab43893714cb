#include "core/rank_collectives.hpp"

#include "core/call_log.hpp"

#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "core/mpi_handles.hpp"

namespace fb {
namespace {

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, int>) return MPI_INT;
  if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  if constexpr (std::is_same_v<T, std::uint64_t>) return MPI_UINT64_T;
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  if constexpr (std::is_same_v<T, char>) return MPI_CHAR;
}

MPI_Op mpi_op(RankReduce op) {
  switch (op) {
    case RankReduce::sum:
      return MPI_SUM;
    case RankReduce::min:
      return MPI_MIN;
    case RankReduce::max:
      return MPI_MAX;
    case RankReduce::all:
      return MPI_LAND;
    case RankReduce::any:
      return MPI_LOR;
  }
  return MPI_SUM;
}

int count(std::size_t n) {
  return static_cast<int>(n);
}

}  // namespace

template <class T>
void allreduce(const MpiContext& mpi, std::span<T> values, RankReduce op) {
  WaitScope wait("allreduce");
  FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values.data(), count(values.size()), mpi_type<T>(), mpi_op(op),
                             world_comm(mpi)));
}

template <class T>
void broadcast(const MpiContext& mpi, std::span<T> values, int root) {
  WaitScope wait("broadcast");
  FB_CHECK_MPI(MPI_Bcast(values.data(), count(values.size()), mpi_type<T>(), root, world_comm(mpi)));
}

template <class T>
void broadcast_in_node(const MpiContext& mpi, std::span<T> values) {
  FB_CHECK_MPI(MPI_Bcast(values.data(), count(values.size()), mpi_type<T>(), 0, node_comm(mpi)));
}

template <class T>
std::vector<T> allgather(const MpiContext& mpi, std::span<const T> mine) {
  WaitScope wait("allgather");
  std::vector<T> out(mine.size() * static_cast<std::size_t>(mpi.size()));
  FB_CHECK_MPI(MPI_Allgather(mine.data(), count(mine.size()), mpi_type<T>(), out.data(), count(mine.size()),
                             mpi_type<T>(), world_comm(mpi)));
  return out;
}

template <class T>
std::vector<T> gather_to_root(const MpiContext& mpi, std::span<const T> mine) {
  WaitScope wait("gather");
  std::vector<T> out(mpi.is_root() ? mine.size() * static_cast<std::size_t>(mpi.size()) : 0);
  FB_CHECK_MPI(MPI_Gather(mine.data(), count(mine.size()), mpi_type<T>(), out.data(), count(mine.size()),
                          mpi_type<T>(), 0, world_comm(mpi)));
  return out;
}

std::vector<std::string> gather_to_root(const MpiContext& mpi, const std::string& value) {
  const auto size = static_cast<std::size_t>(mpi.size());
  const int len = count(value.size());
  std::vector<int> lens(mpi.is_root() ? size : 0), offsets(lens.size());
  FB_CHECK_MPI(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, world_comm(mpi)));
  std::vector<char> all;
  if (mpi.is_root()) {
    std::exclusive_scan(lens.begin(), lens.end(), offsets.begin(), 0);
    all.resize(static_cast<std::size_t>(offsets.back() + lens.back()));
  }
  FB_CHECK_MPI(MPI_Gatherv(value.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0,
                           world_comm(mpi)));
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lens.size(); ++r)
    out.emplace_back(all.data() + offsets[r], static_cast<std::size_t>(lens[r]));
  return out;
}

void agree_on_errors(const MpiContext& mpi, const std::function<void()>& work) {
  std::string error;
  ErrorKind kind = ErrorKind::input;
  try {
    work();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::runtime) throw;
    error = e.what();
    kind = e.kind();
  }
  if (mpi.size() > 1) {
    const auto errors = gather_to_root(mpi, error);
    if (mpi.all_true(error.empty())) return;
    for (std::size_t r = 1; r < errors.size() && error.empty(); ++r)  // rank 0's own error first
      if (!errors[r].empty())
        error = fmt::format("{} (on rank {}; each rank reads its own files)", errors[r], r);
    if (error.empty()) error = "stopped with another rank, whose input failed its check";
  }
  if (!error.empty()) throw Error(kind, error);
}

#define FB_RANK_COLLECTIVES(T)                                                 \
  template void allreduce<T>(const MpiContext&, std::span<T>, RankReduce);     \
  template void broadcast<T>(const MpiContext&, std::span<T>, int);            \
  template void broadcast_in_node<T>(const MpiContext&, std::span<T>);         \
  template std::vector<T> allgather<T>(const MpiContext&, std::span<const T>); \
  template std::vector<T> gather_to_root<T>(const MpiContext&, std::span<const T>);
FB_RANK_COLLECTIVES(int)
FB_RANK_COLLECTIVES(std::int64_t)
FB_RANK_COLLECTIVES(std::uint64_t)
FB_RANK_COLLECTIVES(double)
FB_RANK_COLLECTIVES(char)
#undef FB_RANK_COLLECTIVES

}  // namespace fb
