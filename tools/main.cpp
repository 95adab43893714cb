// factorybench: one binary, one subcommand per file. Only this file turns errors into exit codes:
// 0 success, 1 a benchmark failed its check or gate, 2 usage or input error, 3 runtime failure.

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/mpi_context.hpp"
#include "tools/commands.hpp"
#include "tools/injection_scope.hpp"
#include "workloads/run_environment.hpp"

namespace {

// One line, whatever the message quotes (fb::one_line).
void print_error(const std::string& message) {
  const std::string line = fb::one_line(message);
  std::fprintf(stderr, "factorybench: error: %.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

// What went to stdout is the product of report, compare, import, info and --help: a full disk or a closed
// file behind `> file` must not read as success. Checked once the command is done, before MPI shuts down;
// false after saying so.
bool stdout_written() {
  errno = 0;
  std::cout.flush();
  if (std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  const int err = errno;
  print_error(std::string("cannot write to standard output") +
              (err ? std::string(": ") + std::strerror(err) : ""));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fb::tools;
  // A reader that goes away (`| head`, a closed terminal) must not kill the run before its -o report is
  // written: writes to stdout fail instead (EPIPE), and the exit status says so (3) once the work is done.
  // The launchers a supervisor starts get the default back (resilience/job_launch.cpp).
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "factorybench: benchmark and validation toolkit for GPU training clusters.\n"
      "Measures GEMM and collective throughput, transformer training steps (MFU), and goodput under\n"
      "injected faults; writes versioned JSON reports and gates CI on them.",
      "factorybench"};
  app.set_version_flag("--version", fb::workloads::version_line());
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand

  GlobalOptions global;
  add_global_options(app, global);
  // The subcommands are listed in tools/command_table.cpp.
  const std::vector<Command> commands = add_all_commands(app);

  const bool root = fb::launcher_rank() == 0;
  // CLI11 would call an unknown word "extra arguments"; name it as what the user meant.
  if (argc > 1 && argv[1][0] != '-' && !is_command(commands, argv[1])) {
    if (root)
      print_error(std::string("unknown subcommand '") + argv[1] + "' (expected one of " +
                  command_names(commands) + ")");
    return 2;
  }
  // A command made of subcommands (import nccl-tests|mlperf): a missing or unknown one is named with the
  // choices, not CLI11's "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    const CLI::App* cmd = app.get_subcommand(argv[1]);
    const auto subs = cmd->get_subcommands([](const CLI::App*) { return true; });
    if (!subs.empty()) {
      std::string names;
      bool known = false;
      for (const auto* sub : subs) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        for (int a = 2; a < argc; ++a) known = known || sub->get_name() == argv[a];
      }
      // Global options may come between the command and its format: only a line with no format at all
      // is answered here.
      const bool help = std::any_of(argv + 2, argv + argc, [](const char* a) {
        return std::string_view(a) == "--help" || std::string_view(a) == "-h";
      });
      if (!known && !help) {
        if (root)
          print_error(
              argc > 2 && argv[2][0] != '-'
                  ? fmt::format("unknown {} format '{}' (expected one of {})", argv[1], argv[2], names)
                  : fmt::format("{} needs a format: one of {} (e.g. factorybench {} {} --help)", argv[1],
                                names, argv[1], subs.front()->get_name()));
        return 2;
      }
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      if (root) app.exit(e);
      return stdout_written() ? 0 : 3;
    }
    if (root) print_error(parse_error_message(e, app));
    return 2;
  }

  std::vector<std::string> args(argv + 1, argv + argc);
  // The session (and with it MPI) outlives the error handling: the message is printed and, for a runtime
  // failure, the job aborted while MPI is still up, so no rank exits before the error is seen.
  std::unique_ptr<Session> session;
  int rc = 0;
  try {
    refuse_empty_values(app);
    refuse_idle_global_options(app);
    fb::log::configure(fb::launcher_rank(), fb::log::parse_level(global.log_level), global.quiet);
    // A process alone says "warning:" without "[rank 0]", also where it never starts MPI (report, compare).
    if (!fb::launched_with_peers()) fb::log::set_world_size(1);
    session = std::make_unique<Session>(&argc, &argv, global, args);
    for (const auto& command : commands)
      if (command.app->parsed()) {
        session->set_command_name(command.app->get_name());
        rc = command.action(*session);
      }
    warn_unreached_hang(*session);
  } catch (const fb::Error& e) {
    const bool runtime = e.kind() == fb::ErrorKind::runtime;
    // Usage and input errors are found alike on every rank (same arguments, same files): rank 0 reports.
    // A runtime failure may be one rank's alone: it reports, and the job is aborted so no rank hangs.
    if (runtime || root) print_error(e.what());
    if (session) session->discard_startup_report();  // an error writes no report; the abort skips ~Session
    if (runtime) fb::abort_job_if_shared(3);
    return fb::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
    if (session) session->discard_startup_report();
    fb::abort_job_if_shared(3);
    return 3;
  }
  return stdout_written() ? rc : 3;
}
