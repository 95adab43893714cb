#include "core/remove_on_signal.hpp"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace fb {
namespace {

constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
constexpr std::size_t kPathMax = 4096;

// Written before `armed` is set, read only by the handler while it is set.
struct Slot {
  std::atomic<bool> armed{false};
  char files[RemoveOnSignal::kFilesPerSlot][kPathMax];
  int file_count = 0;
  char dir[kPathMax];
  char keep_if[kPathMax];
};

Slot g_slots[RemoveOnSignal::kSlots];
std::mutex g_mutex;  // guards g_used and the handler installation; never taken by the handler
bool g_used[RemoveOnSignal::kSlots];
int g_armed = 0;
struct sigaction g_previous[kSignals.size()];
// GuardedFileWrite: writes under way, and whether a handler has started (it then waits for them to end).
std::atomic<int> g_writers{0};
std::atomic<bool> g_dying{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

extern "C" void remove_and_reraise(int sig) {
  // Sequentially consistent with the writer's increment-then-check: either the writer sees g_dying and does
  // not write, or this sees its count and waits until its rename is done.
  g_dying.store(true);
  for (int i = 0; i < 2500 && g_writers.load() > 0; ++i) {
    const timespec pause{0, 100'000};  // 0.1 ms; nanosleep is async-signal-safe
    ::nanosleep(&pause, nullptr);
  }
  for (int s = RemoveOnSignal::kSlots - 1; s >= 0; --s) {
    const Slot& slot = g_slots[s];
    if (!slot.armed.load(std::memory_order_acquire)) continue;
    if (slot.keep_if[0] && ::access(slot.keep_if, F_OK) == 0) continue;
    for (int f = 0; f < slot.file_count; ++f) ::unlink(slot.files[f]);
    if (slot.dir[0]) ::rmdir(slot.dir);  // fails while another rank's files remain: that rank removes it
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

bool copy_path(char (&to)[kPathMax], const std::filesystem::path& from) {
  const auto& text = from.native();
  if (text.size() >= kPathMax) return false;
  std::memcpy(to, text.c_str(), text.size() + 1);
  return true;
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::vector<std::filesystem::path>& files,
                               const std::filesystem::path& dir, const std::filesystem::path& keep_if) {
  if (files.size() > static_cast<std::size_t>(kFilesPerSlot)) return;  // not guarded
  std::lock_guard lock(g_mutex);
  int s = 0;
  while (s < kSlots && g_used[s]) ++s;
  if (s == kSlots) return;  // not guarded, as before there were guards
  Slot& slot = g_slots[s];
  bool fits = copy_path(slot.dir, dir) && copy_path(slot.keep_if, keep_if);
  for (std::size_t f = 0; fits && f < files.size(); ++f) fits = copy_path(slot.files[f], files[f]);
  if (!fits) return;
  slot.file_count = static_cast<int>(files.size());
  g_used[s] = true;
  slot_ = s;
  slot.armed.store(true, std::memory_order_release);
  if (g_armed++ > 0) return;
  struct sigaction action {};
  action.sa_handler = remove_and_reraise;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    // A signal the process ignores (nohup, a background job's SIGINT) stays ignored.
    ::sigaction(kSignals[i], nullptr, &g_previous[i]);
    if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
  }
}

RemoveOnSignal::~RemoveOnSignal() {
  if (slot_ < 0) return;
  std::lock_guard lock(g_mutex);
  g_slots[slot_].armed.store(false, std::memory_order_release);
  g_used[slot_] = false;
  if (--g_armed > 0) return;
  for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

GuardedFileWrite::GuardedFileWrite() {
  g_writers.fetch_add(1);
  allowed_ = !g_dying.load();
}

GuardedFileWrite::~GuardedFileWrite() {
  g_writers.fetch_sub(1);
}

void run_with_signals_blocked(const std::function<void()>& work) {
  // Blocked here while the thread starts, so it inherits the mask from its first instruction.
  sigset_t set, previous;
  sigemptyset(&set);
  for (const int sig : kSignals) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_BLOCK, &set, &previous);
  std::exception_ptr failure;
  std::thread worker;
  try {
    worker = std::thread([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
    });
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace fb
