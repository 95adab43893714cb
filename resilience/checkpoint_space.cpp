#include "resilience/checkpoint_space.hpp"

#include <fmt/format.h>

#include "core/units.hpp"

namespace fb::resilience {

std::optional<std::string> checkpoint_space_problem(const std::filesystem::path& run_dir, int keep,
                                                    double bytes_per_checkpoint, const std::string& of_what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::absolute(run_dir, ec);
  if (ec) return std::nullopt;
  while (!fs::exists(dir, ec) && dir.has_parent_path() && dir != dir.parent_path()) dir = dir.parent_path();
  const auto space = fs::space(dir, ec);
  if (ec) return std::nullopt;
  std::uintmax_t held = 0;
  for (auto it = fs::recursive_directory_iterator(run_dir / "checkpoints", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (std::error_code fe; it->is_regular_file(fe)) held += it->file_size(fe);
  const double need = bytes_per_checkpoint * (keep + 2);
  const double usable = static_cast<double>(space.available) + static_cast<double>(held);
  if (need <= 0.9 * usable) return std::nullopt;
  return fmt::format(
      "--keep {} + 2 checkpoints {} need {}, but {} has {} free{}", keep, of_what,
      format_bytes(static_cast<std::uint64_t>(need)), dir.string(), format_bytes(space.available),
      held > 0 ? fmt::format(" and its checkpoints hold {}", format_bytes(held)) : std::string());
}

}  // namespace fb::resilience
