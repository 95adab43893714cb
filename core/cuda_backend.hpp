#pragma once
// The cuda backend's factory. This header has no CUDA types, so core/backend.cpp can include it.
#include <memory>
#include <string>

#include "core/backend.hpp"

namespace fb {

// True when a CUDA driver and at least one device are usable; otherwise `reason` says why (driver's text).
bool cuda_backend_available(std::string& reason);
// Device = local_rank % device count; creates one non-blocking stream.
std::unique_ptr<Backend> make_cuda_backend(int local_rank);

}  // namespace fb
