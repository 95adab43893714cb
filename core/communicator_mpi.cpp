// The MPI engine: host buffers, blocking MPI collectives, MPI_I* for the non-blocking pair.
// bf16, fp16 and fp8 have no MPI datatype: each gets a derived datatype (contiguous bytes) and commutative
// user-defined sum/max/min ops that compute in double and round back to the format, so MPI can never
// apply a built-in integer op to them by mistake. avg = sum, then division by the size on the host.
#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/call_log.hpp"
#include "core/communicator.hpp"
#include "core/communicator_mpi.hpp"
#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/host_backend.hpp"
#include "core/mpi_check.hpp"
#include "core/mpi_context.hpp"
#include "core/mpi_handles.hpp"

namespace fb {
namespace {

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

bool is_small_float(DType type) {
  return type == DType::fp16 || type == DType::bf16 || type == DType::fp8_e4m3 || type == DType::fp8_e5m2;
}

int small_float_index(DType type) {
  switch (type) {
    case DType::fp16:
      return 0;
    case DType::bf16:
      return 1;
    case DType::fp8_e4m3:
      return 2;
    default:
      return 3;  // fp8_e5m2
  }
}

template <DType T, ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double a = load_element(in, T, k);
    const double b = load_element(inout, T, k);
    double r = 0;
    if constexpr (Op == ReduceOp::sum) r = a + b;
    if constexpr (Op == ReduceOp::max) r = std::max(a, b);
    if constexpr (Op == ReduceOp::min) r = std::min(a, b);
    store_element(inout, T, k, r);
  }
}

template <DType T>
std::array<MPI_User_function*, 3> user_functions() {
  return {&user_reduce<T, ReduceOp::sum>, &user_reduce<T, ReduceOp::max>, &user_reduce<T, ReduceOp::min>};
}

// Derived datatypes and user ops for the small float formats, shared by a communicator and its splits.
class MpiTypes {
 public:
  MpiTypes() {
    constexpr std::array<DType, 4> kTypes{DType::fp16, DType::bf16, DType::fp8_e4m3, DType::fp8_e5m2};
    const std::array<std::array<MPI_User_function*, 3>, 4> fns{
        user_functions<DType::fp16>(), user_functions<DType::bf16>(), user_functions<DType::fp8_e4m3>(),
        user_functions<DType::fp8_e5m2>()};
    for (std::size_t t = 0; t < kTypes.size(); ++t) {
      FB_CHECK_MPI(MPI_Type_contiguous(static_cast<int>(dtype_bytes(kTypes[t])), MPI_BYTE, &types_[t]));
      FB_CHECK_MPI(MPI_Type_commit(&types_[t]));
      for (std::size_t o = 0; o < 3; ++o) FB_CHECK_MPI(MPI_Op_create(fns[t][o], 1, &ops_[t][o]));
    }
  }
  ~MpiTypes() {
    if (mpi_finalized()) return;
    for (auto& t : types_) MPI_Type_free(&t);
    for (auto& row : ops_)
      for (auto& op : row) MPI_Op_free(&op);
  }
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  MPI_Datatype datatype(DType type) const {
    switch (type) {
      case DType::fp64:
        return MPI_DOUBLE;
      case DType::fp32:
      case DType::tf32:
        return MPI_FLOAT;
      case DType::int32:
        return MPI_INT32_T;
      case DType::int8:
        return MPI_INT8_T;
      default:
        return types_[static_cast<std::size_t>(small_float_index(type))];
    }
  }
  MPI_Op op(DType type, ReduceOp op) const {
    const ReduceOp base = op == ReduceOp::avg ? ReduceOp::sum : op;
    if (is_small_float(type)) {
      const std::size_t o = base == ReduceOp::sum ? 0 : base == ReduceOp::max ? 1 : 2;
      return ops_[static_cast<std::size_t>(small_float_index(type))][o];
    }
    return base == ReduceOp::sum ? MPI_SUM : base == ReduceOp::max ? MPI_MAX : MPI_MIN;
  }

