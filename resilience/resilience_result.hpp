#pragma once
// The Result of one supervised resilience run (`factorybench resilience`): the goodput ledger's figures as
// metrics, the ledger itself, the drains and the MTTF split at the first drain in `extra` (typed in
// reports/resilience_extra.hpp), and the report summary over one policy or both (--policy compare). The
// console view reads these only (reports/resilience_console.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "resilience/supervisor.hpp"

namespace fb::resilience {

// The run's options as the Result's params record them (the texts as given, so a report names what was
// asked).
struct ResilienceRunParams {
  std::string model;
  int ranks = 1;
  Launcher launcher = Launcher::mpirun;
  std::string faults;
  std::int64_t steps = 0;
  bool steps_given = false;  // without --steps, a --time-budget alone ends the job
  std::int64_t checkpoint_every = 0;
  std::string checkpoint_interval;
  int max_restarts = 0, spares = 0, drain_after = 0;
  bool async_checkpoint = false;
  std::string state_bytes, mtbf, time_budget;
  bool preflight = false;
  std::string run_dir;
  // The training options the job runs with beyond train's defaults ("--seq 512 --dtype fp32"), as the
  // attempts get them (less what the supervisor sets per attempt): the result's name gives only the model.
  std::string train_options;
};

// Failed unless the job finished its steps, or stopped at a --time-budget given without --steps.
reports::Result resilience_result(const SupervisorResult& run, std::string_view policy,
                                  const ResilienceRunParams& params);

// productive_s, badput_s and wall_s of the last run; with two runs (none, then drain), their comparison.
nlohmann::json resilience_summary(const std::vector<SupervisorResult>& runs);

}  // namespace fb::resilience
