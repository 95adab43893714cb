#pragma once
// FB_CHECK_MPI(MPI_Allreduce(...)) throws an fb::Error naming the call, MPI's error text and the place.
#include <mpi.h>

#include <string>

#include "core/error.hpp"

namespace fb {
std::string mpi_error_text(int code);
}

#define FB_CHECK_MPI(call)                                                                          \
  do {                                                                                              \
    const int fb_mpi_rc_ = (call);                                                                  \
    if (fb_mpi_rc_ != MPI_SUCCESS)                                                                  \
      ::fb::throw_call_failure("MPI", #call, ::fb::mpi_error_text(fb_mpi_rc_), __FILE__, __LINE__); \
  } while (0)
