// factorybench locate: which node, rank or link is it? The pairwise point-to-point matrix and the
// collective bisection (workloads/p2p_matrix.hpp, workloads/collective_bisection.hpp, docs/locate.md).
// Exit 0 when nothing is named, 1 when a link, rank or node is.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "core/atomic_file.hpp"
#include "core/communicator.hpp"
#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/hang_watchdog.hpp"
#include "core/json_file.hpp"
#include "core/logging.hpp"
#include "core/mpi_context.hpp"
#include "core/rank_collectives.hpp"
#include "core/units.hpp"
#include "reports/locate_console.hpp"
#include "reports/locate_extra.hpp"
#include "reports/report_json.hpp"
#include "tools/comma_list.hpp"
#include "tools/command_hang_watchdog.hpp"
#include "tools/commands.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/report_so_far.hpp"
#include "workloads/collective_bisection.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/mpi_transport_record.hpp"
#include "workloads/p2p_matrix.hpp"
#include "workloads/run_environment.hpp"
#include "workloads/transport_record.hpp"

namespace fb::tools {
namespace {

struct LocateCliOptions {
  std::string tests = "p2p,bisection";
  std::string scope = "node";
  std::string bytes;  // default: 1M on host, 256M on cuda
  std::optional<double> min_p2p_bw;
  double outlier_threshold = 0.5;
  int iters = 5, warmup = 1, confirm_passes = 2;
  std::string allreduce_size;  // default: 1M on host, 256M on cuda
  std::optional<double> allreduce_floor;
  std::string floors;
  std::string expect_transport;
  std::vector<std::string> nccl_logs;
  std::string hang_timeout = "10m";
  std::string run_dir = ".";
  std::set<std::string> given;  // the options on the command line, by long name ("--scope")
};

std::vector<std::uint64_t> parse_sizes(const std::string& text) {
  std::vector<std::uint64_t> out;
  const auto items = split_comma_list(text, "-b/--bytes");
  for (const auto& item : items) {
    const auto b = parse_size(item, "-b/--bytes");
    if (b == 0) throw usage_error("invalid -b/--bytes '" + item + "': must be positive");
    // The matrix moves whole fp32 elements (workloads/p2p_matrix.cpp): two sizes that round to the same
    // one would be two results of one name, which compare refuses.
    const std::uint64_t moved = std::max<std::uint64_t>(1, b / 4) * 4;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::max<std::uint64_t>(1, out[i] / 4) * 4 == moved)
        throw usage_error(
            fmt::format("invalid -b/--bytes '{}': {} and {} are both measured as {} bytes (whole "
                        "fp32 elements)",
                        text, items[i], item, moved));
    out.push_back(b);
  }
  if (out.empty()) throw usage_error("invalid -b/--bytes '': expected SIZE[,SIZE...]");
  return out;
}

// --floors NAME[,NAME...]: configs/floors/<name>.json (or a path), the published floor of a fabric class.
// Later files fill what earlier ones left unset.
struct Floors {
  double allreduce_node = 0, allreduce_network = 0, p2p_node = 0;
  std::string p2p_node_from;  // the file that set p2p_node, as the p2p verdict names it
  nlohmann::json used = nlohmann::json::array();
};

Floors load_floors(const std::string& names) {
  Floors f;
  if (names.empty()) return f;
  std::set<std::string> seen;
  for (const auto& name : split_comma_list(names, "--floors")) {
    if (!seen.insert(name).second)
      throw usage_error(fmt::format("invalid --floors '{}': '{}' named twice", names, name));
    const auto path = resolve_config("floors", name);
    const auto j = read_json_file(path);
    if (!j.is_object())
      throw input_error(
          fmt::format("{}: $: expected an object with the floors (GB/s) by name", path.string()));
    static const std::set<std::string> known{"name",
                                             "description",
                                             "source",
                                             "allreduce_node_busbw_gbps",
                                             "allreduce_network_busbw_gbps",
                                             "p2p_node_bw_gbps"};
    for (const auto& [key, value] : j.items()) {
      if (!known.count(key)) throw input_error(fmt::format("{}: $.{}: unknown field", path.string(), key));
      if ((key == "name" || key == "description" || key == "source") && !value.is_string())
        throw input_error(fmt::format("{}: $.{}: expected a string", path.string(), key));
    }
    auto take = [&](const char* key, double& into) {
      if (!j.contains(key)) return;
      if (!j[key].is_number() || j[key].get<double>() <= 0)
        throw input_error(fmt::format("{}: $.{}: must be a positive number", path.string(), key));
      if (into == 0) into = j[key].get<double>();
    };
    take("allreduce_node_busbw_gbps", f.allreduce_node);
    take("allreduce_network_busbw_gbps", f.allreduce_network);
    take("p2p_node_bw_gbps", f.p2p_node);
    if (f.p2p_node > 0 && f.p2p_node_from.empty()) f.p2p_node_from = j.value("name", name);
    f.used.push_back({{"name", j.value("name", name)}, {"source", j.value("source", "")}});
  }
  return f;
}

// Files of `paths` (directories: every file inside), concatenated.
std::string read_logs(const std::vector<std::string>& paths) {
  std::string text;
  for (const auto& p : paths) {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) text += read_text_file(f) + "\n";
  }
  return text;
}

