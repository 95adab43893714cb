// The NCCL engine (cuda backend only): one rank per GPU, the ncclUniqueId made by rank 0 and broadcast over
// MPI, every operation enqueued on the backend's stream. alltoall(v) and sendrecv are grouped
// ncclSend/ncclRecv (NCCL has no all-to-all primitive); in-place variants stage the input in a scratch
// buffer, since a send and a receive on the same bytes would race.
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/backend.hpp"
#include "core/call_log.hpp"
#include "core/communicator.hpp"
#include "core/communicator_engines.hpp"
#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "core/mpi_context.hpp"
#include "core/mpi_handles.hpp"
#include "core/units.hpp"
#include "core/wait_notice.hpp"

namespace fb {
namespace {

#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
constexpr bool kNcclHasFp8 = true;
#else
constexpr bool kNcclHasFp8 = false;
#endif

ncclDataType_t nccl_type(DType type) {
  switch (type) {
    case DType::fp64:
      return ncclFloat64;
    case DType::fp32:
    case DType::tf32:
      return ncclFloat32;
    case DType::fp16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::int32:
      return ncclInt32;
    case DType::int8:
      return ncclInt8;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    case DType::fp8_e4m3:
      return ncclFloat8e4m3;
    case DType::fp8_e5m2:
      return ncclFloat8e5m2;
#endif
    default:
      break;
  }
  throw unsupported_error("NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) +
                          " has no datatype for " + std::string(to_string(type)));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

const char* bytes_at(const void* base, std::size_t elements, DType type) {
  return static_cast<const char*>(base) + elements * dtype_bytes(type);
}
char* bytes_at(void* base, std::size_t elements, DType type) {
  return static_cast<char*>(base) + elements * dtype_bytes(type);
}

class CudaEvent {
 public:
  CudaEvent() { FB_CHECK_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~CudaEvent() { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_{};
};

// A collective on the side stream; wait() orders the main stream after it.
class NcclRequest final : public CollectiveRequest {
 public:
  NcclRequest(cudaStream_t main, std::unique_ptr<CudaEvent> done) : main_(main), done_(std::move(done)) {}
  ~NcclRequest() override {
    if (done_) cudaStreamWaitEvent(main_, done_->get(), 0);
  }
  void wait() override {
    if (!done_) return;
    FB_CHECK_CUDA(cudaStreamWaitEvent(main_, done_->get(), 0));
    done_.reset();
  }

 private:
  cudaStream_t main_;
  std::unique_ptr<CudaEvent> done_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, Backend& backend) : comm_(comm), backend_(backend) {
    stream_ = static_cast<cudaStream_t>(backend_.native_stream());
    FB_CHECK_NCCL(ncclCommUserRank(comm_, &rank_));
    FB_CHECK_NCCL(ncclCommCount(comm_, &size_));
  }
  ~NcclCommunicator() override {
    if (side_) {
      cudaStreamSynchronize(side_);
      cudaStreamDestroy(side_);
    }
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view engine() const override { return "nccl"; }
  bool supports(DType type, bool, ReduceOp) const override {
    if (type == DType::fp8_e4m3 || type == DType::fp8_e5m2) return kNcclHasFp8;
    return true;
  }

  void allreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op) override {
    CallScope call("allreduce", count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_type(type), nccl_op(op), comm_, stream_));
  }
  void allgather(const void* send, void* recv, std::size_t send_count, DType type) override {
    CallScope call("allgather", send_count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclAllGather(send, recv, send_count, nccl_type(type), comm_, stream_));
  }
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType type,
                      ReduceOp op) override {
    CallScope call("reduce_scatter", recv_count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclReduceScatter(send, recv, recv_count, nccl_type(type), nccl_op(op), comm_, stream_));
  }

  void alltoall(const void* send, void* recv, std::size_t count, DType type) override {
    CallScope call("alltoall", count * dtype_bytes(type) * static_cast<std::size_t>(size_));
    const auto n = static_cast<std::size_t>(size_);
    const void* src = send == recv ? stage(recv, n * count, type) : send;
    const ncclDataType_t dt = nccl_type(type);
    FB_CHECK_NCCL(ncclGroupStart());
    for (int peer = 0; peer < size_; ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      FB_CHECK_NCCL(ncclSend(bytes_at(src, p * count, type), count, dt, peer, comm_, stream_));
      FB_CHECK_NCCL(ncclRecv(bytes_at(recv, p * count, type), count, dt, peer, comm_, stream_));
    }
    FB_CHECK_NCCL(ncclGroupEnd());
  }

  void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displs, void* recv,
                 std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                 DType type) override {
    CallScope call("alltoallv", 0);
    const auto n = static_cast<std::size_t>(size_);
    if (send_counts.size() != n || send_displs.size() != n || recv_counts.size() != n ||
        recv_displs.size() != n)
      throw runtime_error("alltoallv: counts and displacements need one entry per rank (" +
                          std::to_string(n) + ")");
    const void* src = send;
    if (send == recv) {
      // As MPI_IN_PLACE: what goes to rank j is read from the receive layout.
      std::size_t extent = 0;
      for (std::size_t j = 0; j < n; ++j) extent = std::max(extent, recv_displs[j] + recv_counts[j]);
      src = stage(recv, extent, type);
      send_counts = recv_counts;
      send_displs = recv_displs;
    }
    const ncclDataType_t dt = nccl_type(type);
    FB_CHECK_NCCL(ncclGroupStart());
    for (std::size_t j = 0; j < n; ++j) {
      const int peer = static_cast<int>(j);
      if (send_counts[j] > 0)
        FB_CHECK_NCCL(
            ncclSend(bytes_at(src, send_displs[j], type), send_counts[j], dt, peer, comm_, stream_));
      if (recv_counts[j] > 0)
        FB_CHECK_NCCL(
            ncclRecv(bytes_at(recv, recv_displs[j], type), recv_counts[j], dt, peer, comm_, stream_));
    }
    FB_CHECK_NCCL(ncclGroupEnd());
  }

