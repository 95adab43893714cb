#include "tools/suite_run_dirs.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "tools/train_options.hpp"

namespace fb::tools {
namespace {

namespace fs = std::filesystem;

// What a train or resilience step does with its --run-dir, read from its parsed options.
struct RunDirUse {
  std::size_t step = 0;
  fs::path dir;                 // as the step names it
  fs::path where;               // the same directory, for comparing two steps' (absolute, normal)
  std::vector<fs::path> saves;  // checkpoint directories it certainly fills (relative to the run dir)
  std::vector<fs::path> fresh;  // checkpoint directories it refuses when they hold one (fresh start)
  std::string saves_because;    // the option that makes the save certain
};

// The directory a path names, for comparison: "rd", "./rd/" and "/abs/rd" are one (symbolic links in the
// part that exists resolved).
fs::path same_dir(const fs::path& p) {
  std::error_code ec;
  auto out = fs::absolute(p, ec).lexically_normal();
  if (out.has_parent_path() && out.filename().empty()) out = out.parent_path();
  if (auto canonical = fs::weakly_canonical(out, ec); !ec) out = std::move(canonical);
  return out;
}

template <class T>
T value_or(const CLI::App& app, const char* name, T fallback) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt && opt->count() > 0 ? opt->as<T>() : fallback;
}

bool given(const CLI::App& app, const char* name) {
  const CLI::Option* opt = app.get_option_no_throw(name);
  return opt && opt->count() > 0;
}

// A flag given and not turned off (--resume=false).
bool flag_on(const CLI::App& app, const char* name) {
  return given(app, name) && app.get_option_no_throw(name)->as<bool>();
}

std::optional<RunDirUse> run_dir_use(const SuiteStep& step, const ParsedStep& parsed, std::size_t index) {
  const std::string& command = step.args.front();
  if (command != "train" && command != "resilience") return std::nullopt;
  const CLI::App* app = nullptr;
  for (const CLI::App* sub : parsed.app->get_subcommands())  // the parsed one
    if (sub->get_name() == command) app = sub;
  if (!app) return std::nullopt;
  const auto dir = value_or<std::string>(*app, "--run-dir", "");
  if (dir.empty()) return std::nullopt;  // resilience makes a directory of its own
  RunDirUse use;
  use.step = index;
  use.dir = dir;
  use.where = same_dir(dir);
  const bool resilience = command == "resilience";
  // --policy compare runs a job per policy, each in its own run dir under this one.
  std::vector<fs::path> jobs{"."};
  if (resilience && value_or<std::string>(*app, "--policy", "none") == "compare") jobs = {"none", "drain"};
  // Until the time budget, without --steps: how many steps run is not known.
  const bool steps_known = !resilience || given(*app, "--steps") || !given(*app, "--time-budget");
  const auto steps = value_or<std::int64_t>(*app, "--steps", TrainCliOptions{}.steps);
  const auto every = value_or<std::int64_t>(*app, "--checkpoint-every", 0);
  const auto interval = value_or<std::string>(*app, "--checkpoint-interval", "");
  if (!resilience && flag_on(*app, "--dry-run")) {
    // Saves nothing, but checks the run dir as the run would.
  } else if (every > 0 && (steps_known ? every <= steps : every == 1)) {
    use.saves_because = fmt::format("--checkpoint-every {}", every);
  } else if (interval == "auto") {
    use.saves_because = "--checkpoint-interval auto saves after its first step";
  }
  if (!use.saves_because.empty())
    for (const auto& job : jobs) use.saves.push_back((job / "checkpoints").lexically_normal());
  if (resilience)  // a fresh job whatever it is given: each of its policies' run dirs is checked
    use.fresh = {"checkpoints", "none/checkpoints", "drain/checkpoints"};
  else if (!flag_on(*app, "--resume"))
    use.fresh = {"checkpoints"};
  return use;
}

}  // namespace

void check_shared_run_dirs(const Suite& suite, const std::vector<ParsedStep>& parsed) {
  std::vector<RunDirUse> uses;
  for (std::size_t i = 0; i < parsed.size(); ++i)
    if (auto use = run_dir_use(suite.steps[i], parsed[i], i)) uses.push_back(std::move(*use));
  for (std::size_t later = 0; later < uses.size(); ++later)
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      const auto& a = uses[earlier];
      const auto& b = uses[later];
      if (a.where != b.where) continue;
      for (const auto& saved : a.saves)
        for (const auto& refused : b.fresh) {
          if (saved != refused) continue;
          const bool resilience = suite.steps[b.step].args.front() == "resilience";
          throw usage_error(fmt::format(
              "suite step '{}': --run-dir {} will hold checkpoints when it runs: step '{}' saves them in {} "
              "({}), and {}",
              suite.steps[b.step].name, b.dir.string(), suite.steps[a.step].name, (b.dir / saved).string(),
              a.saves_because,
              resilience ? "resilience starts a fresh job there: give it another --run-dir"
                         : "a run without --resume refuses a run dir with checkpoints: add --resume to "
                           "continue from them, or give it another --run-dir"));
        }
    }
}

}  // namespace fb::tools