// This rank's Open MPI selection (the component objects still loaded after MPI_Init) and its real host name
// (not FACTORYBENCH_FAKE_HOSTS': which BTL Open MPI picks depends on where the peer really runs).
std::string local_mpi_selection() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return nlohmann::json{{"host", host},
                        {"components", workloads::parse_loaded_mpi_components(text.str()).to_json()}}
      .dump();
}

// The host record: every rank's Open MPI selection (gathered local_mpi_selection()), the distinct selections
// with their ranks, and the transport kinds they imply (workloads/mpi_transport_record.hpp).
void mpi_transport_record(reports::Result& r, const LocateCliOptions& cli,
                          const std::vector<std::string>& ranks,
                          const std::optional<std::set<std::string>>& expected) {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v && *v ? v : "");
  };
  const auto pml = env("OMPI_MCA_pml"), btl = env("OMPI_MCA_btl");
  std::vector<workloads::MpiComponents> selected;
  std::vector<std::string> hosts;
  for (const auto& text : ranks) {
    const auto j = nlohmann::json::parse(text);
    workloads::MpiComponents c;
    c.pml = j["components"]["pml"].get<std::set<std::string>>();
    c.mtl = j["components"]["mtl"].get<std::set<std::string>>();
    c.btl = j["components"]["btl"].get<std::set<std::string>>();
    selected.push_back(std::move(c));
    hosts.push_back(j["host"].get<std::string>());
  }
  const std::set<std::string> distinct_hosts(hosts.begin(), hosts.end());
  std::set<std::string> kinds;
  nlohmann::json groups = nlohmann::json::array();
  std::vector<std::string> group_text;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const auto same_host = std::count(hosts.begin(), hosts.end(), hosts[i]) > 1;
    const auto k = workloads::mpi_transport_kinds(selected[i], same_host, distinct_hosts.size() > 1);
    kinds.insert(k.begin(), k.end());
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const nlohmann::json& x) { return x["components"] == selected[i].to_json(); });
    if (g == groups.end()) {
      groups.push_back({{"components", selected[i].to_json()}, {"ranks", nlohmann::json::array()}});
      group_text.push_back(selected[i].summary());
      g = groups.end() - 1;
    }
    (*g)["ranks"].push_back(i);
  }
  reports::TransportExtra x;
  x.record = {{"engine", "mpi"},
              {"library", mpi_library_version()},
              {"pml_requested", pml.empty() ? "(auto)" : pml},
              {"btl_requested", btl.empty() ? "(auto)" : btl},
              {"selected", groups},
              {"kinds", kinds}};
  std::string which;
  for (std::size_t i = 0; i < groups.size(); ++i)
    which += fmt::format(
        "{}{} ({})", i ? "; " : "", group_text[i],
        groups.size() == 1
            ? fmt::format("all {} rank(s)", ranks.size())
            : fmt::format("ranks {}", fmt::join(groups[i]["ranks"].get<std::vector<int>>(), ",")));
  x.summary = fmt::format("MPI {}; selected {}; transports {}", mpi_library_version(), which,
                          kinds.empty() ? "none (no peer)" : fmt::format("{}", fmt::join(kinds, ",")));
  reports::write_transport_extra(r, x);
  if (kinds.empty() && !expected) {  // nothing recorded is not a pass
    r.status = reports::Status::skipped;
    r.error = "a world of one rank has no peer: no transport to record";
    return;
  }
  if (!expected) return;
  if (kinds.empty())
    r.fail("--expect-transport " + cli.expect_transport + ": a world of one rank has no peer to check");
  workloads::TransportRecord used;
  used.kinds = kinds;
  if (const auto extra = workloads::unexpected_transports(used, *expected); !kinds.empty() && !extra.empty())
    r.fail(fmt::format("Open MPI uses {} but --expect-transport allows only {} ({})", fmt::join(extra, ","),
                       cli.expect_transport, x.summary));
}

