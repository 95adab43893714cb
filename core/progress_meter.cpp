#include "core/progress_meter.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/logging.hpp"
#include "core/units.hpp"

namespace fb {

std::string progress_line(std::string_view what, double share, std::string_view detail, double elapsed_s) {
  share = std::clamp(share, 0.0, 1.0);
  const std::string left =
      share > 0 && share < 1
          ? fmt::format(", about {} left", format_duration(elapsed_s * (1 - share) / share))
          : "";
  return fmt::format("{}: {:.0f}%{}, {} elapsed{}", what, 100 * share,
                     detail.empty() ? std::string() : fmt::format(" ({})", detail),
                     format_duration(elapsed_s), left);
}

ProgressMeter::ProgressMeter(std::string what, double total, double quiet_for_s, double every_s,
                             std::function<void(const std::string&)> sink,
                             std::function<Clock::time_point()> now)
    : what_(std::move(what)), total_(total), every_s_(every_s), sink_(std::move(sink)), now_(std::move(now)) {
  start_ = clock();
  next_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(quiet_for_s));
}

ProgressMeter::Clock::time_point ProgressMeter::clock() const {
  return now_ ? now_() : Clock::now();
}

bool ProgressMeter::due() const {
  return total_ > 0 && clock() >= next_;
}

void ProgressMeter::update(double done, std::string_view detail) {
  const auto t = clock();
  if (t < next_ || total_ <= 0) return;
  next_ = t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(every_s_));
  const std::string line =
      progress_line(what_, done / total_, detail, std::chrono::duration<double>(t - start_).count());
  ++lines_;
  if (sink_)
    sink_(line);
  else
    log::info("{}", line);
}

}  // namespace fb
