#include "tools/resilience_so_far.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "core/logging.hpp"
#include "reports/report_json.hpp"
#include "resilience/event_log.hpp"

namespace fb::tools {

void ResilienceSoFar::running(std::string policy, std::filesystem::path run_dir,
                              resilience::ResilienceRunParams params) {
  std::lock_guard lock(mutex_);
  policy_ = std::move(policy);
  run_dir_ = std::move(run_dir);
  params_ = std::move(params);
  log_.emplace(run_dir_ / "events.jsonl");
}

void ResilienceSoFar::finished(const reports::Report& report,
                               std::vector<resilience::SupervisorResult> runs) {
  std::lock_guard lock(mutex_);
  // The follower's parsed events go before the report's are copied: two copies of a long job's events at
  // once, not three.
  policy_.clear();
  log_.reset();
  report_ = report;
  runs_ = std::move(runs);
  for (auto& run : runs_) run.events.clear();  // report_ holds them; the summary reads the ledgers alone
}

reports::Report ResilienceSoFar::report() const {
  std::lock_guard lock(mutex_);
  reports::Report r = report_;
  auto runs = runs_;
  bool partial = false;
  if (!policy_.empty()) {
    std::vector<nlohmann::json> events;
    try {
      events = log_->read().events;
    } catch (const std::exception&) {  // not made yet (the job's first moment): nothing of it to tell
    }
    if (!events.empty()) {
      runs.push_back(resilience::job_so_far(std::move(events), resilience::wall_now(),
                                            "the supervisor was stopped while the job ran"));
      partial = true;
      if (r.run.value("backend", "") == "none") adopt_job_run(r, run_dir_);
      r.results.push_back(resilience::resilience_result(runs.back(), policy_, params_));
      for (auto& e : runs.back().events) {  // moved: the summary below reads the ledgers alone
        if (compare_) e["policy"] = policy_;
        r.events.push_back(std::move(e));
      }
    }
  }
  if (!runs.empty()) r.summary.update(resilience::resilience_summary(runs));
  if (partial && compare_) {
    // A finished job against one cut short says nothing of the policies (it read 41% less goodput for drain
    // 4 s into its job): no comparison; the totals are the running job's, as after both.
    r.summary.erase("compare");
    r.summary["totals_policy"] = policy_;
  }
  return r;
}

void adopt_job_run(reports::Report& report, const std::filesystem::path& run_dir) {
  std::error_code ec;
  int newest = 0;
  for (const auto& e : std::filesystem::directory_iterator(run_dir, ec)) {
    const auto name = e.path().filename().string();
    int n = 0;
    if (std::sscanf(name.c_str(), "attempt-%d.json", &n) == 1 && name == fmt::format("attempt-{}.json", n))
      newest = std::max(newest, n);
  }
  if (newest == 0) return;
  reports::Report job;
  try {
    job = reports::read_report(run_dir / fmt::format("attempt-{}.json", newest));
  } catch (const std::exception& e) {
    log::warn("the job's run facts stay out of the report: {}", e.what());
    return;
  }
  for (const char* key : {"world_size", "hosts", "backend", "slurm"})
    if (job.run.contains(key)) report.run[key] = job.run[key];
  for (const char* key : {"ranks", "peak_tflops"})
    if (job.system.contains(key)) report.system[key] = job.system[key];
}

}  // namespace fb::tools