// The transport record: NCCL's init log (cuda, or --nccl-log files from any run); on host without logs,
// Open MPI's selection on every rank (`mpi_ranks`, see mpi_transport_record).
reports::Result transport_result(const LocateCliOptions& cli, const std::vector<std::string>& logs,
                                 const std::vector<std::string>& mpi_ranks,
                                 const std::optional<std::set<std::string>>& expected) {
  reports::Result r;
  r.benchmark = "locate";
  r.name = "transport";
  r.params = {{"test", "transport"}};
  if (!cli.expect_transport.empty()) r.params["expect"] = cli.expect_transport;
  if (logs.empty()) {
    mpi_transport_record(r, cli, mpi_ranks, expected);
    return r;
  }
  const auto record = workloads::parse_nccl_init_log(read_logs(logs));
  reports::TransportExtra x;
  x.record = record.to_json();
  x.record["engine"] = "nccl";
  r.set_metric("nvls_channels",
               {static_cast<double>(record.nvls_channels), "count", reports::Better::higher, std::nullopt});
  x.summary = fmt::format("NCCL network {}, transports {}", record.network.empty() ? "-" : record.network,
                          fmt::join(record.kinds, ","));
  reports::write_transport_extra(r, x);
  if (expected) {
    const auto extra = workloads::unexpected_transports(record, *expected);
    if (record.kinds.empty())
      r.fail("--expect-transport " + cli.expect_transport + ": NCCL's log names no transport");
    else if (!extra.empty())
      r.fail(fmt::format("NCCL used {} but --expect-transport allows only {} ({})", fmt::join(extra, ","),
                         cli.expect_transport, x.summary));
  }
  return r;
}

