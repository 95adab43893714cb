#include "workloads/collective_benchmark.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"
#include "workloads/collective_check.hpp"
#include "workloads/collective_table.hpp"
#include "workloads/measurement_loop.hpp"
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
      if (collective_info(op).uneven) {
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
  const auto& info = collective_info(c.op);
  char* base = recv.as<char>();
  return {base + inplace_send_offset(info, rank, c.counts.count) * elem,
          base + inplace_recv_offset(info, rank, c.counts.count) * elem};
}

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
  collective_info(c.op).issue({comm, p.send, p.recv, c.counts.count, o.type, o.redop, o.root, v});
}

// Writes the --check inputs, runs the case once and counts this rank's wrong elements. `inject_wrong`
// (FACTORYBENCH_INJECT=wrong@...) flips an exponent bit of the first output element read back, as a link or
// GPU that corrupts data would.
std::uint64_t check_case(const Case& c, const CollectiveOptions& o, Communicator& comm, Backend& backend,
                         DeviceBuffer& send, DeviceBuffer& recv, const AlltoallvLayout* v,
                         bool inject_wrong) {
  const auto& info = collective_info(c.op);
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
  const std::size_t in_base = c.inplace ? inplace_send_offset(info, r, count) : 0;
  CheckAccess access{r,
                     n,
                     o.root,
                     count,
                     c.inplace,
                     pattern,
                     v,
                     [&](std::size_t i, double value) { store_element(input.data(), o.type, in_base + i, value); }};
  info.check_inputs(access);
  backend.copy_to_device(recv, out.data(), out.size());
  if (!c.inplace) backend.copy_to_device(send, in.data(), in.size());
  comm.barrier();
  issue(c, o, comm, pointers(c, r, send, recv, elem), v);
  comm.synchronize();
  backend.copy_to_host(out.data(), recv, out.size());

  std::uint64_t wrong = 0;
  const std::size_t out_base = c.inplace ? inplace_recv_offset(info, r, count) : 0;
  if (inject_wrong && out_base < recv_elems) out[out_base * elem + elem - 1] ^= 0x40;
  access.at = [&](std::size_t i, double value) {
    if (!pattern.matches(load_element(out.data(), o.type, out_base + i), value)) ++wrong;
  };
  info.check_outputs(access);
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
  validate_iterations(o.iters, o.warmup);
  if (o.split < 0 || (o.split > 0 && world % o.split != 0))
    throw usage_error(fmt::format("invalid --split {}: must divide the world size {}", o.split, world));
  const int n = group_size(o, world);
  if (o.root < 0 || o.root >= n)
    throw usage_error(
        fmt::format("invalid --root {}: must be a rank of the {}-rank communicator", o.root, n));
  if (o.ops.empty()) throw usage_error("invalid --op: no collective selected");
  // 100 TB/s is beyond any interconnect built (as health's --allreduce-floor): inf or 1e30 would fail every
  // run, however fast, and read as a measurement.
  if (o.min_busbw_gbps && !(*o.min_busbw_gbps >= 0 && *o.min_busbw_gbps <= 1e5))
    throw usage_error(fmt::format("invalid --min-busbw {:g}: must be a bus bandwidth in [0, 100000] GB/s",
                                  *o.min_busbw_gbps));
  if (o.moe) {
    if (o.ops.size() != 1 || o.ops[0] != CollectiveOp::alltoallv)
      throw usage_error("--moe-tokens needs --op alltoallv");
    validate_moe_routing(*o.moe, n);
  } else {
    (void)sweep_sizes(o.min_bytes, o.max_bytes, o.factor, o.step);
    // Pure, so refused before any backend starts (and in a suite's preflight): -b 2 -e 2 of fp32.
    if (build_cases(o, n).empty())
      throw usage_error(
          fmt::format("invalid size range: every size from -b {} to -e {} rounds to 0 bytes on {} ranks",
                      o.min_bytes, o.max_bytes, n));
  }
}

