#pragma once
// Collectives over the backend's memory: MPI on the host backend, NCCL on the cuda backend. One interface
// for the collective benchmark and for the train step's tensor/expert/data-parallel traffic.
//
// Buffers are `void*` into memory of the backend the communicator was made for (DeviceBuffer::data()).
// Counts and displacements are in elements of `type`, never bytes. Every rank of the communicator must
// call the same operations in the same order with matching arguments (as in MPI and NCCL).
//
// Every call is numbered in the process-wide CallLog (core/call_log.hpp) for hang localization, and the
// MPI engine applies FACTORYBENCH_INJECT's slow links and slow ranks (core/fault_injection.hpp).
//
// Completion: host (MPI) calls return when the operation is complete. cuda (NCCL) calls are enqueued on
// the backend's stream (Backend::native_stream) and return at once; the backend's Timer, a later kernel on
// that stream or Backend::synchronize() / Communicator::synchronize() observe them in order.
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "core/dtype.hpp"

namespace fb {

class Backend;
class MpiContext;

// avg = sum / size (integer types: truncating division, as NCCL's ncclAvg).
enum class ReduceOp { sum, max, min, avg };

struct ReduceOpInfo {
  ReduceOp op;
  std::string_view name;  // "sum", "max", "min", "avg": command line and reports
};

std::span<const ReduceOpInfo> all_reduce_ops();
std::string_view to_string(ReduceOp op);
// Throws a usage Error listing the valid names.
ReduceOp parse_reduce_op(std::string_view text);

// A started non-blocking collective. wait() makes its result visible: on host it blocks until done
// (MPI_Wait); on cuda it makes the backend's stream wait for the side stream (no host block). Waiting twice
// is a no-op; destroying an un-waited request waits.
class CollectiveRequest {
 public:
  virtual ~CollectiveRequest() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi" or "nccl"
  virtual std::string_view engine() const = 0;
  // True when this engine can move `type` (reduction = false) or reduce it with `op` (reduction = true).
  // Unsupported calls throw an unsupported Error naming the dtype and op.
  virtual bool supports(DType type, bool reduction, ReduceOp op = ReduceOp::sum) const = 0;

  // recv[i] = op over ranks of send[i], count elements. send == recv is in-place.
  virtual void allreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op) = 0;
  // recv (size·send_count elements) = concatenation of every rank's send, in rank order.
  // In-place: send == recv + rank·send_count.
  virtual void allgather(const void* send, void* recv, std::size_t send_count, DType type) = 0;
  // send holds size·recv_count elements; rank r gets block r of the element-wise reduction.
  // In-place: recv == send + rank·recv_count.
  virtual void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType type,
                              ReduceOp op) = 0;
  // send and recv hold size·count elements; block j of send goes to rank j, block i of recv came from rank i.
  virtual void alltoall(const void* send, void* recv, std::size_t count, DType type) = 0;
  // Per-peer counts and displacements (elements), each span of length size().
  virtual void alltoallv(const void* send, std::span<const std::size_t> send_counts,
                         std::span<const std::size_t> send_displs, void* recv,
                         std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                         DType type) = 0;
  // recv on every rank = send of `root` (send is read on root only; send == recv is in-place).
  virtual void broadcast(const void* send, void* recv, std::size_t count, DType type, int root) = 0;
  // recv on `root` = op over ranks of send (recv is written on root only).
  virtual void reduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root) = 0;
  // Sends `count` elements to peer_send while receiving `count` elements from peer_recv.
  virtual void sendrecv(const void* send, int peer_send, void* recv, int peer_recv, std::size_t count,
                        DType type) = 0;
  // Point-to-point: `count` elements to / from `peer`; the peer calls the matching recv / send.
  virtual void send(const void* data, std::size_t count, DType type, int peer) = 0;
  virtual void recv(void* data, std::size_t count, DType type, int peer) = 0;
  virtual void barrier() = 0;
  // Waits for every operation issued on this communicator (cuda: its stream(s); host: nothing pending).
  virtual void synchronize() = 0;

  // Ranks with the same color form a new communicator, ordered by (key, old rank). Collective over this
  // communicator. A negative color returns nullptr (the rank is in no group).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Non-blocking allreduce / reduce_scatter, for overlapping communication with compute (train --overlap).
  // Host: MPI_Iallreduce / MPI_Ireduce_scatter_block. cuda: NCCL on a side stream ordered after the work
  // already on the backend's stream. Buffers must stay untouched until wait().
  virtual std::unique_ptr<CollectiveRequest> start_allreduce(const void* send, void* recv, std::size_t count,
                                                             DType type, ReduceOp op) = 0;
  virtual std::unique_ptr<CollectiveRequest> start_reduce_scatter(const void* send, void* recv,
                                                                  std::size_t recv_count, DType type,
                                                                  ReduceOp op) = 0;
};

// The engine for the backend: NCCL over the world for cuda (one rank per GPU, device = local rank, the
// unique id broadcast over MPI), MPI_COMM_WORLD for host. Collective over the world; `backend` must
// outlive the communicator.
std::unique_ptr<Communicator> make_communicator(MpiContext& mpi, Backend& backend);

// MPI engine over a duplicate of the world for host values whatever the run's backend: the control plane
// (agreed losses, step times, counters) of a workload whose data plane may be NCCL. Collective over the
// world.
std::unique_ptr<Communicator> make_host_communicator(MpiContext& mpi);

}  // namespace fb