int run_locate(const LocateCliOptions& cli, Session& session) {
  bool want_p2p = false, want_bisection = false, want_transport = false;
  {
    for (const auto& t : split_comma_list(cli.tests, "--tests")) {
      bool* want = t == "p2p"         ? &want_p2p
                   : t == "bisection" ? &want_bisection
                   : t == "transport" ? &want_transport
                                      : nullptr;
      if (!want) throw usage_error("invalid --tests '" + cli.tests + "': expected p2p, bisection, transport");
      if (*want) throw usage_error("invalid --tests '" + cli.tests + "': " + t + " named twice");
      *want = true;
    }
  }
  if (!want_p2p && !want_bisection && !want_transport)  // nothing run would read as a PASS
    throw usage_error("invalid --tests '" + cli.tests + "': name at least one of p2p, bisection, transport");
  // An option of a test that does not run is refused, as --nccl-log is: it would be recorded, never used.
  const auto acts_on = [&](const std::string& option, bool acts, const char* tests) {
    if (cli.given.count(option) && !acts)
      throw usage_error(fmt::format("{} acts on the {} test{}: it does nothing with --tests {}",
                                    option == "--bytes" ? "-b/--bytes" : option, tests,
                                    std::string_view(tests).find(" or ") == std::string_view::npos ? "" : "s",
                                    cli.tests));
  };
  acts_on("--scope", want_p2p, "p2p");
  acts_on("--bytes", want_p2p, "p2p");
  acts_on("--min-p2p-bw", want_p2p, "p2p");
  acts_on("--allreduce-size", want_bisection, "bisection");
  acts_on("--allreduce-floor", want_bisection, "bisection");
  for (const char* option : {"--outlier-threshold", "--iters", "--warmup", "--confirm-passes"})
    acts_on(option, want_p2p || want_bisection, "p2p or bisection");
  // A fabric's floors hold the all-reduce floors and the network's p2p floor, between nodes.
  if (cli.given.count("--floors") && !want_bisection && !(want_p2p && cli.scope == "node"))
    throw usage_error(
        fmt::format("--floors acts on the bisection test and on p2p between nodes (--scope "
                    "node): it does nothing with --tests {}{}",
                    cli.tests, want_p2p ? " --scope rank" : ""));
  if (!(cli.outlier_threshold > 0 && cli.outlier_threshold < 1))  // NaN too: it would never flag
    throw usage_error(
        fmt::format("invalid --outlier-threshold {:g}: must be a fraction in (0, 1)", cli.outlier_threshold));
  // NaN too: it compares false, so it would switch the --floors preset off without a word.
  if (cli.min_p2p_bw && !(*cli.min_p2p_bw >= 0 && std::isfinite(*cli.min_p2p_bw)))
    throw usage_error(
        fmt::format("invalid --min-p2p-bw {:g}: must be a finite number >= 0", *cli.min_p2p_bw));
  if (cli.allreduce_floor && !(*cli.allreduce_floor >= 0 && std::isfinite(*cli.allreduce_floor)))
    throw usage_error(
        fmt::format("invalid --allreduce-floor {:g}: must be a finite number >= 0", *cli.allreduce_floor));
  const Floors floors = load_floors(cli.floors);
  std::optional<std::set<std::string>> expected_transports;
  if (!cli.expect_transport.empty())
    expected_transports = workloads::parse_transport_kinds(cli.expect_transport);
  for (const auto& f : cli.nccl_logs)
    if (!std::filesystem::exists(f))
      throw usage_error("invalid --nccl-log '" + f + "': no such file or directory");
  // Logs given are read now, not after minutes of measurement: one that names no transport (not NCCL's init
  // output, or NCCL_DEBUG below INFO) would record nothing and pass. Without the transport test they would
  // be read by nobody.
  if (!cli.nccl_logs.empty()) {
    if (!want_transport && cli.expect_transport.empty())
      throw usage_error(
          "--nccl-log is read by the transport test: add --tests transport or --expect-transport");
    if (workloads::parse_nccl_init_log(read_logs(cli.nccl_logs)).kinds.empty())
      throw usage_error(
          fmt::format("invalid --nccl-log '{}': no NCCL transport line in it (expected NCCL_DEBUG=INFO "
                      "output of the job's "
                      "init, with lines such as 'Channel 00/0 : 0[0] -> 1[1] via P2P/IPC')",
                      fmt::join(cli.nccl_logs, "', '")));
  }
  workloads::validate_iterations(cli.iters, cli.warmup);
  if (cli.confirm_passes < 0 || cli.confirm_passes > 100)
    throw usage_error(fmt::format("invalid --confirm-passes {}: must be in [0, 100]", cli.confirm_passes));
  std::vector<std::uint64_t> sizes;
  if (!cli.bytes.empty()) sizes = parse_sizes(cli.bytes);
  std::uint64_t allreduce_bytes = 0;
  if (!cli.allreduce_size.empty()) {
    allreduce_bytes = parse_size(cli.allreduce_size, "--allreduce-size");
    if (allreduce_bytes == 0)
      throw usage_error("invalid --allreduce-size '" + cli.allreduce_size + "': must be positive");
  }

  const double hang_timeout = parse_command_hang_timeout(cli.hang_timeout);
  auto& mpi = session.mpi();
  // A bad FACTORYBENCH_INJECT stops here, before any measurement.
  // A slow link acts on the matrix's messages only; without the p2p test nothing could show it.
  check_injection_for(session, "locate",
                      {.communicator = want_p2p || want_bisection, .point_to_point = want_p2p});
  // At --scope node only each host's first rank sends: a slow link naming another rank would delay nothing
  // (alone; in a suite the variable is the job's, and each step acts on what it can).
  if (want_p2p && cli.scope == "node" && !session.in_suite()) {
    const auto senders = workloads::p2p_endpoints(workloads::P2pScope::node, mpi.hostnames(),
                                                  std::vector<int>(mpi.hostnames().size()));
    const auto endpoint = [&](int rank) {
      return std::any_of(senders.begin(), senders.end(), [&](const auto& e) { return e.rank == rank; });
    };
    for (const auto& link : injected_faults().slow_links)
      if (!endpoint(link.a) || !endpoint(link.b))
        throw usage_error(fmt::format(
            "FACTORYBENCH_INJECT '{}': slow-link between ranks {} and {}: at --scope node only each host's "
            "first rank sends, so it would delay nothing; name those ranks, or use --scope rank",
            injected_faults().text, link.a, link.b));
  }
  check_hang_run_dir(session, cli.run_dir, hang_timeout);
  if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
  auto& backend = session.backend();
  const bool on_gpu = backend.kind() == BackendKind::cuda;
  if (sizes.empty()) sizes = {on_gpu ? 256ull << 20 : 1ull << 20};
  if (allreduce_bytes == 0) allreduce_bytes = on_gpu ? 256ull << 20 : 1ull << 20;
  // Each test's buffer against the smallest free memory of any rank, before a directory is made or a buffer
  // allocated: every rank stops alike, with the option to change (was: exit 3 from the allocation, and the
  // watchdog's directory left behind).
  const auto free_min =
      allreduce(mpi, static_cast<std::uint64_t>(backend.free_memory_bytes()), RankReduce::min);
  const auto check_fits = [&](bool wanted, std::uint64_t bytes, const std::string& option,
                              const std::string& text) {
    if (wanted && bytes > free_min)
      throw usage_error(fmt::format("invalid {} {}: a buffer of {} per rank, but only {} is free", option,
                                    text, format_bytes(bytes), format_bytes(free_min)));
  };
  check_fits(want_p2p, *std::max_element(sizes.begin(), sizes.end()), "-b/--bytes",
             cli.bytes.empty() ? format_bytes(sizes.front()) : cli.bytes);
  check_fits(want_bisection, allreduce_bytes, "--allreduce-size",
             cli.allreduce_size.empty() ? format_bytes(allreduce_bytes) : cli.allreduce_size);
  // After every check (a refused input gets its one line alone), before the first measurement.
  if (const auto thin = workloads::few_samples_warning(cli.iters, cli.warmup); !thin.empty())
    log::warn("{}", thin);
  auto report = session.begin_report();
  // NCCL's own init log into the run directory, read back for the transport record (unless the user set
  // NCCL_DEBUG already, or gave logs with --nccl-log). Set before the NCCL communicator is created.
  const auto run_id = report.run.value("id", std::string("run"));
  const auto nccl_dir = std::filesystem::path(cli.run_dir) / ("fb-nccl-" + run_id);
  const bool own_nccl_log = on_gpu && cli.nccl_logs.empty() && !std::getenv("NCCL_DEBUG");
  if (own_nccl_log) {
    // --run-dir is the user's (checked up front only with the watchdog on): one that cannot hold the log is
    // a usage error on every rank alike, not an exception on one rank while the others go on into NCCL's
    // init and wait there.
    std::error_code ec;
    std::filesystem::create_directories(nccl_dir, ec);
    if (!mpi.all_true(!ec))
      throw usage_error(fmt::format("invalid --run-dir {}: cannot create {} for NCCL's init log{}",
                                    cli.run_dir, nccl_dir.filename().string(),
                                    ec ? ": " + ec.message() : std::string(" on another rank")));
    ::setenv("NCCL_DEBUG", "INFO", 1);
    ::setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
    ::setenv("NCCL_DEBUG_FILE", (nccl_dir / "%h.%p.log").c_str(), 1);
  }
  auto comm = make_communicator(mpi, backend);
  if (!floors.used.empty()) report.summary["locate"]["floors"] = floors.used;

  // The watchdog's side channel: <run-dir>/fb-hang-<run id>/rank-R.state (tools/command_hang_watchdog.hpp).
  // A hang in a later test keeps what the earlier ones measured (the p2p matrix before a hung bisection):
  // a copy taken after each test, read by the watchdog's thread under the lock.
  const auto so_far = ReportSoFar::make(report);
  const auto keep_so_far = [&] {
    so_far->set(report);
    session.save_so_far();  // -o keeps it even if the job is killed (tools/interrupt_report.hpp)
  };
  CommandHangWatchdog watchdog(mpi, "locate", report.run.value("id", std::string("run")),
                               session.hang_report(ReportSoFar::reader(so_far)), session.options().output,
                               cli.run_dir, hang_timeout);
  // Ctrl-C or a time limit keeps the same (tools/interrupt_report.hpp).
  std::optional<InterruptReport> interrupted;
  interrupted.emplace(session, "locate", ReportSoFar::reader(so_far), [](const reports::Report& r) {
    std::ostringstream text;
    reports::print_locate_report(text, r);
    std::string tests = text.str();
    tests.erase(tests.rfind("locate: "));  // its verdict: the run did not end, the error line says why
    std::cout << tests;
  });
  bool named = false;

  workloads::P2pOptions p;
  p.scope = cli.scope == "rank" ? workloads::P2pScope::rank : workloads::P2pScope::node;
  p.sizes = sizes;
  p.iterations = cli.iters;
  p.warmup = cli.warmup;
  p.min_bw_gbps = cli.min_p2p_bw.value_or(p.scope == workloads::P2pScope::node ? floors.p2p_node : 0);
  if (!cli.min_p2p_bw && p.min_bw_gbps > 0)
    p.min_bw_source = "--floors " + floors.p2p_node_from + "'s p2p floor";
  p.outlier_threshold = cli.outlier_threshold;
  p.confirm_passes = cli.confirm_passes;
  p.seed = session.options().seed;
  if (want_p2p) {
    log::debug("locate: p2p");
    const auto p2p = workloads::measure_p2p_matrix(mpi, backend, *comm, p);
    for (auto& r : workloads::p2p_results(p2p, p)) report.results.push_back(std::move(r));
    report.summary["locate"]["p2p"] = workloads::p2p_summary(p2p);
    named = named || !p2p.verdict.pass();
    keep_so_far();
  }
  if (want_bisection) {
    log::debug("locate: bisection");
    workloads::BisectionOptions b;
    b.bytes = allreduce_bytes;
    b.iterations = cli.iters;
    b.warmup = cli.warmup;
    b.node_floor_gbps = cli.allreduce_floor.value_or(floors.allreduce_node);
    b.network_floor_gbps = cli.allreduce_floor.value_or(floors.allreduce_network);
    b.outlier_threshold = cli.outlier_threshold;
    b.confirm_passes = cli.confirm_passes;
    const auto run = workloads::run_bisection(mpi, backend, *comm, b);
    report.results.push_back(workloads::bisection_result(run, b));
    report.summary["locate"]["bisection"] = report.results.back().extra;
    named = named || !run.verdict.nodes.empty();
    keep_so_far();
  }
  if (want_transport || expected_transports) {
    mpi.barrier();  // every rank's NCCL log is written
    const auto logs = own_nccl_log ? std::vector<std::string>{nccl_dir.string()} : cli.nccl_logs;
    const auto mpi_ranks =
        logs.empty() ? gather_to_root(mpi, local_mpi_selection()) : std::vector<std::string>{};
    if (mpi.is_root()) {
      reports::Result r = transport_result(cli, logs, mpi_ranks, expected_transports);
      named = named || r.status == reports::Status::failed;
      report.summary["locate"]["transport"] = reports::read_transport_extra(r).record;
      report.results.push_back(std::move(r));
    }
    named = mpi.all_true(!named) ? false : true;
  }
  interrupted.reset();
  watchdog.finish();  // no hang: the state files have served their purpose
  session.finish(report);
  if (mpi.is_root() && !session.options().quiet) {
    reports::print_locate_report(std::cout, report);
    std::cout.flush();
  }
  return named ? 1 : 0;
}

}  // namespace