  void broadcast(const void* send, void* recv, std::size_t count, DType type, int root) override {
    CallScope call("broadcast", count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclBroadcast(send, recv, count, nccl_type(type), root, comm_, stream_));
  }
  void reduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root) override {
    CallScope call("reduce", count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclReduce(send, recv, count, nccl_type(type), nccl_op(op), root, comm_, stream_));
  }
  void sendrecv(const void* send, int peer_send, void* recv, int peer_recv, std::size_t count,
                DType type) override {
    CallScope call("sendrecv", count * dtype_bytes(type));
    const void* src = send == recv ? stage(recv, count, type) : send;
    const ncclDataType_t dt = nccl_type(type);
    FB_CHECK_NCCL(ncclGroupStart());
    FB_CHECK_NCCL(ncclSend(src, count, dt, peer_send, comm_, stream_));
    FB_CHECK_NCCL(ncclRecv(recv, count, dt, peer_recv, comm_, stream_));
    FB_CHECK_NCCL(ncclGroupEnd());
  }

  void send(const void* data, std::size_t count, DType type, int peer) override {
    CallScope call("send", count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclSend(data, count, nccl_type(type), peer, comm_, stream_));
  }
  void recv(void* data, std::size_t count, DType type, int peer) override {
    CallScope call("recv", count * dtype_bytes(type));
    FB_CHECK_NCCL(ncclRecv(data, count, nccl_type(type), peer, comm_, stream_));
  }

