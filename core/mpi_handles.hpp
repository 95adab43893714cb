#pragma once
// core's own access to the MPI handles behind MpiContext: <mpi.h> is included here and in core's .cpp
// files only, never by a header other layers see.
#include <mpi.h>

#include "core/mpi_context.hpp"

namespace fb {

inline MPI_Comm world_comm(const MpiContext&) {
  return MPI_COMM_WORLD;
}
// The ranks of this rank's node (MPI_COMM_TYPE_SHARED).
MPI_Comm node_comm(const MpiContext& mpi);

}  // namespace fb
