#pragma once
// Files that must not outlive their process when a signal ends it: the health check's scratch file of up to
// --checkpoint-size (Ctrl-C, or the scheduler's SIGTERM, in the middle of the write used to leave gigabytes
// behind), and a rank's hang-watchdog state files with their fb-hang-<run id>/ directory (an interrupted
// health or locate left one in --run-dir per run). While a guard lives, SIGINT, SIGTERM and SIGHUP unlink
// its files and then remove its directory if that is empty by then (the ranks of a job share it: the last
// one out removes it), then take their default action, so the exit status is the signal's as before.
// unlink, rmdir and access are async-signal-safe. Another thread that (re)creates a guarded file brackets the
// write with a GuardedFileWrite, so that it does not reappear behind the handler. A few guards may live at
// once (kSlots); more are not guarded.
#include <filesystem>
#include <functional>
#include <vector>

namespace fb {

class RemoveOnSignal {
 public:
  // `keep_if`: when this file exists at the signal, nothing of this guard is removed (a hang diagnosis
  // that has claimed the report keeps its state files for the reader).
  explicit RemoveOnSignal(const std::vector<std::filesystem::path>& files,
                          const std::filesystem::path& dir = {}, const std::filesystem::path& keep_if = {});
  ~RemoveOnSignal();  // restores the previous handlers with the last guard; the files are the owner's
  RemoveOnSignal(const RemoveOnSignal&) = delete;
  RemoveOnSignal& operator=(const RemoveOnSignal&) = delete;

  static constexpr int kSlots = 4;
  static constexpr int kFilesPerSlot = 3;
  // What a signal does to the guards' files, now, for a last word that waits before the signal ends the
  // process (LastWordOnSignal): a rank killed while it waits leaves nothing behind. A guarded write is
  // not made again after it.
  static void remove_now();

 private:
  int slot_ = -1;
};

// Brackets the (re)creation of a guarded file by a thread the signal may not interrupt (write a temporary,
// rename it over the file): a hang watchdog's state file, rewritten every period, reappeared when its rename
// fell between the handler's unlink and the process's end, and stayed. The handler waits for a write under
// way to end (at most a quarter of a second: the signal may have interrupted the writer itself), and a write
// that begins once a handler has started is not made (`allowed()` false). Lock-free atomics only.
class GuardedFileWrite {
 public:
  GuardedFileWrite();
  ~GuardedFileWrite();
  GuardedFileWrite(const GuardedFileWrite&) = delete;
  GuardedFileWrite& operator=(const GuardedFileWrite&) = delete;
  bool allowed() const { return allowed_; }

 private:
  bool allowed_ = false;
};

// What a process says before SIGINT, SIGTERM or SIGHUP ends it: a benchmark stopped by Ctrl-C or by a
// scheduler's time limit (scancel, Slurm's SIGTERM) used to end with nothing written; now it writes the
// report so far. While a LastWordOnSignal lives, the first of these signals wakes a thread of this module
// (a handler may only wake it: writing a report is not async-signal-safe), which runs `say(sig)`, removes
// the guards' files and lets the signal take its default action, so the exit status is the signal's as
// before. The thread that took the signal goes on meanwhile. A signal that comes while the last word is
// said waits for it up to kPatienceSeconds (mpirun follows a rank's SIGTERM by SIGKILL anyway), then ends
// the process at once. Nested: the innermost one speaks; the outer one speaks again once it is gone.
class LastWordOnSignal {
 public:
  explicit LastWordOnSignal(std::function<void(int sig)> say);
  // Restores the outer one. When a signal came first, waits for the last word to end the process.
  ~LastWordOnSignal();
  LastWordOnSignal(const LastWordOnSignal&) = delete;
  LastWordOnSignal& operator=(const LastWordOnSignal&) = delete;

  static constexpr double kPatienceSeconds = 3;

 private:
  std::function<void(int)> outer_;
  bool installed_ = false;
};

// Runs `work` on a thread of its own that blocks SIGINT, SIGTERM and SIGHUP, and waits for it (rethrowing
// what it throws). A thread blocked in the kernel (an fdatasync of a large write is uninterruptible) runs no
// handler until the call returns, and Linux hands a process-directed signal to the main thread when that
// thread does not block it: mpirun's SIGKILL, a second after its SIGTERM, then came first and left a guard's
// files behind. The waiting thread takes the signal at once and the guards' files go before the SIGKILL.
void run_with_signals_blocked(const std::function<void()>& work);

}  // namespace fb
