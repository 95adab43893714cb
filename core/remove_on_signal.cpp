#include "core/remove_on_signal.hpp"

#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

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
std::mutex g_mutex;  // guards g_used, g_say and the handler installation; never taken by the handler
bool g_used[RemoveOnSignal::kSlots];
int g_handler_users = 0;  // guards and last words alive: the handlers are installed while there are any
struct sigaction g_previous[kSignals.size()];
// GuardedFileWrite: writes under way, and whether a handler has started (it then waits for them to end).
std::atomic<int> g_writers{0};
std::atomic<bool> g_dying{false};
// LastWordOnSignal: none armed, armed (the next signal wakes the speaker), or being said since
// g_saying_since_ns (0: the handler that claimed it has not stamped it yet).
enum : int { kNoWord = 0, kArmed = 1, kSaying = 2 };
std::atomic<int> g_word{kNoWord};
std::atomic<int> g_word_signal{0};
std::atomic<long long> g_saying_since_ns{0};
std::function<void(int)> g_say;  // the innermost last word; under g_mutex
sem_t g_wake;                    // sem_post is async-signal-safe: the handler's only way to wake the speaker
bool g_speaker_started = false;  // under g_mutex
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free &&
              std::atomic<long long>::is_always_lock_free);

long long monotonic_ns() {  // clock_gettime is async-signal-safe
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1'000'000'000LL + t.tv_nsec;
}

void remove_guarded_files() {
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
}

extern "C" void on_signal(int sig) {
  int armed = kArmed;
  if (g_word.compare_exchange_strong(armed, kSaying)) {
    g_word_signal.store(sig);
    g_saying_since_ns.store(monotonic_ns());
    ::sem_post(&g_wake);
    return;  // the speaker ends the process once it has spoken
  }
  if (armed == kSaying) {
    const long long since = g_saying_since_ns.load();
    if (since == 0 ||
        monotonic_ns() - since < static_cast<long long>(LastWordOnSignal::kPatienceSeconds * 1e9))
      return;  // the last word is being said: it ends the process with the first signal
  }
  remove_guarded_files();
  // Blocked while this handler runs: taken with the default action once it returns.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// After the last word (or without one): the guards' files go and `sig` ends the process by its default
// action, from a thread that may block it.
[[noreturn]] void end_by(int sig) {
  remove_guarded_files();
  ::signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
  for (;;) ::pause();  // not reached: SIGINT, SIGTERM and SIGHUP terminate by default
}

// The speaker: a detached thread that blocks the signals and waits for the handler's post.
void speak_when_woken() {
  while (::sem_wait(&g_wake) != 0) {
  }
  const int sig = g_word_signal.load();
  std::function<void(int)> say;
  {
    std::lock_guard lock(g_mutex);
    say = g_say;
  }
  if (say) try {
      say(sig);
    } catch (...) {  // the signal still ends the process
    }
  end_by(sig);
}

// Under g_mutex: the first user installs the handlers, the last one restores the previous ones.
void use_handlers() {
  if (g_handler_users++ > 0) return;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    // A signal the process ignores (nohup, a background job's SIGINT) stays ignored.
    ::sigaction(kSignals[i], nullptr, &g_previous[i]);
    if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
  }
}

void release_handlers() {
  if (--g_handler_users > 0) return;
  for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

// Starts `body` on a thread that blocks kSignals from its first instruction.
std::thread thread_with_signals_blocked(std::function<void()> body) {
  sigset_t set, previous;
  sigemptyset(&set);
  for (const int sig : kSignals) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_BLOCK, &set, &previous);
  std::thread t;
  try {
    t = std::thread(std::move(body));
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return t;
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
  use_handlers();
}

RemoveOnSignal::~RemoveOnSignal() {
  if (slot_ < 0) return;
  std::lock_guard lock(g_mutex);
  g_slots[slot_].armed.store(false, std::memory_order_release);
  g_used[slot_] = false;
  release_handlers();
}

LastWordOnSignal::LastWordOnSignal(std::function<void(int sig)> say) {
  std::lock_guard lock(g_mutex);
  if (!g_speaker_started) {
    if (::sem_init(&g_wake, 0, 0) != 0) return;  // not said, as before there were last words
    thread_with_signals_blocked(speak_when_woken).detach();
    g_speaker_started = true;
  }
  outer_ = std::exchange(g_say, std::move(say));
  installed_ = true;
  use_handlers();
  if (g_word.load() == kNoWord) {
    g_saying_since_ns.store(0);
    g_word.store(kArmed);
  }
}

LastWordOnSignal::~LastWordOnSignal() {
  if (!installed_) return;
  std::unique_lock lock(g_mutex);
  int armed = kArmed;
  const bool said = outer_ ? g_word.load() == kSaying : !g_word.compare_exchange_strong(armed, kNoWord);
  if (said) {
    // A signal came first: the speaker ends the process. Should it never get there, the signal does.
    lock.unlock();
    const long long limit = static_cast<long long>((kPatienceSeconds + 1) * 1e9);
    while (g_saying_since_ns.load() == 0 || monotonic_ns() - g_saying_since_ns.load() < limit) {
      const timespec pause{0, 10'000'000};
      ::nanosleep(&pause, nullptr);
    }
    end_by(g_word_signal.load());
  }
  g_say = std::move(outer_);
  release_handlers();
}

void RemoveOnSignal::remove_now() {
  remove_guarded_files();
}

GuardedFileWrite::GuardedFileWrite() {
  g_writers.fetch_add(1);
  allowed_ = !g_dying.load();
}

GuardedFileWrite::~GuardedFileWrite() {
  g_writers.fetch_sub(1);
}

void run_with_signals_blocked(const std::function<void()>& work) {
  std::exception_ptr failure;
  std::thread worker = thread_with_signals_blocked([&] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace fb
