#pragma once
// The environment a supervisor hands to the launcher it starts (mpirun, srun). When the supervisor itself
// runs as a rank of an MPI job (a `suite` step under `mpirun -np 4`), it carries that job's wiring: Open
// MPI's OMPI_* and PMIx's PMIX_* variables, which would make the child mpirun join, or trip over, the parent
// job instead of starting its own. Those are dropped; the user's own settings (OMPI_MCA_* tuning such as btl
// or oversubscription, OMPI_ALLOW_RUN_AS_ROOT*) and everything else are kept. So is the suite's
// FACTORYBENCH_INJECT: it is the enclosing job's drill, not the supervised job's (whose faults are --faults).
#include <string>
#include <string_view>
#include <vector>

namespace fb::resilience {

// True for a variable that describes the enclosing MPI job rather than the user's settings.
bool is_parent_job_variable(std::string_view name);

// `env` (NAME=VALUE entries, nullptr-terminated, like `environ`) without the parent job's variables.
std::vector<std::string> launcher_environment(const char* const* env);

}  // namespace fb::resilience
