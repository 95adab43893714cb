#pragma once
// Keeps -o's report so far (tools/interrupt_report.hpp) current without spending more than a twentieth of
// the run writing it. A request made when a write is due (report_so_far_due) writes at once, on the caller's
// thread: the result it follows is on disk before the run goes on. A request made sooner is kept pending and
// written by this writer's thread as soon as it is due, with no further request: a quick result just before
// a ten-minute one used to wait for the next result to be written, and was lost to a SIGKILL in between.
// Writes never overlap; requests made while one is pending are one write; a pending write is dropped when the
// writer is destroyed (the command's final report comes next, or an error removes -o).
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace fb::tools {

// Whether the report so far is rewritten now, `since_last_s` after the last write ended, which took
// `last_cost_s`: when at least 20 times that has passed, so that writing takes at most a twentieth of the run
// however fast the results come (a sweep of thousands of small shapes) and however slow the file system (a
// 200 ms write is made every 4 s: it was made every second, a fifth of the run spent writing while the
// other ranks waited for rank 0 in their next collective). Pure.
bool report_so_far_due(double since_last_s, double last_cost_s);

class ReportSoFarWriter {
 public:
  // `write` writes the report so far; what it throws is dropped (it says its own failures).
  explicit ReportSoFarWriter(std::function<void()> write);
  ~ReportSoFarWriter();
  ReportSoFarWriter(const ReportSoFarWriter&) = delete;
  ReportSoFarWriter& operator=(const ReportSoFarWriter&) = delete;

  // A new result to keep: written now if due, else once due (by the writer's thread).
  void request();

 private:
  void write_locked();  // with mutex_ held
  void run();           // the thread: pending writes, once due

  std::function<void()> write_;
  std::mutex mutex_;  // the state below; held through a write, so that writes never overlap
  std::condition_variable wake_;
  bool pending_ = false;
  bool stop_ = false;
  double last_end_s_ = -1e9;  // when the last write ended (steady seconds)
  double last_cost_s_ = 0;    // and how long it took
  std::thread thread_;
};

}  // namespace fb::tools
