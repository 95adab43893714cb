#include "resilience/launch_environment.hpp"

#include <array>

namespace fb::resilience {

bool is_parent_job_variable(std::string_view name) {
  // A suite's fault drill for its collective steps: a supervised job's faults are its --faults, and its train
  // attempts refuse the variable.
  if (name == "FACTORYBENCH_INJECT") return true;
  if (name.starts_with("PMIX_") || name.starts_with("PMI_")) return true;
  if (!name.starts_with("OMPI_")) return false;
  if (name.starts_with("OMPI_ALLOW_RUN_AS_ROOT")) return false;  // the user's consent, needed again
  if (!name.starts_with("OMPI_MCA_"))
    return true;  // OMPI_COMM_WORLD_*, OMPI_FILE_LOCATION, OMPI_COMMAND, ...
  // MCA parameters mpirun sets for its own ranks (Open MPI 4: ess, orte_*, pmix, the rank's working
  // directory, the launch-time oversubscription state); any other OMPI_MCA_* is the user's tuning.
  const std::string_view param = name.substr(9);
  constexpr std::array<std::string_view, 6> kJob{
      "ess", "orte_", "pmix", "initial_wdir", "mpi_oversubscribe", "shmem_RUNTIME_QUERY_hint"};
  for (const auto prefix : kJob)
    if (param.starts_with(prefix)) return true;
  return false;
}

std::vector<std::string> launcher_environment(const char* const* env) {
  std::vector<std::string> out;
  for (; env && *env; ++env) {
    const std::string_view entry(*env);
    const auto eq = entry.find('=');
    if (!is_parent_job_variable(entry.substr(0, eq))) out.emplace_back(entry);
  }
  return out;
}

}  // namespace fb::resilience
