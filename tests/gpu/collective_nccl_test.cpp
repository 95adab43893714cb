// The NCCL engine on one GPU (world size 1 is legal in NCCL): every collective with --check, in place and out
// of place, several dtypes and reduce ops, MoE alltoallv, and the non-blocking pair. Skips without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/mpi_context.hpp"
#include "tests/gpu/cuda_test_backend.hpp"
#include "workloads/collective_benchmark.hpp"

namespace fb {
namespace {

MpiContext& mpi() {
  return gpu_test::test_mpi();
}
using gpu_test::cuda_backend;

void expect_all_pass(const workloads::CollectiveRun& run, const std::string& what) {
  EXPECT_EQ(run.summary.value("engine", ""), "nccl") << what;
  int measured = 0;
  for (const auto& r : run.results) {
    if (!r.params.contains("op")) continue;
    ++measured;
    EXPECT_EQ(r.status, reports::Status::ok) << what << " " << r.name << ": " << r.error.value_or("");
    ASSERT_NE(r.metric("wrong"), nullptr) << r.name;
    EXPECT_EQ(r.metric("wrong")->value, 0.0) << what << " " << r.name;
    EXPECT_GT(r.metric("time_us")->value, 0.0) << r.name;
  }
  EXPECT_GT(measured, 0) << what;
}

TEST(NcclCollectives, EveryOpWithCheckOnOneGpu) {
  std::string reason;
  auto backend = cuda_backend(reason);
  if (!backend) GTEST_SKIP() << "no GPU: " << reason;

  workloads::CollectiveOptions o;
  o.ops.clear();
  for (const auto& info : workloads::all_collectives()) o.ops.push_back(info.op);
  o.min_bytes = 8;
  o.max_bytes = 1 << 20;
  o.factor = 8;
  o.iters = 5;
  o.warmup = 2;
  o.inplace = true;
  o.check = true;
  for (DType t : {DType::fp32, DType::int32, DType::bf16, DType::fp16}) {
    o.type = t;
    expect_all_pass(workloads::run_collective_benchmark(o, mpi(), *backend), std::string(to_string(t)));
  }
}

TEST(NcclCollectives, ReduceOpsAndFp8) {
  std::string reason;
  auto backend = cuda_backend(reason);
  if (!backend) GTEST_SKIP() << "no GPU: " << reason;
  workloads::CollectiveOptions o;
  o.ops = {workloads::CollectiveOp::allreduce, workloads::CollectiveOp::reducescatter,
           workloads::CollectiveOp::reduce};
  o.min_bytes = 1024;
  o.max_bytes = 64 * 1024;
  o.factor = 8;
  o.iters = 3;
  o.warmup = 1;
  o.check = true;
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg}) {
    o.redop = op;
    o.type = DType::bf16;
    expect_all_pass(workloads::run_collective_benchmark(o, mpi(), *backend),
                    "bf16 " + std::string(to_string(op)));
  }
  o.redop = ReduceOp::sum;
  o.type = DType::fp8_e4m3;
  auto comm = make_communicator(mpi(), *backend);
  if (!comm->supports(DType::fp8_e4m3, true)) GTEST_SKIP() << "this NCCL has no fp8";
  comm.reset();
  expect_all_pass(workloads::run_collective_benchmark(o, mpi(), *backend), "fp8_e4m3 sum");
}

TEST(NcclCollectives, MoeAlltoallvAndNonBlocking) {
  std::string reason;
  auto backend = cuda_backend(reason);
  if (!backend) GTEST_SKIP() << "no GPU: " << reason;
  workloads::CollectiveOptions o;
  o.ops = {workloads::CollectiveOp::alltoallv};
  o.type = DType::bf16;
  o.check = true;
  o.iters = 3;
  o.warmup = 1;
  o.moe =
      workloads::MoeRouting{.tokens = 256, .hidden = 512, .experts = 8, .top_k = 2, .skew = 0.5, .seed = 3};
  expect_all_pass(workloads::run_collective_benchmark(o, mpi(), *backend), "moe");

  // start_allreduce on the side stream, ordered before a copy on the main stream by wait().
  auto comm = make_communicator(mpi(), *backend);
  const std::vector<float> host(1024, 2.5f);
  DeviceBuffer a = backend->allocate(host.size() * sizeof(float));
  DeviceBuffer b = backend->allocate(host.size() * sizeof(float));
  backend->copy_to_device(a, host.data(), a.bytes());
  auto req = comm->start_allreduce(a.data(), b.data(), host.size(), DType::fp32, ReduceOp::sum);
  req->wait();
  comm->synchronize();
  std::vector<float> out(host.size());
  backend->copy_to_host(out.data(), b, b.bytes());
  EXPECT_EQ(out, host);  // one rank: the sum is the input
}

}  // namespace
}  // namespace fb
