#include "core/gather.hpp"

#include <numeric>

#include "core/mpi_check.hpp"

namespace fb {

std::vector<double> gather_to_root(MPI_Comm comm, double value) {
  int rank = 0, size = 1;
  FB_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  FB_CHECK_MPI(MPI_Comm_size(comm, &size));
  std::vector<double> out(rank == 0 ? static_cast<std::size_t>(size) : 0);
  FB_CHECK_MPI(MPI_Gather(&value, 1, MPI_DOUBLE, out.data(), 1, MPI_DOUBLE, 0, comm));
  return out;
}

std::vector<double> allgather(MPI_Comm comm, double value) {
  int size = 1;
  FB_CHECK_MPI(MPI_Comm_size(comm, &size));
  std::vector<double> out(static_cast<std::size_t>(size));
  FB_CHECK_MPI(MPI_Allgather(&value, 1, MPI_DOUBLE, out.data(), 1, MPI_DOUBLE, comm));
  return out;
}

std::vector<std::string> gather_to_root(MPI_Comm comm, const std::string& value) {
  int rank = 0, size = 1;
  FB_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  FB_CHECK_MPI(MPI_Comm_size(comm, &size));
  int len = static_cast<int>(value.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  FB_CHECK_MPI(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm));
  std::vector<char> all;
  if (rank == 0) {
    std::exclusive_scan(lens.begin(), lens.end(), offsets.begin(), 0);
    all.resize(static_cast<std::size_t>(offsets.back() + lens.back()));
  }
  FB_CHECK_MPI(
      MPI_Gatherv(value.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, comm));
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      out.emplace_back(all.data() + offsets[static_cast<std::size_t>(r)],
                       static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
  return out;
}

}  // namespace fb