namespace {

// Two buffers of the largest case (a third for NCCL's in-place staging), and --check's host copies of a
// case's input and output (check_case: on the host backend the buffers' own memory, on a GPU the host's),
// checked against the smallest free memory of all ranks so every rank stops alike, before anything is
// allocated. Returns one buffer's bytes.
std::uint64_t checked_buffer_bytes(const CollectiveOptions& o, const MpiContext& mpi, const Backend& backend,
                                   const std::vector<Case>& cases) {
  const std::size_t elem = elem_bytes(o);
  std::uint64_t buffer_bytes = 0;
  for (const auto& c : cases) buffer_bytes = std::max(buffer_bytes, case_buffer_bytes(c, elem));
  const std::uint64_t buffers = o.inplace ? backend.defaults().collective.inplace_buffers : 2;
  const std::uint64_t staging = o.check ? 2 : 0;
  const bool same_memory = backend.kind() == BackendKind::host;
  const std::uint64_t need = buffer_bytes * (buffers + (same_memory ? staging : 0));
  const auto free_min =
      allreduce(mpi, static_cast<std::uint64_t>(backend.free_memory_bytes()), RankReduce::min);
  if (need > free_min)
    throw usage_error(
        fmt::format("invalid size: the largest case needs {} per rank ({} buffers of {}{}), but only {} "
                    "is free (-e/--maxbytes or --moe-tokens/--hidden too large{})",
                    format_bytes(need), need / std::max<std::uint64_t>(buffer_bytes, 1),
                    format_bytes(buffer_bytes), same_memory && staging ? ", 2 of them --check's copies" : "",
                    format_bytes(free_min), same_memory && staging ? ", or --no-check" : ""));
  if (!same_memory && staging > 0) {
    const std::uint64_t host_free =
        allreduce(mpi, host_memory_available_per_rank(mpi.local_size()), RankReduce::min);
    if (staging * buffer_bytes > host_free)
      throw usage_error(fmt::format(
          "invalid size: --check copies the largest case's input and output to host memory, {} per rank, but "
          "only {} of host memory is free per rank (-e/--maxbytes smaller, or --no-check)",
          format_bytes(staging * buffer_bytes), format_bytes(host_free)));
  }
  return buffer_bytes;
}

void check_supported(const CollectiveOptions& o, const Communicator& comm) {
  for (const CollectiveOp op : o.ops) {
    const auto& info = collective_info(op);
    if (!comm.supports(o.type, info.reduces, o.redop))
      throw unsupported_error(fmt::format(
          "--op {} with --dtype {}{} is not supported by the {} engine", info.name, to_string(o.type),
          info.reduces ? fmt::format(" --redop {}", to_string(o.redop)) : "", comm.engine()));
  }
}

// MoE: every rank computed the routing on its own; they must agree (a mismatch would hang alltoallv).
std::vector<double> routing_checksums(const CollectiveOptions& o, const MpiContext& mpi, int n) {
  std::vector<double> out;
  if (!o.moe) return out;
  const auto all = allgather(mpi, static_cast<std::uint64_t>(moe_dispatch_tokens(*o.moe, n).checksum()));
  for (const auto c : all) {
    if (c != all[0]) throw runtime_error("MoE routing differs between ranks (non-deterministic routing)");
    out.push_back(static_cast<double>(c));
  }
  return out;
}

// Everything the run shares across cases.
struct Bench {
  const CollectiveOptions& o;
  MpiContext& mpi;
  Backend& backend;
  Communicator& comm;
  DeviceBuffer& send;
  DeviceBuffer& recv;
  int n;  // ranks per group
  std::vector<double> checksums;
  // Progress over the sweep, weighted by bytes (a size takes about twice as long as the one before it):
  // the work of the cases done so far, and this case's.
  ProgressMeter* progress = nullptr;
  double done = 0, weight = 0;
  std::string detail;
  std::uint64_t checks_done = 0;  // --check runs on this rank so far (the wrong@ injection counts them)
};

// Every rank's per-iteration seconds (rank 0) and wrong-element counts for one case.
struct CaseSamples {
  std::vector<double> all_seconds;
  std::vector<std::uint64_t> all_wrong;
  nlohmann::json window;
};

CaseSamples run_case(const Case& c, Bench& b) {
  const CollectiveOptions& o = b.o;
  log::debug("{} {} bytes{}", c.label, c.counts.bytes, c.inplace ? " in place" : "");
  std::optional<AlltoallvLayout> v;
  if (c.matrix) v = layout(*c.matrix, b.comm.rank());
  const AlltoallvLayout* vp = v ? &*v : nullptr;
  const Pointers p = pointers(c, b.comm.rank(), b.send, b.recv, elem_bytes(o));
  const double window_from = o.telemetry ? o.telemetry->mark() : 0;
  MeasureLoop loop;
  loop.warmup = o.warmup;
  loop.iters = o.iters;
  loop.before_timing = [&] {
    b.comm.synchronize();
    b.comm.barrier();
  };
  loop.after_timing = [&] { b.comm.synchronize(); };
  if (b.progress)
    loop.on_iteration = [&](int done, int total) {
      if (b.progress->due())
        b.progress->update(b.done + b.weight * done / total,
                           fmt::format("{}: iteration {}/{}", b.detail, done, total));
    };
  const Measurement m = measure(b.backend, loop, [&](int) { issue(c, o, b.comm, p, vp); });

  unsigned long long wrong = 0;
  if (o.check) {
    const auto& faults = injected_faults();
    ++b.checks_done;
    const bool inject = faults.wrong_rank == b.mpi.rank() && faults.wrong_check == b.checks_done;
    wrong = check_case(c, o, b.comm, b.backend, b.send, b.recv, vp, inject);
  }
  CaseSamples out;
  out.all_seconds = gather_samples(b.mpi, m.seconds);
  out.all_wrong = gather_to_root(b.mpi, static_cast<std::uint64_t>(wrong));
  out.all_wrong.resize(static_cast<std::size_t>(b.mpi.size()));  // zeros off rank 0, which alone reads them
  if (o.telemetry) out.window = gather_telemetry(b.mpi, *o.telemetry, window_from, o.telemetry->mark());
  return out;
}

// The tokens each rank sent each other rank, [src][dst] (deduplicated per destination rank).
nlohmann::json tokens_sent(const Case& c, const MoeRouting& moe, int n) {
  nlohmann::json tokens = nlohmann::json::array();
  const TrafficMatrix tm = moe_dispatch_tokens(moe, n);
  for (int src = 0; src < n; ++src) {
    nlohmann::json row = nlohmann::json::array();
    for (int dst = 0; dst < n; ++dst)
      row.push_back(c.label == "moe_combine" ? tm.at(dst, src) : tm.at(src, dst));
    tokens.push_back(row);
  }
  return tokens;
}

// Rank 0: the result of group `g` for one measured case. Its per-iteration busbw is added to
// `busbw_sums` (one entry per iteration), for the average's spread.
Result group_result(const Case& c, const Bench& b, const CaseSamples& s, int g,
                    std::vector<double>& busbw_sums) {
  const CollectiveOptions& o = b.o;
  const int n = b.n, first = g * n;
  const auto iters = static_cast<std::size_t>(o.iters);
  const std::vector<double> t = reduce_times(s.all_seconds, first, n, o.iters, o.average);
  std::vector<double> t_us(t.size());
  std::transform(t.begin(), t.end(), t_us.begin(), [](double x) { return x * 1e6; });
  const SampleStats stats = summarize(t_us);
  // nccl-tests (common.cu): each rank's mean time over the iterations, combined over the ranks by -a. For
  // rank 0 and the mean this equals the mean of the per-iteration combination; for min and max it does not
  // (the fastest rank's mean, not the mean of each iteration's fastest rank). The per-iteration series
  // gives the spread (stats).
  std::vector<double> group_means_us;
  for (int k = 0; k < n; ++k) {
    const double* x = &s.all_seconds[static_cast<std::size_t>(first + k) * iters];
    group_means_us.push_back(std::accumulate(x, x + iters, 0.0) / static_cast<double>(iters) * 1e6);
  }
  double time_us = stats.mean;
  if (o.average == TimeAverage::min)
    time_us = *std::min_element(group_means_us.begin(), group_means_us.end());
  if (o.average == TimeAverage::max)
    time_us = *std::max_element(group_means_us.begin(), group_means_us.end());
  const double seconds = time_us / 1e6;
  const double algbw = algbw_gbps(c.counts.bytes, seconds);
  Result res = make_result(c, o, n, g);
  res.set_metric("time_us", Metric{time_us, "us", Better::lower, stats});
  // The bandwidths are nccl-tests' (from the mean time); their spread is that of the per-iteration
  // bandwidths, so compare judges them as noisy as the time they come from.
  std::vector<double> per_iteration;
  for (const double x : t) per_iteration.push_back(algbw_gbps(c.counts.bytes, x));
  auto algbw_metric = reports::metric_from_samples(per_iteration, "GB/s", Better::higher);
  algbw_metric.value = algbw;
  res.set_metric("algbw_gbps", algbw_metric);
  res.set_metric("busbw_gbps",
                 reports::scaled_metric(algbw_metric, bus_factor(c.op, n), "GB/s", Better::higher));
  busbw_sums.resize(per_iteration.size(), 0.0);
  for (std::size_t k = 0; k < per_iteration.size(); ++k)
    busbw_sums[k] += per_iteration[k] * bus_factor(c.op, n);
  if (c.matrix && o.moe)
    res.set_metric("busiest_share",
                   Metric{c.matrix->busiest_share(), "fraction", Better::lower, std::nullopt});
  std::vector<double> rank_means;
  std::uint64_t group_wrong = 0;
  for (int k = 0; k < n; ++k) {
    const auto rk = static_cast<std::size_t>(first + k);
    const double* x = &s.all_seconds[rk * iters];
    rank_means.push_back(std::accumulate(x, x + iters, 0.0) / static_cast<double>(iters) * 1e6);
    group_wrong += s.all_wrong[rk];
  }
  res.set_per_rank("time_us", rank_means);
  if (o.moe) {
    res.set_per_rank("routing_checksum",
                     std::vector<double>(b.checksums.begin() + first, b.checksums.begin() + first + n));
    res.extra["tokens_sent"] = tokens_sent(c, *o.moe, n);
  }
  if (o.check) {
    res.set_metric("wrong", Metric{static_cast<double>(group_wrong), "count", Better::lower, std::nullopt});
    if (group_wrong > 0) {
      // Which ranks saw them: a wrong result on one rank points at its GPU or link, on all at the op.
      std::vector<std::string> where;
      for (int k = 0; k < n; ++k)
        if (const auto w = s.all_wrong[static_cast<std::size_t>(first + k)]; w > 0)
          where.push_back(fmt::format("rank {}: {}", first + k, w));
      const std::size_t shown = std::min<std::size_t>(where.size(), 4);
      res.fail(fmt::format(
          "{} wrong element(s) in --check ({}{})", group_wrong,
          fmt::join(where.begin(), where.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
          where.size() > shown ? fmt::format(", and {} more rank(s)", where.size() - shown) : std::string()));
    }
  }
  attach_telemetry(res, s.window);
  return res;
}

// Rank 0: one `avg_busbw` result per group (failed under --min-busbw), averaged over its measured rows.
// Its value is nccl-tests' (the mean of the rows' busbw); its spread is that of the per-iteration average
// (iteration k's busbw averaged over the rows), so that compare judges it as noisy as the rows it comes from
// (`busbw_sums[g]`: the rows' per-iteration busbw summed).
void add_averages(CollectiveRun& run, const CollectiveOptions& o, int n, int groups, std::string_view engine,
                  const std::vector<std::vector<double>>& busbw_sums) {
  for (int g = 0; g < groups; ++g) {
    double sum = 0;
    int rows = 0;
    for (const auto& r : run.results)
      if (r.status != reports::Status::skipped && r.params.contains("bytes") &&
          (o.split == 0 || r.params.value("group", -1) == g)) {
        sum += r.metric("busbw_gbps")->value;
        ++rows;
      }
    const double avg = rows ? sum / rows : 0.0;
    Result res;
    res.benchmark = "collective";
    res.name = o.split > 0 ? fmt::format("avg_busbw/group{}", g) : "avg_busbw";
    // The op averaged ("all" over several: a published average is one op's, and compare's match_params tells
    // them apart).
    res.params = {{"op", o.ops.size() == 1 ? std::string(to_string(o.ops[0])) : std::string("all")},
                  {"dtype", std::string(to_string(o.type))},
                  {"ranks", n},
                  {"rows", rows}};
    if (o.split > 0) {
      res.params["split"] = o.split;
      res.params["group"] = g;
    }
    if (o.min_busbw_gbps) res.params["min_busbw_gbps"] = *o.min_busbw_gbps;
    Metric busbw{avg, "GB/s", Better::higher, std::nullopt};
    if (rows > 0 && busbw_sums[static_cast<std::size_t>(g)].size() >= 2) {
      std::vector<double> per_iteration = busbw_sums[static_cast<std::size_t>(g)];
      for (double& x : per_iteration) x /= rows;
      busbw = reports::metric_from_samples(per_iteration, "GB/s", Better::higher);
      busbw.value = avg;
    }
    res.set_metric("busbw_gbps", busbw);
    if (o.min_busbw_gbps && avg < *o.min_busbw_gbps)
      res.fail(fmt::format("average busbw {:.3f} GB/s is below --min-busbw {:.3f}", avg, *o.min_busbw_gbps));
    run.summary[g == 0 && o.split == 0 ? "avg_busbw_gbps" : fmt::format("avg_busbw_gbps_group{}", g)] = avg;
    run.results.push_back(std::move(res));
  }
  run.summary["engine"] = std::string(engine);
}

}  // namespace

void check_wrong_injection_fits(const CollectiveOptions& o, int world_size) {
  // Every rank builds the same cases, so every rank refuses alike.
  const auto& faults = injected_faults();
  if (!o.check || faults.wrong_rank < 0) return;
  const auto cases = build_cases(o, group_size(o, world_size));
  const auto checks = static_cast<std::uint64_t>(
      std::count_if(cases.begin(), cases.end(), [](const Case& c) { return c.skip_reason.empty(); }));
  if (faults.wrong_check > checks)
    throw usage_error(
        fmt::format("FACTORYBENCH_INJECT '{}': wrong at check {}, but this run makes {} check(s)",
                    faults.text, faults.wrong_check, checks));
}

CollectiveRun run_collective_benchmark(const CollectiveOptions& o, MpiContext& mpi, Backend& backend) {
  validate_collective_options(o, mpi.size());
  check_wrong_injection_fits(o, mpi.size());
  const int n = group_size(o, mpi.size());
  const int groups = mpi.size() / n;
  const std::vector<Case> cases = build_cases(o, n);
  const std::uint64_t buffer_bytes = checked_buffer_bytes(o, mpi, backend, cases);

  auto world_comm = make_communicator(mpi, backend);
  std::unique_ptr<Communicator> group_comm;
  if (o.split > 0) group_comm = world_comm->split(mpi.rank() / n, mpi.rank());
  Communicator& comm = o.split > 0 ? *group_comm : *world_comm;
  check_supported(o, comm);
  if (o.on_checked) o.on_checked(comm.engine());

  DeviceBuffer send = backend.allocate(buffer_bytes);
  DeviceBuffer recv = backend.allocate(buffer_bytes);
  backend.fill_random(send, o.type, derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank()) * 2));
  backend.fill_random(recv, o.type, derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank()) * 2 + 1));
  Bench bench{o, mpi, backend, comm, send, recv, n, routing_checksums(o, mpi, n), nullptr, 0, 0, {}};

  CollectiveRun run;
  double total_weight = 0;
  for (const Case& c : cases)
    total_weight += c.skip_reason.empty() ? static_cast<double>(c.counts.bytes) + 1 : 0;
  ProgressMeter progress("collective", total_weight);
  bench.progress = &progress;
  std::vector<std::vector<double>> busbw_sums(static_cast<std::size_t>(groups));  // per group, per iteration
  std::size_t index = 0;
  for (const Case& c : cases) {
    ++index;
    bench.weight = c.skip_reason.empty() ? static_cast<double>(c.counts.bytes) + 1 : 0;
    bench.detail = fmt::format("case {}/{}, {} {}{}", index, cases.size(), c.label,
                               format_bytes(c.counts.bytes), c.inplace ? " in place" : "");
    progress.update(bench.done, bench.detail);
    if (!c.skip_reason.empty()) {
      if (mpi.is_root())
        for (int g = 0; g < groups; ++g) {
          Result res = make_result(c, o, n, g);
          res.status = reports::Status::skipped;
          res.error = c.skip_reason;
          if (o.on_result) o.on_result(res);
          run.results.push_back(std::move(res));
        }
      continue;
    }
    const CaseSamples samples = run_case(c, bench);
    bench.done += bench.weight;
    if (!mpi.is_root()) continue;
    for (int g = 0; g < groups; ++g) {
      run.results.push_back(group_result(c, bench, samples, g, busbw_sums[static_cast<std::size_t>(g)]));
      if (o.on_result) o.on_result(run.results.back());
    }
  }
  if (mpi.is_root()) add_averages(run, o, n, groups, comm.engine(), busbw_sums);
  return run;
}

}  // namespace fb::workloads