Command add_locate_command(CLI::App& app) {
  auto opt = std::make_shared<LocateCliOptions>();
  auto* sub = app.add_subcommand(
      "locate",
      "Find the bad node, rank or link: a pairwise point-to-point matrix (round-robin tournament, both\n"
      "directions) and an all-reduce bisection over node-aligned groups. Exit 0 nothing named, 1 otherwise.");
  sub->add_option("--tests", opt->tests,
                  "Comma-separated: p2p, bisection, transport (NCCL's or MPI's transports; implied by "
                  "--expect-transport)")
      ->capture_default_str();
  sub->add_option("--scope", opt->scope, "p2p endpoints: node (first rank of each host) or rank (every rank)")
      ->check(CLI::IsMember({"node", "rank"}))
      ->capture_default_str();
  sub->add_option("-b,--bytes", opt->bytes,
                  "p2p message size, or a sweep SIZE,SIZE,... (default 1M host, 256M cuda)");
  sub->add_option("--min-p2p-bw", opt->min_p2p_bw,
                  "Flag p2p directions below this many GB/s (default: --floors' node p2p floor, else none)");
  sub->add_option("--outlier-threshold", opt->outlier_threshold,
                  "Flag p2p directions and all-reduce groups below the median by more than this fraction")
      ->capture_default_str();
  sub->add_option("--iters", opt->iters,
                  "Timed iterations per measurement (the best is kept: a slow link is slow every time)")
      ->capture_default_str();
  sub->add_option(
         "--confirm-passes", opt->confirm_passes,
         "Re-measure flagged p2p links alone, and every bisection round, this many more times (best kept)")
      ->capture_default_str();
  sub->add_option("--warmup", opt->warmup, "Untimed iterations first")->capture_default_str();
  sub->add_option("--allreduce-size", opt->allreduce_size,
                  "Bisection all-reduce size (default 1M host, 256M cuda)");
  sub->add_option(
      "--allreduce-floor", opt->allreduce_floor,
      "All-reduce busbw floor in GB/s for every bisection group (default: from --floors, else none)");
  sub->add_option(
      "--floors", opt->floors,
      "Published floors of a fabric class, configs/floors/NAME.json (h100-8gpu, h200-8gpu, gb200-nvl72,\n"
      "gb300-nvl72, network-400g; several: h200-8gpu,network-400g) or a path");
  sub->add_option("--expect-transport", opt->expect_transport,
                  "Fail unless the job used only these transports (NCCL's on cuda, Open MPI's on host):\n"
                  "p2p, shm, ib, socket, net, collnet, nvls");
  sub->add_option("--nccl-log", opt->nccl_logs,
                  "Read the transport record from these NCCL_DEBUG=INFO logs (files or directories) instead");
  sub->add_option("--hang-timeout", opt->hang_timeout,
                  "Name the ranks that never entered, or never left, a call that ran this long (0 = off)")
      ->capture_default_str();
  sub->add_option("--run-dir", opt->run_dir,
                  "Shared directory for the hang watchdog's per-rank state files (fb-hang-<run id>/)")
      ->capture_default_str();
  return {sub,
          [opt, sub](Session& s) {
            opt->given.clear();
            for (const CLI::Option* o : sub->get_options())
              if (o->count() > 0 && !o->get_lnames().empty())
                opt->given.insert("--" + o->get_lnames().front());
            return run_locate(*opt, s);
          },
          true};
}

}  // namespace fb::tools
