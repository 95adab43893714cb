// The report so far's writer (tools/report_so_far_writer.hpp): a write at once when due, a pending one once
// due with no further request, never two at a time, never over a twentieth of the time, none after it is
// gone. The writes here are a sleep of a known length, so every due time is hundreds of milliseconds away.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/call_log.hpp"
#include "tools/report_so_far_writer.hpp"

namespace fb::tools {
namespace {

using namespace std::chrono_literals;

// A write that takes `cost` and records when it ran; it fails the test if two ever overlap.
struct Writes {
  std::chrono::milliseconds cost;
  std::mutex mutex;
  std::vector<std::pair<double, double>> spans;  // [start, end] of each write
  std::atomic<bool> in_write{false};
  std::atomic<int> overlaps{0};

  explicit Writes(std::chrono::milliseconds c) : cost(c) {}
  std::function<void()> fn() {
    return [this] {
      if (in_write.exchange(true)) ++overlaps;
      const double start = steady_seconds();
      std::this_thread::sleep_for(cost);
      const double end = steady_seconds();
      in_write = false;
      std::lock_guard lock(mutex);
      spans.emplace_back(start, end);
    };
  }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return spans.size();
  }
  // Waits up to 10 s for `n` writes.
  bool wait_for(std::size_t n) {
    for (int i = 0; i < 1000 && count() < n; ++i) std::this_thread::sleep_for(10ms);
    return count() >= n;
  }
};

TEST(ReportSoFarWriter, WritesAtOnceWhenDueAndAPendingRequestOnceDueWithNoFurtherRequest) {
  Writes w(25ms);  // due 500 ms after each write
  ReportSoFarWriter writer(w.fn());
  writer.request();
  EXPECT_EQ(w.count(), 1u) << "the first request is due: written before request() returns";
  writer.request();
  writer.request();
  writer.request();
  EXPECT_EQ(w.count(), 1u) << "not due for 500 ms: kept pending";
  ASSERT_TRUE(w.wait_for(2)) << "the pending request was never written";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(w.count(), 2u) << "three requests while pending are one write";
  std::lock_guard lock(w.mutex);
  const auto [s0, e0] = w.spans[0];
  const double gap = w.spans[1].first - e0;
  EXPECT_GE(gap, 20 * (e0 - s0)) << "written before it was due";
  EXPECT_EQ(w.overlaps.load(), 0);
}

TEST(ReportSoFarWriter, DestroyedWithARequestPendingItWritesNothingMore) {
  Writes w(25ms);
  {
    ReportSoFarWriter writer(w.fn());
    writer.request();
    writer.request();  // pending, due in 500 ms
  }
  EXPECT_EQ(w.count(), 1u);
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(w.count(), 1u) << "a write after the writer was gone";
}

// Requests as fast as they come from two threads for 1.5 s: the writes never overlap, each is followed by 20
// times its length without one (at most a twentieth of the time writing), and a last request is written.
TEST(ReportSoFarWriter, RequestsFromTwoThreadsNeverOverlapAndSpendAtMostATwentiethWriting) {
  Writes w(10ms);
  std::optional<ReportSoFarWriter> writer(std::in_place, w.fn());
  const double start = steady_seconds();
  std::atomic<bool> go{true};
  std::thread other([&] {
    while (go) writer->request();
  });
  while (steady_seconds() - start < 1.5) writer->request();
  go = false;
  other.join();
  const double asked = steady_seconds();
  writer->request();  // written at once or once due: either way, a write that begins after it
  bool landed = false;
  for (int i = 0; i < 1000 && !landed; ++i) {
    {
      std::lock_guard lock(w.mutex);
      landed = !w.spans.empty() && w.spans.back().first >= asked;
    }
    if (!landed) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(landed) << "the last request was never written";
  writer.reset();
  EXPECT_EQ(w.overlaps.load(), 0);
  std::lock_guard lock(w.mutex);
  ASSERT_GE(w.spans.size(), 3u);
  double writing = 0;  // every write but the last
  for (std::size_t i = 0; i + 1 < w.spans.size(); ++i) writing += w.spans[i].second - w.spans[i].first;
  EXPECT_LE(writing, (w.spans.back().first - w.spans.front().first) / 20);
}

TEST(ReportSoFarWriter, AWriteThatThrowsEndsNothing) {
  std::atomic<int> calls{0};
  ReportSoFarWriter writer([&] {
    if (++calls == 1) throw std::runtime_error("disk full");
  });
  writer.request();
  std::this_thread::sleep_for(5ms);
  writer.request();
  for (int i = 0; i < 500 && calls < 2; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(calls.load(), 2);
}

}  // namespace
}  // namespace fb::tools
