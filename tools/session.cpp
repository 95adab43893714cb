#include "tools/session.hpp"

#include "core/logging.hpp"
#include "reports/report_json.hpp"
#include "workloads/run_environment.hpp"

namespace fb::tools {

Session::Session(int* argc, char*** argv, GlobalOptions options, std::vector<std::string> args)
    : argc_(argc), argv_(argv), options_(std::move(options)), args_(std::move(args)) {}

Session::~Session() {
  backend_.reset();  // device memory and streams go before MPI finalises
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
    mpi_ = std::make_unique<MpiContext>(argc_, argv_);
    log::configure(mpi_->rank(), log::parse_level(options_.log_level), options_.quiet);
    mpi_->require_same_arguments(args_);
  }
  return *mpi_;
}

Backend& Session::backend() {
  if (!backend_) {
    auto& m = mpi();
    backend_ = make_backend(parse_backend_choice(options_.backend), m.local_rank(), m.local_size());
  }
  return *backend_;
}

const workloads::DevicePeak& Session::peak() {
  if (!peak_) peak_ = std::make_unique<workloads::DevicePeak>(workloads::resolve_device_peak(mpi(), backend()));
  return *peak_;
}

bool Session::is_root() { return mpi_ ? mpi_->is_root() : launcher_rank() == 0; }

reports::Report Session::begin_report(bool with_device) {
  if (!with_device) return workloads::begin_report(mpi_.get(), nullptr, command_line());
  return workloads::begin_report(&mpi(), &backend(), command_line(), &peak());
}

int Session::finish(reports::Report& report) {
  workloads::finish_report(report);
  if (!options_.output.empty() && is_root()) {
    reports::write_report(options_.output, report);
    log::info("report written to {}", options_.output);
  }
  return report.any_failed() ? 1 : 0;
}

}  // namespace fb::tools
