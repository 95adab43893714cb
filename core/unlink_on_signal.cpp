#include "core/unlink_on_signal.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace fb {
namespace {

constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
char g_path[4096];  // written before the handlers are installed, read only by them
std::atomic<bool> g_in_use{false};
struct sigaction g_previous[kSignals.size()];

extern "C" void unlink_and_reraise(int sig) {
  ::unlink(g_path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

UnlinkOnSignal::UnlinkOnSignal(const std::filesystem::path& file) {
  const auto& text = file.native();
  if (text.size() >= sizeof(g_path) || g_in_use.exchange(true)) return;  // not guarded, as before
  std::memcpy(g_path, text.c_str(), text.size() + 1);
  struct sigaction action {};
  action.sa_handler = unlink_and_reraise;
  sigemptyset(&action.sa_mask);
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    // A signal the process ignores (nohup, a background job's SIGINT) stays ignored.
    ::sigaction(kSignals[i], nullptr, &g_previous[i]);
    if (g_previous[i].sa_handler != SIG_IGN) ::sigaction(kSignals[i], &action, nullptr);
  }
  armed_ = true;
}

UnlinkOnSignal::~UnlinkOnSignal() {
  if (!armed_) return;
  for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  g_in_use = false;
}

}  // namespace fb
