#pragma once
// A file that must not outlive its process when a signal ends it: the health check's scratch file of up to
// --checkpoint-size (Ctrl-C, or the scheduler's SIGTERM, in the middle of the write used to leave gigabytes
// behind). While a guard lives, SIGINT, SIGTERM and SIGHUP unlink the file (unlink is async-signal-safe),
// then take their default action, so the exit status is the signal's as before. One guard at a time.
#include <filesystem>

namespace fb {

class UnlinkOnSignal {
 public:
  explicit UnlinkOnSignal(const std::filesystem::path& file);
  ~UnlinkOnSignal();  // restores the previous handlers; the file itself is the owner's to remove
  UnlinkOnSignal(const UnlinkOnSignal&) = delete;
  UnlinkOnSignal& operator=(const UnlinkOnSignal&) = delete;

 private:
  bool armed_ = false;
};

}  // namespace fb
