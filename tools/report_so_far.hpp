#pragma once
// What a command has measured so far, for its hang watchdog: the watchdog's thread reads it when the job
// hangs (Session::hang_report), so the report keeps the results before the hung call. Shared (the reader
// handed to the watchdog holds it too) and locked.
#include <functional>
#include <memory>
#include <mutex>

#include "reports/report.hpp"

namespace fb::tools {

class ReportSoFar {
 public:
  static std::shared_ptr<ReportSoFar> make(reports::Report start) {
    auto p = std::make_shared<ReportSoFar>();
    p->report_ = std::move(start);
    return p;
  }
  void set(const reports::Report& report) {
    std::lock_guard lock(mutex_);
    report_ = report;
  }
  void add(const reports::Result& result) {
    std::lock_guard lock(mutex_);
    report_.results.push_back(result);
  }
  // For Session::hang_report: a copy taken under the lock.
  static std::function<reports::Report()> reader(std::shared_ptr<ReportSoFar> self) {
    return [self = std::move(self)] {
      std::lock_guard lock(self->mutex_);
      return self->report_;
    };
  }

 private:
  std::mutex mutex_;
  reports::Report report_;
};

}  // namespace fb::tools
