#include "core/communicator.hpp"
#include "core/communicator_mpi.hpp"
#include "core/mpi_handles.hpp"

#include <array>
#include <string>

#include "core/backend.hpp"
#include "core/communicator_engines.hpp"
#include "core/error.hpp"
#include "core/mpi_context.hpp"

namespace fb {
namespace {

constexpr std::array<ReduceOpInfo, 4> kReduceOps{{
    {ReduceOp::sum, "sum"},
    {ReduceOp::max, "max"},
    {ReduceOp::min, "min"},
    {ReduceOp::avg, "avg"},
}};

}  // namespace

std::span<const ReduceOpInfo> all_reduce_ops() {
  return kReduceOps;
}

std::string_view to_string(ReduceOp op) {
  for (const auto& info : kReduceOps)
    if (info.op == op) return info.name;
  return "?";
}

ReduceOp parse_reduce_op(std::string_view text) {
  std::string names;
  for (const auto& info : kReduceOps) {
    if (info.name == text) return info.op;
    names += names.empty() ? "" : ", ";
    names += info.name;
  }
  throw usage_error("invalid reduce op '" + std::string(text) + "' (expected one of " + names + ")");
}

std::unique_ptr<Communicator> make_communicator(MpiContext& mpi, Backend& backend) {
#ifdef FB_HAVE_CUDA
  if (backend.kind() == BackendKind::cuda) return make_nccl_communicator(mpi, backend);
#endif
  return make_mpi_communicator(world_comm(mpi), backend);
}

}  // namespace fb
