#pragma once
// FACTORYBENCH_INJECT (core/fault_injection.hpp) as a command sees it. Run alone, a command refuses an entry
// it cannot act on (it would test nothing). Inside a suite the variable is the whole job's, set once for all
// its steps (a hang for the health step, a slow rank for the collectives): the suite checks once that the
// entries parse and name ranks of the job, and each step acts on those it can.
#include <string_view>

#include "core/fault_injection.hpp"
#include "tools/session.hpp"

namespace fb::tools {

// `can` is check_injection_applies's. Throws a usage Error naming the variable.
void check_injection_for(Session& session, std::string_view command, const InjectionTargets& can);

// train and resilience take their faults from --faults: run alone, they refuse the variable (a hang would
// wait for ever, train having no collective watchdog; a slow rank would pass for a slow job). Inside a suite
// it is the job's, for its other steps. Throws a usage Error naming the variable.
void check_no_injection(const Session& session, std::string_view command);

// After a command that ended on its own and acts on injected hangs (it called check_injection_for with
// communicator or numbered calls): on the rank an injected hang names, a warning that the hang was never
// reached (this rank made fewer numbered calls than its call=). health and locate make a number of
// calls known only as they run; a test that meant to hang them would otherwise read a pass as the watchdog's
// failure.
void warn_unreached_hang(Session& session);

}  // namespace fb::tools
