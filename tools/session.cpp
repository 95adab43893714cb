#include "tools/session.hpp"

#include <stdlib.h>
#include <unistd.h>
#include <algorithm>
#include <array>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/units.hpp"
#include "core/wait_notice.hpp"
#include "reports/report_json.hpp"
#include "reports/suite_step_extra.hpp"
#include "tools/interrupt_report.hpp"
#include "workloads/run_environment.hpp"
#include "workloads/telemetry_report.hpp"

namespace fb::tools {

Session::Session(int* argc, char*** argv, GlobalOptions options, std::vector<std::string> args)
    : argc_(argc),
      argv_(argv),
      options_(std::move(options)),
      args_(std::move(args)),
      started_at_(workloads::utc_timestamp()) {
  telemetry_options_.mode = parse_telemetry_mode(options_.telemetry);
  const std::string interval = options_.telemetry_interval.value_or("100ms");
  // A bare "100" would be 100 s beside the default's 100ms: the unit is asked for.
  telemetry_options_.interval_s = parse_duration_with_unit(interval, "--telemetry-interval", "ms", "s");
  if (telemetry_options_.interval_s < 1e-3)
    throw usage_error("invalid --telemetry-interval '" + interval + "': must be at least 1ms");
  if (options_.telemetry_interval && telemetry_options_.mode == TelemetryMode::off)
    throw usage_error(
        "--telemetry-interval acts only with --telemetry summary or full (this run has it off)");
}

Session::~Session() {
  discard_startup_report();
  telemetry_.reset();  // the sampler reads the device: stop it first
  backend_.reset();    // device memory and streams go before MPI finalises
}

std::string Session::command_line() const {
  std::string s = "factorybench";
  for (const auto& a : args_) {
    s += ' ';
    const bool quote = a.empty() || a.find_first_of(" \t\"'$;&|<>") != std::string::npos;
    s += quote ? "'" + a + "'" : a;
  }
  return s;
}

MpiContext& Session::mpi() {
  if (!mpi_) {
    // Before MPI's start too: MPI_Init waits for every rank, and a rank that never comes (a node that did not
    // start it, a launcher stuck on one) keeps rank 0 there until the scheduler's limit. Rank 0 by the
    // launcher's word; a lone process (no launcher) starts MPI at once and writes it with the backend.
    const double notice_s = start_up_wait_notice_seconds();  // every rank: a bad value stops each alike
    const bool first_rank = launched_with_peers() && launcher_rank() == 0;
    if (first_rank) write_startup_report();
    {
      const auto size = launcher_world_size();
      const bool report = startup_report_.has_value();
      const WaitNotice waiting(first_rank ? notice_s : 0, [size, report](double waited_s) {
        return fmt::format(
            "MPI's start-up has waited {} for {} to join: one has not (a node that did not start it, a "
            "launcher stuck on one; the launcher's or the scheduler's log names it){}",
            format_duration(waited_s), size ? fmt::format("all {} ranks", *size) : std::string("every rank"),
            report ? "; -o holds a start-up report that says so until the run writes its own" : "");
      });
      mpi_ = std::make_unique<MpiContext>(argc_, argv_);
    }
    if (!mpi_->is_root()) startup_report_.reset();  // rank 0's file now, if the launcher's word was wrong
    log::configure(mpi_->rank(), log::parse_level(options_.log_level), options_.quiet);
    log::set_world_size(mpi_->size());
    mpi_->require_same_arguments(args_);
    // Rank 0 writes the report; every rank learns whether it can, so none goes on into collectives that
    // rank 0 has left.
    agree_on_errors(*mpi_, [this] {
      if (mpi_->is_root()) check_output_writable();
    });
  }
  return *mpi_;
}

void Session::write_startup_report() {
  // In a suite -o is the suite's report, which it keeps itself (a step's start-up would replace the steps
  // before it); only a suite's own start (its --backend cuda check) gets one, until its first step's.
  if (options_.output.empty() || in_suite()) return;
  const auto target = write_target(options_.output);
  if (target.in_place) return;  // -o /dev/stdout: the report is printed once, at the end
  if (!mpi_) {
    // -o is checked with MPI's start, on every rank: here, before it, only what rank 0 can see alone, and
    // nothing is written where that check would refuse -o (an input it would destroy, a suite's steps' too).
    try {
      check_output_writable(output_inputs_);
    } catch (const std::exception&) {
      return;  // said, on every rank, once MPI is up
    }
  }
  try {
    // This process's facts alone (the job's would need every rank, which is what the start-up is doing):
    // the command, the start, the job's size and hosts (before MPI: the launcher's size and this host).
    auto report = workloads::begin_report(nullptr, nullptr, command_line());
    report.run["started_at"] = started_at_;
    report.run["finished_at"] = workloads::utc_timestamp();
    if (mpi_) {
      report.run["world_size"] = mpi_->size();
      report.run["hosts"] = mpi_->unique_hosts();
    } else {
      // begin_report gave this host; PMIx alone does not say the size: null, "unknown".
      const auto size = launcher_world_size();
      report.run["world_size"] = size ? nlohmann::json(*size) : nlohmann::json(nullptr);
    }
    report.run["seed"] = options_.seed;
    report.results.push_back(unfinished_result(
        command_name_, mpi_ ? "nothing was measured (it ended in the start-up, after MPI's: the device, the "
                              "peak probe)"
                            : "nothing was measured (it ended in MPI's start-up, which waits for every rank "
                              "to join)"));
    std::string text = reports::to_json(report).dump(2) + "\n";
    write_file_atomic(target.path, text);
    startup_report_ = StartupReport{target.path, std::move(text)};
  } catch (const std::exception& e) {  // the run goes on; its report is written at its end as before
    log::warn("the start-up report was not written to {}: {}", options_.output, e.what());
  }
}

void Session::discard_startup_report() {
  if (!startup_report_) return;
  const auto placeholder = *std::exchange(startup_report_, std::nullopt);
  // By its bytes, not its inode: a later report's file, renamed over it, can get the freed inode back.
  std::error_code ec;
  if (std::filesystem::file_size(placeholder.path, ec) != placeholder.text.size() || ec) return;
  try {
    if (read_text_file(placeholder.path) != placeholder.text) return;
  } catch (const std::exception&) {
    return;
  }
  std::filesystem::remove(placeholder.path, ec);
}

// Before a long benchmark, not after it: the report's directory must exist and take files (rank 0 writes).
void Session::check_output_writable(const std::vector<std::string>& inputs) const {
  if (options_.output.empty()) return;
  // The named inputs, and every other argument that names an existing file (a suite, a model, a failure
  // model, a fault plan): -o naming one of them would replace it with the report.
  const auto refuse = [&](const std::string& in) {
    throw usage_error(fmt::format("invalid -o/--output {}: it is the input {}, which writing would destroy",
                                  options_.output, in));
  };
  // The same file, or (not written yet: a suite's report a later step reads) the same path.
  const auto same_file = [&](const std::string& in) {
    std::error_code ec;
    if (std::filesystem::exists(options_.output, ec) && std::filesystem::exists(in, ec))
      return std::filesystem::equivalent(options_.output, in, ec);
    const auto a = std::filesystem::weakly_canonical(options_.output, ec);
    if (ec) return false;
    const auto b = std::filesystem::weakly_canonical(in, ec);
    return !ec && a == b;
  };
  for (const auto& in : inputs)
    if (!in.empty() && same_file(in)) refuse(in);
  // A file of the configuration directory: presets named by a bare name (--model tiny-dense), the hardware
  // table every command loads, suites, floors, references. The report would replace it. (A new file there,
  // an imported reference, is the user's to write.)
  if (std::error_code ec; std::filesystem::is_regular_file(options_.output, ec)) {
    const auto out = std::filesystem::weakly_canonical(options_.output, ec);
    const auto configs = std::filesystem::weakly_canonical(config_dir(), ec);
    if (!ec && !configs.empty()) {
      const auto rel = out.lexically_relative(configs);
      if (!rel.empty() && *rel.begin() != "..")
        throw usage_error(fmt::format(
            "invalid -o/--output {}: a file of the configuration directory {}, which the run reads (models, "
            "hardware, suites, references); write the report elsewhere",
            options_.output, configs.string()));
    }
  }
  for (std::size_t i = 0; i < args_.size(); ++i) {
    const std::string& a = args_[i];
    if (a == "-o" || a == "--output") {
      ++i;  // the output itself
      continue;
    }
    if (a.rfind("--output=", 0) == 0 || (a.size() > 2 && a.rfind("-o", 0) == 0)) continue;
    const auto eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    const std::string in = eq == std::string::npos ? a : a.substr(eq + 1);
    std::error_code ec;
    if (std::filesystem::is_regular_file(in, ec) && std::filesystem::equivalent(options_.output, in, ec))
      refuse(in);
  }
  std::error_code loop;
  [[maybe_unused]] const auto status = std::filesystem::status(options_.output, loop);
  if (loop == std::errc::too_many_symbolic_link_levels)
    throw usage_error(fmt::format("invalid -o/--output {}: a loop of symbolic links", options_.output));
  const auto [out, in_place] = write_target(options_.output);  // where the writer will put it
  if (in_place) return;                                        // a device or FIFO: written to
  std::error_code ec;
  if (std::filesystem::is_directory(out, ec))
    throw usage_error(fmt::format("invalid -o/--output {}: a directory, not a file", options_.output));
  const auto dir = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir, ec)) {
    // exists() is false too where the path cannot be looked at (a parent without search permission).
    std::error_code why;
    const bool there = std::filesystem::exists(dir, why);
    const std::string what = there ? "is not a directory"
                             : why && why != std::errc::no_such_file_or_directory
                                 ? "cannot be reached: " + why.message()
                                 : "does not exist";
    throw usage_error(fmt::format("invalid -o/--output {}: {} {}", options_.output, dir.string(), what));
  }
  // A file is created and removed, as the writer will (access(2) says yes to root in /proc or on a
  // read-only mount).
  std::string probe = (dir / ".factorybench-write-test-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0)  // /proc answers ENOENT: no new file can be made there, which is what the user needs to hear
    throw usage_error(
        fmt::format("invalid -o/--output {}: cannot write in {}: {}", options_.output, dir.string(),
                    errno == ENOENT ? "no new file can be created there" : std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

void Session::set_checking_only(bool on) {
  checking_only_ = on;
  if (!on) together_.clear();  // a check queued by a step whose own checks then failed
  log::configure(mpi_ ? mpi_->rank() : launcher_rank(),
                 on ? log::Level::error : log::parse_level(options_.log_level), options_.quiet);
}

Backend& Session::backend() {
  if (!backend_) {
    auto& m = mpi();
    // Once the command's input is checked (a suite's -o against its steps' files too), before the device's
    // start-up (CUDA, NCCL, the peak probe).
    if (m.is_root()) write_startup_report();
    backend_ = make_backend(parse_backend_choice(options_.backend), m.local_rank(), m.local_size());
    if (telemetry_options_.mode != TelemetryMode::off) {
      telemetry_ = make_telemetry_sampler(telemetry_options_, backend_->device());
      telemetry_from_s_ = 0;
    }
  }
  return *backend_;
}

const workloads::DevicePeak& Session::peak() {
  if (!peak_)
    peak_ = std::make_unique<workloads::DevicePeak>(workloads::resolve_device_peak(mpi(), backend()));
  return *peak_;
}

bool Session::is_root() {
  return mpi_ ? mpi_->is_root() : launcher_rank() == 0;
}

reports::Report Session::begin_report(bool with_device) {
  auto report = with_device ? workloads::begin_report(&mpi(), &backend(), command_line(), &peak())
                            : workloads::begin_report(mpi_.get(), nullptr, command_line());
  // Rank 0's start, as the run id is rank 0's.
  if (mpi_) {
    std::array<char, 40> start{};
    started_at_.copy(start.data(), start.size() - 1);
    broadcast(*mpi_, std::span<char>(start));
    report.run["started_at"] = std::string(start.data());
  } else {
    report.run["started_at"] = started_at_;
  }
  // The seed of the run's random data (and of random fault plans), so that a run can be repeated from its
  // report alone: the command line holds --seed only when it was given.
  report.run["seed"] = options().seed;
  return report;
}

void Session::collect_into(reports::Report* sink, std::string step) {
  sink_ = sink;
  sink_step_ = std::move(step);
}

void append_step_results(reports::Report& suite, std::vector<reports::Result> results,
                         const std::string& step) {
  const bool clash = std::any_of(results.begin(), results.end(), [&](const auto& r) {
    return std::any_of(suite.results.begin(), suite.results.end(), [&](const auto& existing) {
      return existing.benchmark == r.benchmark && existing.name == r.name;
    });
  });
  for (auto& r : results) {
    reports::write_suite_step(r, step);
    if (clash) r.name = step + "/" + r.name;
    suite.results.push_back(std::move(r));
  }
}

void Session::set_step_so_far(std::function<reports::Report()> so_far, std::function<void()> close_console) {
  std::lock_guard lock(step_mutex_);
  step_so_far_ = std::move(so_far);
  step_console_ = std::move(close_console);
}

std::vector<reports::Result> Session::step_results_so_far() const {
  std::function<reports::Report()> read;
  {
    std::lock_guard lock(step_mutex_);
    read = step_so_far_;
  }
  return read ? read().results : std::vector<reports::Result>{};
}

void Session::close_step_console() const {
  std::function<void()> close;
  {
    std::lock_guard lock(step_mutex_);
    close = step_console_;
  }
  if (close) close();
}

Session::HangReport Session::hang_report(reports::Report partial) const {
  return hang_report([partial = std::move(partial)] { return partial; });
}

Session::HangReport Session::hang_report(std::function<reports::Report()> so_far) const {
  HangReport make =
      sink_ && suite_hang_report_
          ? suite_hang_report_
          : [so_far = std::move(so_far)](const reports::Result& hang) -> std::optional<reports::Report> {
    auto out = so_far();
    out.results.push_back(hang);
    return out;
  };
  if (!telemetry_ || !mpi_) return make;
  // The telemetry up to the hang, which is where it is wanted most: the writing rank's own readings (the
  // ranks are stuck and gather nothing), said so in the report.
  return [make = std::move(make), mpi = mpi_.get(), sampler = telemetry_.get(), from_s = telemetry_from_s_,
          step = sink_ ? sink_step_
                       : std::string()](const reports::Result& hang) -> std::optional<reports::Report> {
    const auto own = workloads::own_telemetry(*mpi, *sampler, from_s);
    auto with = hang;
    workloads::attach_telemetry(with, own);
    auto out = make(with);
    if (!out || !out->summary.is_object()) return out;
    nlohmann::json block = {
        {"mode", own["mode"]},
        {"interval_ms", own["interval_ms"]},
        {"ranks", own["ranks"]},
        {"note", fmt::format("rank {}'s readings alone: the job {}, and the ranks gathered none", mpi->rank(),
                             hang.name == "hang" ? "hung" : "was stopped")}};
    (step.empty() ? out->summary["telemetry"] : out->summary["steps"][step]["telemetry"]) = std::move(block);
    return out;
  };
}

int Session::finish(reports::Report& report) {
  if (telemetry_ && mpi_) {  // collective, like finish itself: every rank has a sampler or none does
    const double to_s = telemetry_->mark();
    workloads::attach_telemetry(report,
                                workloads::gather_telemetry(*mpi_, *telemetry_, telemetry_from_s_, to_s));
    telemetry_from_s_ = to_s;  // a suite's next step summarises its own window
  }
  workloads::finish_report(report);
  if (sink_) {
    // Copies, not moves: the command may still print from its own report after finish().
    append_step_results(*sink_, report.results, sink_step_);
    for (const auto& e : report.events) sink_->events.push_back(e);
    if (!report.summary.empty()) sink_->summary["steps"][sink_step_] = report.summary;
    if (sink_->system.empty() || (!sink_->system.contains("ranks") && report.system.contains("ranks")))
      sink_->system = report.system;
    if (report.run.is_object() && report.run.contains("backend") && report.run["backend"] != "none")
      sink_->run["backend"] = report.run["backend"];
    return report.any_failed() ? 1 : 0;
  }
  if (!options_.output.empty() && is_root()) {
    reports::write_report_lending_events(options_.output, report);
    log::info("report written to {}", options_.output);
  }
  // --quiet prints errors only, and a failed check or gate is one: exit 1 still says why (the console
  // table that would have said it is not printed).
  if (options_.quiet) say_failed_results(report);
  return report.any_failed() ? 1 : 0;
}

void Session::say_failed_results(const reports::Report& report) {
  if (!is_root()) return;
  std::size_t shown = 0, failed = 0;
  for (const auto& r : report.results) {
    if (r.status != reports::Status::failed) continue;
    if (++failed <= 5)
      log::error("{} {} failed: {}", r.benchmark, r.name, r.error.value_or("no reason given"));
    shown = std::min<std::size_t>(failed, 5);
  }
  if (failed > shown) log::error("... and {} more failed results (see the report)", failed - shown);
}

}  // namespace fb::tools
