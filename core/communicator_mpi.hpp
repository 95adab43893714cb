#pragma once
// The MPI engine's constructor, for core's own .cpp files (it takes an MPI handle; other layers call
// make_communicator or make_host_communicator in communicator.hpp).
#include <mpi.h>

#include <memory>

#include "core/communicator.hpp"

namespace fb {

// MPI engine over a duplicate of `comm` (freed on destruction); buffers must be host memory.
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, Backend& backend);

}  // namespace fb
