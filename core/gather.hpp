#pragma once
// Per-rank values brought to rank 0 (or to every rank): the "per_rank" columns of a report.
#include <mpi.h>

#include <string>
#include <vector>

namespace fb {

// Rank 0 gets one value per rank (index = rank); other ranks get an empty vector.
std::vector<double> gather_to_root(MPI_Comm comm, double value);
std::vector<std::string> gather_to_root(MPI_Comm comm, const std::string& value);
// Every rank gets every rank's value.
std::vector<double> allgather(MPI_Comm comm, double value);

}  // namespace fb