 private:
  std::array<MPI_Datatype, 4> types_{};
  std::array<std::array<MPI_Op, 3>, 4> ops_{};
};

int mpi_count(std::size_t count, const char* what) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw unsupported_error(std::string("MPI engine: ") + what + " of " + std::to_string(count) +
                            " elements exceeds MPI's int count limit (2^31-1)");
  return static_cast<int>(count);
}

void divide_in_place(void* data, std::size_t count, DType type, int divisor) {
  for (std::size_t i = 0; i < count; ++i)
    store_element(data, type, i, load_element(data, type, i) / static_cast<double>(divisor));
}

// World rank of every rank of `comm` (fault injection names world ranks).
std::vector<int> world_ranks_of(MPI_Comm comm, int size) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  FB_CHECK_MPI(MPI_Comm_group(comm, &group));
  FB_CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
  std::vector<int> local(static_cast<std::size_t>(size)), out(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) local[static_cast<std::size_t>(i)] = i;
  FB_CHECK_MPI(MPI_Group_translate_ranks(group, size, local.data(), world, out.data()));
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

void sleep_seconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

class MpiRequest final : public CollectiveRequest {
 public:
  MpiRequest(MPI_Request request, std::function<void()> after)
      : request_(request), after_(std::move(after)) {}
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL && !mpi_finalized()) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    FB_CHECK_MPI(MPI_Wait(&request_, MPI_STATUS_IGNORE));
    if (after_) after_();
    after_ = nullptr;
  }

 private:
  MPI_Request request_;
  std::function<void()> after_;
};

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (already duplicated or split for us).
  MpiCommunicator(MPI_Comm comm, Backend& backend, std::shared_ptr<MpiTypes> types)
      : comm_(comm), backend_(backend), types_(std::move(types)) {
    FB_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    FB_CHECK_MPI(MPI_Comm_size(comm_, &size_));
    world_ranks_ = world_ranks_of(comm_, size_);
    CallLog::instance().set_world_rank(world_ranks_[static_cast<std::size_t>(rank_)]);
  }
  ~MpiCommunicator() override {
    if (comm_ != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view engine() const override { return "mpi"; }
  bool supports(DType, bool, ReduceOp) const override { return true; }

  void allreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op) override {
    CallScope call("allreduce", count * dtype_bytes(type));
    pause_before_collective();
    FB_CHECK_MPI(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, mpi_count(count, "allreduce"),
                               types_->datatype(type), types_->op(type, op), comm_));
    if (op == ReduceOp::avg) divide_in_place(recv, count, type, size_);
  }

  void allgather(const void* send, void* recv, std::size_t send_count, DType type) override {
    CallScope call("allgather", send_count * dtype_bytes(type));
    pause_before_collective();
    const auto elem = dtype_bytes(type);
    const bool in_place =
        send == static_cast<char*>(recv) + static_cast<std::size_t>(rank_) * send_count * elem;
    const int n = mpi_count(send_count, "allgather");
    const MPI_Datatype dt = types_->datatype(type);
    FB_CHECK_MPI(MPI_Allgather(in_place ? MPI_IN_PLACE : send, n, dt, recv, n, dt, comm_));
  }

  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType type,
                      ReduceOp op) override {
    CallScope call("reduce_scatter", recv_count * dtype_bytes(type));
    pause_before_collective();
    const void* in = prepare_reduce_scatter(send, recv, recv_count, type);
    FB_CHECK_MPI(MPI_Reduce_scatter_block(in, in == MPI_IN_PLACE ? const_cast<void*>(send) : recv,
                                          mpi_count(recv_count, "reduce_scatter"), types_->datatype(type),
                                          types_->op(type, op), comm_));
    finish_reduce_scatter(in == MPI_IN_PLACE, send, recv, recv_count, type, op);
  }

  void alltoall(const void* send, void* recv, std::size_t count, DType type) override {
    CallScope call("alltoall", count * dtype_bytes(type) * static_cast<std::size_t>(size_));
    pause_before_collective();
    const int n = mpi_count(count, "alltoall");
    const MPI_Datatype dt = types_->datatype(type);
    FB_CHECK_MPI(MPI_Alltoall(send == recv ? MPI_IN_PLACE : send, n, dt, recv, n, dt, comm_));
  }

  void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                 std::span<const std::size_t> send_displs, void* recv,
                 std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                 DType type) override {
    CallScope call("alltoallv", 0);
    pause_before_collective();
    const auto n = static_cast<std::size_t>(size_);
    if (send_counts.size() != n || send_displs.size() != n || recv_counts.size() != n ||
        recv_displs.size() != n)
      throw runtime_error("alltoallv: counts and displacements need one entry per rank (" +
                          std::to_string(n) + ")");
    std::vector<int> sc(n), sd(n), rc(n), rd(n);
    for (std::size_t i = 0; i < n; ++i) {
      sc[i] = mpi_count(send_counts[i], "alltoallv send count");
      sd[i] = mpi_count(send_displs[i], "alltoallv send displacement");
      rc[i] = mpi_count(recv_counts[i], "alltoallv receive count");
      rd[i] = mpi_count(recv_displs[i], "alltoallv receive displacement");
    }
    const MPI_Datatype dt = types_->datatype(type);
    if (send == recv) {
      FB_CHECK_MPI(MPI_Alltoallv(MPI_IN_PLACE, nullptr, nullptr, dt, recv, rc.data(), rd.data(), dt, comm_));
    } else {
      FB_CHECK_MPI(MPI_Alltoallv(send, sc.data(), sd.data(), dt, recv, rc.data(), rd.data(), dt, comm_));
    }
  }

  void broadcast(const void* send, void* recv, std::size_t count, DType type, int root) override {
    CallScope call("broadcast", count * dtype_bytes(type));
    pause_before_collective();
    const int n = mpi_count(count, "broadcast");
    if (rank_ == root && send != recv) std::memcpy(recv, send, count * dtype_bytes(type));
    FB_CHECK_MPI(MPI_Bcast(recv, n, types_->datatype(type), root, comm_));
  }

  void reduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root) override {
    CallScope call("reduce", count * dtype_bytes(type));
    pause_before_collective();
    const void* in = (rank_ == root && send == recv) ? MPI_IN_PLACE : send;
    FB_CHECK_MPI(MPI_Reduce(in, recv, mpi_count(count, "reduce"), types_->datatype(type),
                            types_->op(type, op), root, comm_));
    if (op == ReduceOp::avg && rank_ == root) divide_in_place(recv, count, type, size_);
  }

  void sendrecv(const void* send, int peer_send, void* recv, int peer_recv, std::size_t count,
                DType type) override {
    CallScope call("sendrecv", count * dtype_bytes(type));
    pause_before_send(peer_send);
    const int n = mpi_count(count, "sendrecv");
    const MPI_Datatype dt = types_->datatype(type);
    constexpr int kTag = 0x5eed;
    if (send == recv) {
      FB_CHECK_MPI(
          MPI_Sendrecv_replace(recv, n, dt, peer_send, kTag, peer_recv, kTag, comm_, MPI_STATUS_IGNORE));
    } else {
      FB_CHECK_MPI(
          MPI_Sendrecv(send, n, dt, peer_send, kTag, recv, n, dt, peer_recv, kTag, comm_, MPI_STATUS_IGNORE));
    }
  }

  void send(const void* data, std::size_t count, DType type, int peer) override {
    CallScope call("send", count * dtype_bytes(type), world_ranks_[static_cast<std::size_t>(peer)]);
    pause_before_send(peer);
    FB_CHECK_MPI(MPI_Send(data, mpi_count(count, "send"), types_->datatype(type), peer, kP2pTag, comm_));
  }
  void recv(void* data, std::size_t count, DType type, int peer) override {
    CallScope call("recv", count * dtype_bytes(type), world_ranks_[static_cast<std::size_t>(peer)]);
    FB_CHECK_MPI(MPI_Recv(data, mpi_count(count, "recv"), types_->datatype(type), peer, kP2pTag, comm_,
                          MPI_STATUS_IGNORE));
  }

  void barrier() override {
    CallScope call("barrier", 0);
    FB_CHECK_MPI(MPI_Barrier(comm_));
  }
  void synchronize() override { backend_.synchronize(); }

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    FB_CHECK_MPI(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiCommunicator>(sub, backend_, types_);
  }

  std::unique_ptr<CollectiveRequest> start_allreduce(const void* send, void* recv, std::size_t count,
                                                     DType type, ReduceOp op) override {
    MPI_Request request = MPI_REQUEST_NULL;
    FB_CHECK_MPI(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, mpi_count(count, "allreduce"),
                                types_->datatype(type), types_->op(type, op), comm_, &request));
    std::function<void()> after;
    if (op == ReduceOp::avg)
      after = [recv, count, type, n = size_] { divide_in_place(recv, count, type, n); };
    return std::make_unique<MpiRequest>(request, std::move(after));
  }

  std::unique_ptr<CollectiveRequest> start_reduce_scatter(const void* send, void* recv,
                                                          std::size_t recv_count, DType type,
                                                          ReduceOp op) override {
    const void* in = prepare_reduce_scatter(send, recv, recv_count, type);
    MPI_Request request = MPI_REQUEST_NULL;
    FB_CHECK_MPI(MPI_Ireduce_scatter_block(in, in == MPI_IN_PLACE ? const_cast<void*>(send) : recv,
                                           mpi_count(recv_count, "reduce_scatter"), types_->datatype(type),
                                           types_->op(type, op), comm_, &request));
    const bool in_place = in == MPI_IN_PLACE;
    return std::make_unique<MpiRequest>(request, [this, in_place, send, recv, recv_count, type, op] {
      finish_reduce_scatter(in_place, send, recv, recv_count, type, op);
    });
  }

 private:
  // In-place reduce-scatter has NCCL's layout (recv = send + rank·recv_count). MPI_IN_PLACE puts the result
  // at the start of the buffer instead, so the block is moved to its NCCL place afterwards.
  const void* prepare_reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType type) const {
    const auto offset = static_cast<std::size_t>(rank_) * recv_count * dtype_bytes(type);
    return recv == static_cast<const char*>(send) + offset ? MPI_IN_PLACE : send;
  }
  void finish_reduce_scatter(bool in_place, const void* send, void* recv, std::size_t recv_count, DType type,
                             ReduceOp op) const {
    if (in_place && rank_ != 0) std::memmove(recv, send, recv_count * dtype_bytes(type));
    if (op == ReduceOp::avg) divide_in_place(recv, recv_count, type, size_);
  }

  // FACTORYBENCH_INJECT (core/fault_injection.hpp): sleeps for an injected slow link or slow rank.
  void pause_before_send(int peer) const {
    const auto& f = injected_faults();
    if (f.empty()) return;
    sleep_seconds(f.send_delay(world_ranks_[static_cast<std::size_t>(rank_)],
                               world_ranks_[static_cast<std::size_t>(peer)]));
  }
  void pause_before_collective() const {
    const auto& f = injected_faults();
    if (!f.empty()) sleep_seconds(f.collective_delay(world_ranks_[static_cast<std::size_t>(rank_)]));
  }

  static constexpr int kP2pTag = 0x9e2;
  MPI_Comm comm_;
  Backend& backend_;
  std::vector<int> world_ranks_;  // world rank of each rank of comm_
  std::shared_ptr<MpiTypes> types_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, Backend& backend) {
  if (backend.kind() != BackendKind::host)
    throw unsupported_error("the MPI engine needs host buffers (use --backend host, or NCCL on cuda)");
  MPI_Comm dup = MPI_COMM_NULL;
  FB_CHECK_MPI(MPI_Comm_dup(comm, &dup));
  return std::make_unique<MpiCommunicator>(dup, backend, std::make_shared<MpiTypes>());
}

std::unique_ptr<Communicator> make_host_communicator(MpiContext& mpi) {
  // The engine only calls the backend's synchronize(), a no-op on the host backend; one shared instance.
  static HostBackend host;
  return make_mpi_communicator(world_comm(mpi), host);
}

}  // namespace fb
