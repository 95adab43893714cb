#include "workloads/collective_benchmark.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/mpi_check.hpp"
#include "core/random_fill.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "workloads/collective_check.hpp"
#include "workloads/telemetry_report.hpp"

namespace fb::workloads {
namespace {

using reports::Better;
using reports::Metric;
using reports::Result;

// One measured configuration. Every rank builds the same list in the same order.
struct Case {
  CollectiveOp op;
  std::string label;  // result name prefix: the op, or moe_dispatch / moe_combine
  CollectiveCounts counts;
  std::optional<TrafficMatrix> matrix;  // alltoallv
  bool inplace = false;
  std::string skip_reason;                           // non-empty: reported as skipped, not run
  nlohmann::json params = nlohmann::json::object();  // extra params (MoE)
};

// This rank's pointers into the two buffers for a case (nccl-tests' in-place offsets).
struct Pointers {
  void* send;
  void* recv;
};

int group_size(const CollectiveOptions& o, int world) {
  return o.split > 0 ? o.split : world;
}

std::size_t elem_bytes(const CollectiveOptions& o) {
  return dtype_bytes(o.type);
}

// The largest buffer a rank needs for a case (send and receive are allocated alike).
std::uint64_t case_buffer_bytes(const Case& c, std::size_t elem) {
  std::uint64_t elems = std::max(c.counts.send_count, c.counts.recv_count);
  if (c.matrix)
    for (int r = 0; r < c.matrix->ranks; ++r)
      elems = std::max<std::uint64_t>(elems, std::max(c.matrix->sent(r), c.matrix->received(r)));
  return elems * elem;
}

std::vector<Case> build_cases(const CollectiveOptions& o, int n) {
  std::vector<Case> cases;
  const std::size_t elem = elem_bytes(o);
  if (o.moe) {
    const TrafficMatrix tokens = moe_dispatch_tokens(*o.moe, n);
    const nlohmann::json moe = {{"tokens", o.moe->tokens},
                                {"hidden", o.moe->hidden},
                                {"experts", o.moe->experts},
                                {"top_k", o.moe->top_k},
                                {"skew", o.moe->skew},
                                {"busiest_rank", tokens.busiest_rank()},
                                {"busiest_share", tokens.busiest_share()}};
    for (const bool combine : {false, true}) {
      Case c;
      c.op = CollectiveOp::alltoallv;
      c.label = combine ? "moe_combine" : "moe_dispatch";
      c.matrix = scale(combine ? tokens.transposed() : tokens, o.moe->hidden);
      c.counts.count = c.matrix->busiest_elements();
      c.counts.bytes = c.counts.count * elem;
      c.params = moe;
      c.params["phase"] = combine ? "combine" : "dispatch";
      cases.push_back(c);
      if (o.inplace) {
        c.inplace = true;
        c.skip_reason =
            "MoE traffic is not symmetric: in-place alltoallv needs equal send and receive layouts";
        cases.push_back(c);
      }
    }
    return cases;
  }
  const auto sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.factor, o.step);
  for (const CollectiveOp op : o.ops) {
    std::set<std::uint64_t> seen;  // sizes that round to the same S are measured once
    for (const std::uint64_t s : sizes) {
      Case c;
      c.op = op;
      c.label = std::string(to_string(op));
      if (op == CollectiveOp::alltoallv) {
        c.matrix = uneven_alltoallv(s, elem, n);
        c.counts.count = c.matrix->busiest_elements();
        c.counts.bytes = c.counts.count * elem;
      } else {
        c.counts = collective_counts(op, s, o.type, n);
      }
      if (c.counts.bytes == 0 || !seen.insert(c.counts.bytes).second) continue;
      cases.push_back(c);
      if (o.inplace) {
        c.inplace = true;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

Pointers pointers(const Case& c, int rank, DeviceBuffer& send, DeviceBuffer& recv, std::size_t elem) {
  if (!c.inplace) return {send.data(), recv.data()};
  char* base = recv.as<char>();
  const std::size_t offset = static_cast<std::size_t>(rank) * c.counts.count * elem;
  if (c.op == CollectiveOp::allgather) return {base + offset, base};
  if (c.op == CollectiveOp::reducescatter) return {base, base + offset};
  return {base, base};
}

struct AlltoallvLayout {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
};

AlltoallvLayout layout(const TrafficMatrix& m, int rank) {
  AlltoallvLayout l;
  l.send_counts = m.send_counts(rank);
  l.recv_counts = m.recv_counts(rank);
  l.send_displs = displacements(l.send_counts);
  l.recv_displs = displacements(l.recv_counts);
  return l;
}

void issue(const Case& c, const CollectiveOptions& o, Communicator& comm, const Pointers& p,
           const AlltoallvLayout* v) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t count = c.counts.count;
  switch (c.op) {
    case CollectiveOp::allreduce:
      comm.allreduce(p.send, p.recv, count, o.type, o.redop);
      break;
    case CollectiveOp::allgather:
      comm.allgather(p.send, p.recv, count, o.type);
      break;
    case CollectiveOp::reducescatter:
      comm.reduce_scatter(p.send, p.recv, count, o.type, o.redop);
      break;
    case CollectiveOp::alltoall:
      comm.alltoall(p.send, p.recv, count, o.type);
      break;
    case CollectiveOp::alltoallv:
      comm.alltoallv(p.send, v->send_counts, v->send_displs, p.recv, v->recv_counts, v->recv_displs, o.type);
      break;
    case CollectiveOp::broadcast:
      comm.broadcast(p.send, p.recv, count, o.type, o.root);
      break;
    case CollectiveOp::reduce:
      comm.reduce(p.send, p.recv, count, o.type, o.redop, o.root);
      break;
    case CollectiveOp::sendrecv:
      comm.sendrecv(p.send, (r + 1) % n, p.recv, (r - 1 + n) % n, count, o.type);
      break;
  }
}

// Writes the --check inputs, runs the case once and counts this rank's wrong elements.
std::uint64_t check_case(const Case& c, const CollectiveOptions& o, Communicator& comm, Backend& backend,
                         DeviceBuffer& send, DeviceBuffer& recv, const AlltoallvLayout* v) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t elem = elem_bytes(o), count = c.counts.count;
  const CheckPattern pattern(o.type, o.redop, n);
  // Only the case's region of the buffers is written and read back (the buffers fit the largest case).
  const std::size_t recv_elems = case_buffer_bytes(c, elem) / elem;
  const std::size_t in_elems = c.inplace ? 0 : recv_elems;

  // Output buffer: the sentinel everywhere; input: the pattern at this rank's input positions.
  std::vector<unsigned char> out(recv_elems * elem), in(in_elems * elem);
  for (std::size_t i = 0; i < recv_elems; ++i) store_element(out.data(), o.type, i, CheckPattern::kSentinel);
  std::vector<unsigned char>& input = c.inplace ? out : in;
  const std::size_t base =
      c.inplace && c.op == CollectiveOp::allgather ? static_cast<std::size_t>(r) * count : 0;
  auto put = [&](std::size_t i, double value) { store_element(input.data(), o.type, base + i, value); };
  switch (c.op) {
    case CollectiveOp::allreduce:
    case CollectiveOp::reduce:
      for (std::size_t i = 0; i < count; ++i) put(i, pattern.reduce_input(r, i));
      break;
    case CollectiveOp::reducescatter:
      for (std::size_t i = 0; i < count * static_cast<std::size_t>(n); ++i)
        put(i, pattern.reduce_input(r, i));
      break;
    case CollectiveOp::allgather:
    case CollectiveOp::sendrecv:
      for (std::size_t i = 0; i < count; ++i) put(i, pattern.move_value(r, 0, i));
      break;
    case CollectiveOp::broadcast:
      if (r == o.root)
        for (std::size_t i = 0; i < count; ++i) put(i, pattern.move_value(r, 0, i));
      break;
    case CollectiveOp::alltoall:
      for (int d = 0; d < n; ++d)
        for (std::size_t k = 0; k < count; ++k)
          put(static_cast<std::size_t>(d) * count + k, pattern.move_value(r, d, k));
      break;
    case CollectiveOp::alltoallv: {
      // In place, what goes to rank d is read from the receive layout (symmetric counts).
      const auto& counts = c.inplace ? v->recv_counts : v->send_counts;
      const auto& displs = c.inplace ? v->recv_displs : v->send_displs;
      for (std::size_t d = 0; d < counts.size(); ++d)
        for (std::size_t k = 0; k < counts[d]; ++k)
          put(displs[d] + k, pattern.move_value(r, static_cast<int>(d), k));
      break;
    }
  }
  backend.copy_to_device(recv, out.data(), out.size());
  if (!c.inplace) backend.copy_to_device(send, in.data(), in.size());
  comm.barrier();
  issue(c, o, comm, pointers(c, r, send, recv, elem), v);
  comm.synchronize();
  backend.copy_to_host(out.data(), recv, out.size());

  std::uint64_t wrong = 0;
  const std::size_t result_base =
      c.inplace && c.op == CollectiveOp::reducescatter ? static_cast<std::size_t>(r) * count : 0;
  auto expect = [&](std::size_t i, double value) {
    if (!pattern.matches(load_element(out.data(), o.type, result_base + i), value)) ++wrong;
  };
  switch (c.op) {
    case CollectiveOp::allreduce:
      for (std::size_t i = 0; i < count; ++i) expect(i, pattern.reduce_expected(i));
      break;
    case CollectiveOp::reduce:
      if (r == o.root)
        for (std::size_t i = 0; i < count; ++i) expect(i, pattern.reduce_expected(i));
      break;
    case CollectiveOp::reducescatter:
      for (std::size_t i = 0; i < count; ++i)
        expect(i, pattern.reduce_expected(static_cast<std::size_t>(r) * count + i));
      break;
    case CollectiveOp::allgather:
      for (int s = 0; s < n; ++s)
        for (std::size_t k = 0; k < count; ++k)
          expect(static_cast<std::size_t>(s) * count + k, pattern.move_value(s, 0, k));
      break;
    case CollectiveOp::sendrecv:
      for (std::size_t i = 0; i < count; ++i) expect(i, pattern.move_value((r - 1 + n) % n, 0, i));
      break;
    case CollectiveOp::broadcast:
      for (std::size_t i = 0; i < count; ++i) expect(i, pattern.move_value(o.root, 0, i));
      break;
    case CollectiveOp::alltoall:
      for (int s = 0; s < n; ++s)
        for (std::size_t k = 0; k < count; ++k)
          expect(static_cast<std::size_t>(s) * count + k, pattern.move_value(s, r, k));
      break;
    case CollectiveOp::alltoallv:
      for (std::size_t s = 0; s < v->recv_counts.size(); ++s)
        for (std::size_t k = 0; k < v->recv_counts[s]; ++k)
          expect(v->recv_displs[s] + k, pattern.move_value(static_cast<int>(s), r, k));
      break;
  }
  return wrong;
}

// Per-iteration times of every rank of a group reduced to one series, as nccl-tests -a.
std::vector<double> reduce_times(const std::vector<double>& all, int first_rank, int ranks, int iters,
                                 TimeAverage average) {
  std::vector<double> out(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    auto at = [&](int rank) {
      return all[static_cast<std::size_t>(rank) * static_cast<std::size_t>(iters) +
                 static_cast<std::size_t>(i)];
    };
    double v = at(first_rank);
    for (int k = 1; k < ranks && average != TimeAverage::rank0; ++k) {
      const double t = at(first_rank + k);
      if (average == TimeAverage::mean) v += t;
      if (average == TimeAverage::min) v = std::min(v, t);
      if (average == TimeAverage::max) v = std::max(v, t);
    }
    if (average == TimeAverage::mean) v /= ranks;
    out[static_cast<std::size_t>(i)] = v;
  }
  return out;
}

std::string result_name(const Case& c, const CollectiveOptions& o, int group) {
  std::string name = fmt::format("{}/{}/{}", c.label, to_string(o.type), c.counts.bytes);
  if (c.inplace) name += "/inplace";
  if (o.split > 0) name += fmt::format("/group{}", group);
  return name;
}

Result make_result(const Case& c, const CollectiveOptions& o, int n, int group) {
  const auto& info = collective_info(c.op);
  Result res;
  res.benchmark = "collective";
  res.name = result_name(c, o, group);
  res.params = {{"op", std::string(info.name)},
                {"dtype", std::string(to_string(o.type))},
                {"bytes", c.counts.bytes},
                {"count", c.counts.count},
                {"ranks", n},
                {"inplace", c.inplace},
                {"redop", info.reduces ? std::string(to_string(o.redop)) : "none"},
                {"root", info.rooted ? o.root : -1},
                {"bus_factor", bus_factor(c.op, n)},
                {"iters", o.iters},
                {"warmup", o.warmup},
                {"average", static_cast<int>(o.average)}};
  if (o.split > 0) {
    res.params["split"] = o.split;
    res.params["group"] = group;
    res.params["first_rank"] = group * n;
  }
  for (const auto& [k, val] : c.params.items()) res.params[k] = val;
  return res;
}

}  // namespace

void validate_collective_options(const CollectiveOptions& o, int world) {
  if (o.iters < 1) throw usage_error(fmt::format("invalid --iters {}: must be at least 1", o.iters));
  if (o.warmup < 0) throw usage_error(fmt::format("invalid --warmup {}: must be at least 0", o.warmup));
  if (o.split < 0 || (o.split > 0 && world % o.split != 0))
    throw usage_error(fmt::format("invalid --split {}: must divide the world size {}", o.split, world));
  const int n = group_size(o, world);
  if (o.root < 0 || o.root >= n)
    throw usage_error(
        fmt::format("invalid --root {}: must be a rank of the {}-rank communicator", o.root, n));
  if (o.ops.empty()) throw usage_error("invalid --op: no collective selected");
  if (o.min_busbw_gbps && !(*o.min_busbw_gbps >= 0))
    throw usage_error("invalid --min-busbw: must be a number >= 0 (GB/s)");
  if (o.moe) {
    if (o.ops.size() != 1 || o.ops[0] != CollectiveOp::alltoallv)
      throw usage_error("--moe-tokens needs --op alltoallv");
    validate_moe_routing(*o.moe, n);
  } else {
    (void)sweep_sizes(o.min_bytes, o.max_bytes, o.factor, o.step);
  }
}

CollectiveRun run_collective_benchmark(const CollectiveOptions& o, MpiContext& mpi, Backend& backend) {
  validate_collective_options(o, mpi.size());
  const int world = mpi.size();
  const int n = group_size(o, world);
  const int group = mpi.rank() / n;
  const std::size_t elem = elem_bytes(o);
  const std::vector<Case> cases = build_cases(o, n);

  // Memory: two buffers of the largest case (a third for NCCL's in-place staging), checked against the
  // smallest free memory of all ranks so every rank stops alike, before anything is allocated.
  std::uint64_t buffer_bytes = 0;
  for (const auto& c : cases) buffer_bytes = std::max(buffer_bytes, case_buffer_bytes(c, elem));
  const std::uint64_t need = buffer_bytes * (backend.kind() == BackendKind::cuda && o.inplace ? 3 : 2);
  unsigned long long free_local = backend.free_memory_bytes(), free_min = 0;
  FB_CHECK_MPI(MPI_Allreduce(&free_local, &free_min, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, mpi.world()));
  if (need > free_min)
    throw usage_error(
        fmt::format("invalid size: the largest case needs {} per rank ({} buffers of {}), but only {} "
                    "is free (-e/--maxbytes or --moe-tokens/--hidden too large)",
                    format_bytes(need), need / std::max<std::uint64_t>(buffer_bytes, 1),
                    format_bytes(buffer_bytes), format_bytes(free_min)));
  if (cases.empty())
    throw usage_error(
        fmt::format("invalid size range: every size from -b {} to -e {} rounds to 0 bytes on {} ranks",
                    o.min_bytes, o.max_bytes, n));

  auto world_comm = make_communicator(mpi, backend);
  std::unique_ptr<Communicator> group_comm;
  if (o.split > 0) group_comm = world_comm->split(group, mpi.rank());
  Communicator& comm = o.split > 0 ? *group_comm : *world_comm;
  for (const CollectiveOp op : o.ops) {
    const auto& info = collective_info(op);
    if (!comm.supports(o.type, info.reduces, o.redop))
      throw unsupported_error(fmt::format(
          "--op {} with --dtype {}{} is not supported by the {} engine", info.name, to_string(o.type),
          info.reduces ? fmt::format(" --redop {}", to_string(o.redop)) : "", comm.engine()));
  }

  CollectiveRun run;
  // MoE: every rank computed the routing on its own; they must agree (a mismatch would hang alltoallv).
  std::vector<double> routing_checksums;
  if (o.moe) {
    const auto checksum = static_cast<unsigned long long>(moe_dispatch_tokens(*o.moe, n).checksum());
    std::vector<unsigned long long> all(static_cast<std::size_t>(world));
    FB_CHECK_MPI(MPI_Allgather(&checksum, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG,
                               mpi.world()));
    for (const auto c : all) {
      if (c != all[0]) throw runtime_error("MoE routing differs between ranks (non-deterministic routing)");
      routing_checksums.push_back(static_cast<double>(c));
    }
  }

  DeviceBuffer send = backend.allocate(buffer_bytes);
  DeviceBuffer recv = backend.allocate(buffer_bytes);
  backend.fill_random(send, o.type, derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank()) * 2));
  backend.fill_random(recv, o.type, derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank()) * 2 + 1));
  std::vector<std::unique_ptr<Timer>> timers;
  for (int i = 0; i < o.iters; ++i) timers.push_back(backend.make_timer());

  const auto iters = static_cast<std::size_t>(o.iters);
  std::vector<double> samples(iters),
      all_samples(mpi.is_root() ? iters * static_cast<std::size_t>(world) : 0);
  std::vector<double> per_group_busbw_sum(static_cast<std::size_t>(world / n), 0.0);
  std::vector<int> per_group_rows(static_cast<std::size_t>(world / n), 0);
  for (const Case& c : cases) {
    if (!c.skip_reason.empty()) {
      if (mpi.is_root())
        for (int g = 0; g < world / n; ++g) {
          Result res = make_result(c, o, n, g);
          res.status = reports::Status::skipped;
          res.error = c.skip_reason;
          run.results.push_back(std::move(res));
        }
      continue;
    }
    log::debug("{} {} bytes{}", c.label, c.counts.bytes, c.inplace ? " in place" : "");
    std::optional<AlltoallvLayout> v;
    if (c.matrix) v = layout(*c.matrix, comm.rank());
    const AlltoallvLayout* vp = v ? &*v : nullptr;
    const Pointers p = pointers(c, comm.rank(), send, recv, elem);
    const double window_from = o.telemetry ? o.telemetry->mark() : 0;
    for (int i = 0; i < o.warmup; ++i) issue(c, o, comm, p, vp);
    comm.synchronize();
    comm.barrier();
    for (std::size_t i = 0; i < iters; ++i) {
      timers[i]->start();
      issue(c, o, comm, p, vp);
      timers[i]->stop();
    }
    comm.synchronize();
    for (std::size_t i = 0; i < iters; ++i) samples[i] = timers[i]->seconds();

    unsigned long long wrong = 0;
    if (o.check) wrong = check_case(c, o, comm, backend, send, recv, vp);
    std::vector<unsigned long long> all_wrong(static_cast<std::size_t>(world));
    FB_CHECK_MPI(MPI_Gather(samples.data(), o.iters, MPI_DOUBLE, all_samples.data(), o.iters, MPI_DOUBLE, 0,
                            mpi.world()));
    FB_CHECK_MPI(MPI_Gather(&wrong, 1, MPI_UNSIGNED_LONG_LONG, all_wrong.data(), 1, MPI_UNSIGNED_LONG_LONG, 0,
                            mpi.world()));
    const nlohmann::json window = o.telemetry
                                      ? gather_telemetry(mpi, *o.telemetry, window_from, o.telemetry->mark())
                                      : nlohmann::json();
    if (!mpi.is_root()) continue;

    for (int g = 0; g < world / n; ++g) {
      const int first = g * n;
      const std::vector<double> t = reduce_times(all_samples, first, n, o.iters, o.average);
      std::vector<double> t_us(t.size());
      std::transform(t.begin(), t.end(), t_us.begin(), [](double s) { return s * 1e6; });
      const SampleStats stats = summarize(t_us);
      const double seconds = stats.mean / 1e6;  // nccl-tests: time = mean over the iterations
      const double algbw = algbw_gbps(c.counts.bytes, seconds);
      const double busbw = algbw * bus_factor(c.op, n);
      Result res = make_result(c, o, n, g);
      res.set_metric("time_us", Metric{stats.mean, "us", Better::lower, stats});
      res.set_metric("algbw_gbps", Metric{algbw, "GB/s", Better::higher, std::nullopt});
      res.set_metric("busbw_gbps", Metric{busbw, "GB/s", Better::higher, std::nullopt});
      if (c.matrix && o.moe)
        res.set_metric("busiest_share",
                       Metric{c.matrix->busiest_share(), "fraction", Better::lower, std::nullopt});
      std::vector<double> rank_means;
      std::uint64_t group_wrong = 0;
      for (int k = 0; k < n; ++k) {
        const auto rk = static_cast<std::size_t>(first + k);
        const double* s = &all_samples[rk * iters];
        rank_means.push_back(std::accumulate(s, s + iters, 0.0) / static_cast<double>(iters) * 1e6);
        group_wrong += all_wrong[rk];
      }
      res.set_per_rank("time_us", rank_means);
      if (o.moe) {
        res.set_per_rank("routing_checksum", std::vector<double>(routing_checksums.begin() + first,
                                                                 routing_checksums.begin() + first + n));
        nlohmann::json tokens = nlohmann::json::array();
        const TrafficMatrix tm = moe_dispatch_tokens(*o.moe, n);
        for (int src = 0; src < n; ++src) {
          nlohmann::json row = nlohmann::json::array();
          for (int dst = 0; dst < n; ++dst)
            row.push_back(c.label == "moe_combine" ? tm.at(dst, src) : tm.at(src, dst));
          tokens.push_back(row);
        }
        res.extra["tokens_sent"] = tokens;  // [src][dst], deduplicated per destination rank
      }
      if (o.check) {
        res.set_metric("wrong",
                       Metric{static_cast<double>(group_wrong), "count", Better::lower, std::nullopt});
        if (group_wrong > 0) res.fail(fmt::format("{} wrong element(s) in --check", group_wrong));
      }
      attach_telemetry(res, window);
      per_group_busbw_sum[static_cast<std::size_t>(g)] += busbw;
      per_group_rows[static_cast<std::size_t>(g)] += 1;
      run.results.push_back(std::move(res));
    }
  }

  if (mpi.is_root()) {
    for (int g = 0; g < world / n; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      const double avg = per_group_rows[gi] ? per_group_busbw_sum[gi] / per_group_rows[gi] : 0.0;
      Result res;
      res.benchmark = "collective";
      res.name = o.split > 0 ? fmt::format("avg_busbw/group{}", g) : "avg_busbw";
      res.params = {{"dtype", std::string(to_string(o.type))}, {"ranks", n}, {"rows", per_group_rows[gi]}};
      if (o.split > 0) {
        res.params["split"] = o.split;
        res.params["group"] = g;
      }
      if (o.min_busbw_gbps) res.params["min_busbw_gbps"] = *o.min_busbw_gbps;
      res.set_metric("busbw_gbps", Metric{avg, "GB/s", Better::higher, std::nullopt});
      if (o.min_busbw_gbps && avg < *o.min_busbw_gbps)
        res.fail(
            fmt::format("average busbw {:.3f} GB/s is below --min-busbw {:.3f}", avg, *o.min_busbw_gbps));
      run.summary[g == 0 && o.split == 0 ? "avg_busbw_gbps" : fmt::format("avg_busbw_gbps_group{}", g)] = avg;
      run.results.push_back(std::move(res));
    }
    run.summary["engine"] = std::string(comm.engine());
  }
  return run;
}

}  // namespace fb::workloads