  // NCCL has no barrier: a one-element allreduce that the host waits for.
  void barrier() override {
    CallScope call("barrier", 0);
    if (barrier_buffer_.bytes() == 0) barrier_buffer_ = backend_.allocate(sizeof(int));
    FB_CHECK_NCCL(
        ncclAllReduce(barrier_buffer_.data(), barrier_buffer_.data(), 1, ncclInt32, ncclSum, comm_, stream_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  void synchronize() override {
    if (side_) FB_CHECK_CUDA(cudaStreamSynchronize(side_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    ncclComm_t sub = nullptr;
    FB_CHECK_NCCL(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr));
    if (sub == nullptr) return nullptr;
    return std::make_unique<NcclCommunicator>(sub, backend_);
  }

  std::unique_ptr<CollectiveRequest> start_allreduce(const void* send, void* recv, std::size_t count,
                                                     DType type, ReduceOp op) override {
    cudaStream_t side = side_stream();
    FB_CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_type(type), nccl_op(op), comm_, side));
    return finish_side();
  }
  std::unique_ptr<CollectiveRequest> start_reduce_scatter(const void* send, void* recv,
                                                          std::size_t recv_count, DType type,
                                                          ReduceOp op) override {
    cudaStream_t side = side_stream();
    FB_CHECK_NCCL(ncclReduceScatter(send, recv, recv_count, nccl_type(type), nccl_op(op), comm_, side));
    return finish_side();
  }

 private:
  // Copies `count` elements of `data` into the scratch buffer (grown on demand) on the stream.
  const void* stage(const void* data, std::size_t count, DType type) {
    const std::size_t bytes = count * dtype_bytes(type);
    if (scratch_.bytes() < bytes) scratch_ = backend_.allocate(bytes);
    FB_CHECK_CUDA(cudaMemcpyAsync(scratch_.data(), data, bytes, cudaMemcpyDeviceToDevice, stream_));
    return scratch_.data();
  }
  // The side stream, ordered after everything already on the main stream.
  cudaStream_t side_stream() {
    if (!side_) FB_CHECK_CUDA(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    CudaEvent ready;
    FB_CHECK_CUDA(cudaEventRecord(ready.get(), stream_));
    FB_CHECK_CUDA(cudaStreamWaitEvent(side_, ready.get(), 0));
    return side_;
  }
  std::unique_ptr<CollectiveRequest> finish_side() {
    auto done = std::make_unique<CudaEvent>();
    FB_CHECK_CUDA(cudaEventRecord(done->get(), side_));
    return std::make_unique<NcclRequest>(stream_, std::move(done));
  }

  ncclComm_t comm_;
  Backend& backend_;
  cudaStream_t stream_{};
  cudaStream_t side_{};
  int rank_ = 0, size_ = 1;
  DeviceBuffer scratch_;
  DeviceBuffer barrier_buffer_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MpiContext& mpi, Backend& backend) {
  if (backend.kind() != BackendKind::cuda) throw unsupported_error("the NCCL engine needs the cuda backend");
  ncclUniqueId id{};
  if (mpi.rank() == 0) FB_CHECK_NCCL(ncclGetUniqueId(&id));
  FB_CHECK_MPI(MPI_Bcast(&id, static_cast<int>(sizeof(id)), MPI_BYTE, 0, world_comm(mpi)));
  // The backend picked the device by local rank; make it current on this thread for NCCL.
  FB_CHECK_CUDA(cudaSetDevice(backend.device().index));
  ncclComm_t comm = nullptr;
  {
    // Every rank is here (the broadcast above), but NCCL's own set-up (its bootstrap, the network's
    // connections) can hold them on a bad fabric: said from rank 0 rather than silent until the job's limit.
    const WaitNotice waiting(mpi.rank() == 0 ? start_up_wait_notice_seconds() : 0, [&mpi](double waited_s) {
      return fmt::format(
          "NCCL's set-up (ncclCommInitRank) has waited {} for its {} ranks: its bootstrap or the network's "
          "connections do not complete (NCCL_DEBUG=INFO says where; `factorybench locate` finds a bad "
          "node or link)",
          format_duration(waited_s), mpi.size());
    });
    FB_CHECK_NCCL(ncclCommInitRank(&comm, mpi.size(), id, mpi.rank()));
  }
  return std::make_unique<NcclCommunicator>(comm, backend);
}

}  // namespace fb
