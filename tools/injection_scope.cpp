#include "tools/injection_scope.hpp"

#include "core/fault_injection.hpp"
#include "core/rank_collectives.hpp"

namespace fb::tools {

void check_injection_for(Session& session, std::string_view command, bool communicator_faults, bool sdc,
                         bool point_to_point, bool collective_check) {
  const int world = session.mpi().size();
  if (session.in_suite()) {  // the suite checked the entries' ranks once, before its steps
    if (communicator_faults) check_hang_has_peers(injected_faults(), world);
  } else {
    // Agreed: a variable set for one rank alone (an MPMD launch) stops every rank, not only that one while
    // the others wait in the first collective for ever.
    agree_on_errors(session.mpi(), [&] {
      check_injection_applies(command, world, communicator_faults, sdc, point_to_point, collective_check);
    });
  }
}

}  // namespace fb::tools
