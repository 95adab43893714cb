#pragma once
// The engines behind make_communicator (internal to core). No MPI or CUDA types beyond communicator.hpp.
#include <memory>

#include "core/communicator.hpp"

namespace fb {

#ifdef FB_HAVE_CUDA
// NCCL over MPI_COMM_WORLD on the cuda backend's device and stream (communicator_nccl.cpp).
std::unique_ptr<Communicator> make_nccl_communicator(MpiContext& mpi, Backend& backend);
#endif

}  // namespace fb
