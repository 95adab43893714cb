#include "workloads/train/step_context.hpp"

#include <algorithm>
#include <thread>

namespace fb::workloads::train {

StepContext::StepContext(const TrainOptions& o_, const TrainPlan& plan_, MpiContext& mpi, Backend& backend_)
    : o(o_),
      plan(plan_),
      m(plan_.model),
      l(plan_.local),
      backend(backend_),
      dt(plan_.shape.dtype),
      e(dtype_bytes(plan_.shape.dtype)),
      coords(rank_coords(mpi.rank(), o_.parallel)),
      sp(plan_.shape.sequence_parallel && o_.parallel.tp > 1),
      rows(sp ? l.tokens / o_.parallel.tp : l.tokens),
      row0(sp ? coords.t * rows : 0),
      host_threads(
          std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, mpi.local_size()))),
      gemm_engine(kernels::make_gemm_engine(backend_, dt, {.local_ranks = mpi.local_size()})),
      k(kernels::make_train_kernels(backend_)),
      groups(make_parallel_groups(mpi, backend_, o_.parallel, coords, m.moe.has_value(), l.kv_copies)),
      timer(backend_) {}

DeviceBuffer StepContext::alloc(std::int64_t elements, std::size_t element_bytes) {
  const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * element_bytes;
  allocated += n;
  return backend.allocate(n);
}

void StepContext::gemm(std::int64_t m_, std::int64_t n, std::int64_t k_, bool ta, bool tb, const void* a,
                       std::int64_t lda, const void* b, std::int64_t ldb, void* c, std::int64_t ldc,
                       double beta, std::int64_t batch, std::int64_t sa, std::int64_t sb, std::int64_t sc) {
  if (m_ == 0 || n == 0 || k_ == 0) return;
  kernels::GemmProblem p;
  p.m = m_;
  p.n = n;
  p.k = k_;
  p.transa = ta;
  p.transb = tb;
  p.dtype = dt;
  p.lda = lda;
  p.ldb = ldb;
  p.ldc = ldc;
  p.beta = beta;
  p.batch = batch;
  p.stride_a = sa;
  p.stride_b = sb;
  p.stride_c = sc;
  gemm_engine->run(p, a, b, c);
}

void StepContext::copy(void* dst, const void* src, std::int64_t elements) {
  const std::int64_t zero = 0, one = 1;  // one row block of `elements` width
  k->copy_row_blocks(src, dst, dt, elements, 1, &zero, &zero, &one);
}

void StepContext::tp_reduce(void* buf, const char* what, void* rows_out) {
  if (o.parallel.tp == 1) return;
  mark(kTpComm);
  const std::int64_t n = l.tokens * m.hidden;
  if (sp) {
    groups.tp->reduce_scatter(buf, rows_out ? rows_out : my_rows(buf),
                              static_cast<std::size_t>(rows * m.hidden), dt, ReduceOp::sum);
    count_collective(std::string("tp_reduce_scatter/") + what, static_cast<double>(n * elem()));
  } else {
    groups.tp->allreduce(buf, buf, static_cast<std::size_t>(n), dt, ReduceOp::sum);
    count_collective(std::string("tp_allreduce/") + what, static_cast<double>(n * elem()));
  }
}

void StepContext::tp_gather(void* buf, const char* what) {
  if (!sp) return;
  mark(kTpComm);
  groups.tp->allgather(my_rows(buf), buf, static_cast<std::size_t>(rows * m.hidden), dt);
  count_collective(std::string("tp_allgather/") + what, static_cast<double>(rows * m.hidden * elem()));
}

}  // namespace fb::workloads::train
