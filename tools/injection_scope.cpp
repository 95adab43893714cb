#include "tools/injection_scope.hpp"

#include <fmt/format.h>

#include "core/call_log.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/rank_collectives.hpp"

namespace fb::tools {
namespace {

// Whether a command of this process acts on an injected hang (its calls are numbered for it): only then is a
// hang that never came worth a word (`info` under a job-wide variable is not).
bool g_hang_acts = false;

}  // namespace

void check_injection_for(Session& session, std::string_view command, const InjectionTargets& can) {
  g_hang_acts = g_hang_acts || can.communicator || can.numbered_calls;
  const int world = session.mpi().size();
  if (session.in_suite()) {  // the suite checked the entries' ranks once, before its steps
    if (can.communicator || can.numbered_calls) check_hang_has_peers(injected_faults(), world);
  } else {
    // Agreed: a variable set for one rank alone (an MPMD launch) stops every rank, not only that one while
    // the others wait in the first collective for ever.
    agree_on_errors(session.mpi(), [&] { check_injection_applies(command, world, can); });
  }
}

void check_no_injection(const Session& session, std::string_view command) {
  const auto& f = injected_faults();
  if (session.in_suite() || f.empty()) return;
  throw usage_error(fmt::format(
      "FACTORYBENCH_INJECT '{}': {} takes its faults from --faults (crash, hang, straggler, sdc, nan, "
      "checkpoint faults); the variable is for collective, locate, health and burnin",
      f.text, command));
}

void warn_unreached_hang(Session& session) {
  const auto& f = injected_faults();
  if (!g_hang_acts || f.hang_rank < 0 || !session.mpi_started() || session.mpi().rank() != f.hang_rank)
    return;
  // The hang stops its rank as it would enter call=: a rank that ends has not got there.
  log::warn_from_this_rank(
      "FACTORYBENCH_INJECT '{}': no hang was injected: rank {} made {} numbered call(s), never call {}",
      f.text, f.hang_rank, CallLog::instance().snapshot().entered, f.hang_call);
}

}  // namespace fb::tools
