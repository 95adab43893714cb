#include "resilience/fault_plan.hpp"
#include "core/json_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "core/units.hpp"

namespace fb::resilience {
namespace {

struct KindInfo {
  FaultKind kind;
  std::string_view name;
  bool fatal;
};
constexpr std::array<KindInfo, 7> kKinds{{{FaultKind::crash, "crash", true},
                                          {FaultKind::hang, "hang", true},
                                          {FaultKind::straggler, "straggler", false},
                                          {FaultKind::sdc, "sdc", true},
                                          {FaultKind::nan, "nan", true},
                                          {FaultKind::ckpt_corrupt, "ckpt-corrupt", false},
                                          {FaultKind::ckpt_write_fail, "ckpt-write-fail", false}}};

std::string kind_list() {
  std::string out;
  for (const auto& k : kKinds) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (true) {
    const auto next = s.find(sep, pos);
    out.push_back(s.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return out;
}

// Errors quote the offending part of the spec.
Error bad(std::string_view part, const std::string& why) {
  return usage_error(fmt::format("invalid --faults '{}': {}", part, why));
}

// Ranks are ints: a larger value would wrap (rank=4294967296 became rank 0) before the check against the job.
constexpr std::int64_t kMaxRankValue = std::int64_t{1} << 24;

std::int64_t parse_int(std::string_view text, std::string_view part, std::string_view key, std::int64_t min,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw bad(part, fmt::format("{}='{}' is not an integer", key, text));
  if (v < min) throw bad(part, fmt::format("{}={} must be at least {}", key, v, min));
  if (v > max) throw bad(part, fmt::format("{}={} must be at most {}", key, v, max));
  return v;
}

double parse_real(std::string_view text, std::string_view part, std::string_view key) {
  double v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v))
    throw bad(part, fmt::format("{}='{}' is not a number", key, text));
  return v;
}

double parse_dur(std::string_view text, std::string_view part, std::string_view key) {
  try {
    return parse_duration(text, key);
  } catch (const Error&) {
    throw bad(part, fmt::format("{}='{}' is not a duration (e.g. 30s, 5m)", key, text));
  }
}

std::string canonical(const PlannedFault& f) {
  std::string s(to_string(f.kind));
  if (f.step)
    s += fmt::format("@step={}", *f.step);
  else
    s += fmt::format("@time={}s", *f.time_s);
  s += fmt::format(",rank={}", f.rank);
  if (f.kind == FaultKind::straggler) {
    s += fmt::format(",factor={}", f.factor);
    if (f.duration_s > 0) s += fmt::format(",duration={}s", f.duration_s);
  }
  return s;
}

constexpr double kMaxStragglerFactor = 1000;

void validate(PlannedFault& f, std::string_view part, int slots) {
  if (f.rank >= slots) throw bad(part, fmt::format("rank={} is not below the {} ranks", f.rank, slots));
  if (f.kind == FaultKind::straggler && !(f.factor > 1))
    throw bad(part, fmt::format("factor={} must be greater than 1", f.factor));
  // A rank 1000 times slower is a hang to any watchdog (inject `hang` for that); far beyond, the sleep
  // overflowed and the straggler ran at full speed.
  if (f.kind == FaultKind::straggler && f.factor > kMaxStragglerFactor)
    throw bad(part, fmt::format("factor={} is above {} (a rank that slow is a hang: inject hang)", f.factor,
                                kMaxStragglerFactor));
  f.text = canonical(f);
}

PlannedFault parse_one(std::string_view part, int slots) {
  const auto at = part.find('@');
  if (at == std::string_view::npos) throw bad(part, "expected KIND@step=N or KIND@time=D");
  PlannedFault f;
  const auto kind_text = trim(part.substr(0, at));
  bool known = false;
  for (const auto& k : kKinds)
    if (k.name == kind_text) {
      f.kind = k.kind;
      known = true;
    }
  if (!known) throw bad(part, fmt::format("unknown fault kind '{}' (expected {})", kind_text, kind_list()));
  bool factor_set = false, duration_set = false;
  std::vector<std::string_view> seen;
  for (auto item : split(part.substr(at + 1), ',')) {
    item = trim(item);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) throw bad(part, fmt::format("'{}' is not KEY=VALUE", item));
    const auto key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw bad(part, fmt::format("'{}' given twice", key));
    seen.push_back(key);
    if (key == "step")
      f.step = parse_int(value, part, key, 1);
    else if (key == "time")
      f.time_s = parse_dur(value, part, key);
    else if (key == "rank")
      f.rank = static_cast<int>(parse_int(value, part, key, 0, kMaxRankValue));
    else if (key == "factor")
      f.factor = parse_real(value, part, key), factor_set = true;
    else if (key == "duration")
      f.duration_s = parse_dur(value, part, key), duration_set = true;
    else
      throw bad(part, fmt::format("unknown key '{}' (expected step, time, rank, factor, duration)", key));
  }
  if (f.step.has_value() == f.time_s.has_value()) throw bad(part, "give exactly one of step=N and time=D");
  if ((factor_set || duration_set) && f.kind != FaultKind::straggler)
    throw bad(part, "factor and duration apply to straggler faults only");
  validate(f, part, slots);
  return f;
}

RandomFaultSpec parse_random(std::string_view spec, int ranks, std::uint64_t default_seed) {
  RandomFaultSpec r;
  r.seed = default_seed;
  bool have_mtbf = false;
  std::vector<std::string_view> seen;
  for (auto item : split(spec.substr(std::string_view("random:").size()), ',')) {
    item = trim(item);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) throw bad(spec, fmt::format("'{}' is not KEY=VALUE", item));
    const auto key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    // The last of two would win unseen (mtbf=5m,mtbf=6m), as in a KIND@ spec.
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw bad(spec, fmt::format("'{}' given twice", key));
    seen.push_back(key);
    if (key == "mtbf") {
      r.mtbf_s = parse_dur(value, spec, key);
      have_mtbf = true;
    } else if (key == "mix") {
      r.mix.clear();
      for (auto m : split(value, '/')) {
        const auto colon = m.find(':');
        if (colon == std::string_view::npos)
          throw bad(spec, fmt::format("mix entry '{}' is not KIND:SHARE", m));
        const auto kind_text = trim(m.substr(0, colon));
        bool known = false;
        FaultKind kind{};
        for (const auto& k : kKinds)
          if (k.name == kind_text) kind = k.kind, known = true;
        if (!known)
          throw bad(spec,
                    fmt::format("unknown fault kind '{}' in mix (expected {})", kind_text, kind_list()));
        for (const auto& [k, share] : r.mix)
          if (k == kind) throw bad(spec, fmt::format("fault kind '{}' given twice in mix", kind_text));
        const double share = parse_real(trim(m.substr(colon + 1)), spec, "mix share");
        if (share < 0) throw bad(spec, fmt::format("mix share '{}' must not be negative", m));
        r.mix.emplace_back(kind, share);
      }
    } else if (key == "flaky-ranks") {
      r.flaky_ranks = static_cast<int>(parse_int(value, spec, key, 0, kMaxRankValue));
    } else if (key == "flaky-share") {
      r.flaky_share = parse_real(value, spec, key);
      if (r.flaky_share < 0 || r.flaky_share > 1) throw bad(spec, "flaky-share must be in [0, 1]");
    } else if (key == "seed") {
      r.seed = static_cast<std::uint64_t>(parse_int(value, spec, key, 0));
    } else {
      throw bad(spec,
                fmt::format("unknown key '{}' (expected mtbf, mix, flaky-ranks, flaky-share, seed)", key));
    }
  }
  if (!have_mtbf || !(r.mtbf_s > 0)) throw bad(spec, "random plans need mtbf=DURATION (positive)");
  double total = 0;
  for (const auto& [k, s] : r.mix) total += s;
  if (!(total > 0)) throw bad(spec, "the mix shares must not all be zero");
  if (r.flaky_ranks > ranks)
    throw bad(spec, fmt::format("flaky-ranks={} exceeds the {} ranks", r.flaky_ranks, ranks));
  return r;
}

}  // namespace

std::string_view to_string(FaultKind kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return k.name;
  return "?";
}

FaultKind parse_fault_kind(std::string_view text, std::string_view what) {
  for (const auto& k : kKinds)
    if (k.name == text) return k.kind;
  throw usage_error(
      fmt::format("invalid {} '{}': unknown fault kind (expected {})", what, text, kind_list()));
}

bool is_fatal(FaultKind kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return k.fatal;
  return false;
}

std::vector<PlannedFault> expand_random_faults(const RandomFaultSpec& spec, int slots, double horizon_s,
                                               int first_id, int spares) {
  std::vector<PlannedFault> out;
  spares = std::clamp(spares, 0, std::max(slots - 1, 0));
  const int ranks = slots - spares;
  if (ranks <= 0 || !(spec.mtbf_s > 0)) return out;
  SplitMix64 rng(derive_seed(spec.seed, 0x6661756c74ull));
  // The flaky slots: the first K of a seeded shuffle of the job's ranks (spares are ordinary nodes).
  std::vector<int> order(static_cast<std::size_t>(ranks));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next() % i]);
  for (int s = ranks; s < slots; ++s) order.push_back(s);
  const auto flaky = static_cast<std::size_t>(std::min(spec.flaky_ranks, ranks));
  // mtbf is the job's (its `ranks` slots together): the flaky slots take `share` of that rate, the other
  // ranks the rest. Spares fail like the other ordinary slots, which adds their rate on top (the arrivals
  // that land on an idle spare never fire; a drained rank's replacement inherits the ordinary rate).
  const std::size_t normal_ranks = static_cast<std::size_t>(ranks) - flaky;
  const double flaky_rate = flaky > 0 ? (normal_ranks > 0 ? spec.flaky_share : 1.0) : 0.0;
  const double per_normal_slot =
      normal_ranks > 0 ? (1 - flaky_rate) / static_cast<double>(normal_ranks) : 1.0 / ranks;
  const double total_rate =
      spares == 0 ? 1.0 : flaky_rate + per_normal_slot * static_cast<double>(order.size() - flaky);
  const double flaky_pick = spares == 0 ? spec.flaky_share : flaky_rate / total_rate;
  double total = 0;
  for (const auto& [k, s] : spec.mix) total += s;
  double t = 0;
  while (out.size() < 100000) {
    t += -std::log1p(-rng.uniform()) * spec.mtbf_s / total_rate;  // exponential gap: Poisson arrivals
    if (t >= horizon_s) break;
    PlannedFault f;
    f.id = first_id + static_cast<int>(out.size());
    f.time_s = t;
    double pick = rng.uniform() * total;
    f.kind = spec.mix.back().first;
    for (const auto& [k, s] : spec.mix) {
      if (pick < s) {
        f.kind = k;
        break;
      }
      pick -= s;
    }
    const bool on_flaky = flaky > 0 && rng.uniform() < flaky_pick;
    const std::size_t others = order.size() - flaky;
    if (on_flaky || others == 0)
      f.rank = order[rng.next() % flaky];
    else
      f.rank = order[flaky + rng.next() % others];
    if (f.kind == FaultKind::straggler) {
      f.factor = 2.0;
      f.duration_s = spec.mtbf_s / 4;
    }
    f.text = canonical(f);
    out.push_back(std::move(f));
  }
  return out;
}

nlohmann::json FaultPlan::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : faults) {
    nlohmann::json j = {{"id", f.id},
                        {"kind", std::string(resilience::to_string(f.kind))},
                        {"rank", f.rank},
                        {"spec", f.text}};
    if (f.step) j["step"] = *f.step;
    if (f.time_s) j["time_s"] = *f.time_s;
    if (f.kind == FaultKind::straggler) {
      j["factor"] = f.factor;
      j["duration_s"] = f.duration_s;
    }
    list.push_back(std::move(j));
  }
  nlohmann::json out = {{"source", source}, {"faults", list}};
  if (random) {
    nlohmann::json mix = nlohmann::json::object();
    for (const auto& [k, s] : random->mix) mix[std::string(resilience::to_string(k))] = s;
    out["random"] = {{"mtbf_s", random->mtbf_s},
                     {"mix", mix},
                     {"flaky_ranks", random->flaky_ranks},
                     {"flaky_share", random->flaky_share},
                     {"seed", random->seed}};
  }
  return out;
}

FaultPlan parse_fault_spec(std::string_view spec, int slots, double horizon_s, std::uint64_t default_seed,
                           int spares) {
  FaultPlan plan;
  plan.source = std::string(spec);
  if (trim(spec).empty())
    throw usage_error("invalid --faults '': expected KIND@step=N, KIND@time=D or random:…");
  for (auto part : split(spec, ';')) {
    part = trim(part);
    // "crash@step=3;;hang@step=9" most likely lost an entry in editing: say so rather than run without it.
    if (part.empty()) throw bad(spec, "an empty entry (a ';' twice in a row, or at an end)");
    if (part.starts_with("random:")) {
      if (plan.random) throw bad(part, "only one random: part is allowed");
      plan.random = parse_random(part, slots - std::clamp(spares, 0, slots), default_seed);
      continue;
    }
    auto f = parse_one(part, slots);
    f.id = static_cast<int>(plan.faults.size());
    plan.faults.push_back(std::move(f));
  }
  if (plan.random) {
    auto more =
        expand_random_faults(*plan.random, slots, horizon_s, static_cast<int>(plan.faults.size()), spares);
    for (auto& f : more) plan.faults.push_back(std::move(f));
  }
  return plan;
}

FaultPlan parse_fault_json(const nlohmann::json& j, const std::string& source, int slots, double horizon_s,
                           std::uint64_t default_seed, int spares) {
  const auto err = [&](const std::string& path, const std::string& why) {
    return input_error(fmt::format("{}: {}: {}", source, path, why));
  };
  if (!j.is_object()) throw err("$", "expected an object with \"faults\" and/or \"random\"");
  for (const auto& [key, v] : j.items())
    if (key != "faults" && key != "random") throw err("$." + key, "unknown key (expected faults, random)");
  // Each entry becomes a spec part, so one parser decides what is valid; errors get the entry's JSON path.
  std::vector<std::string> parts;
  // Durations may be strings ("30s") or seconds; every other value is a JSON number, so "step": "3" (a
  // quoting slip in a generated plan) is refused like any other wrongly typed value.
  const auto value_text = [&](const nlohmann::json& v, const std::string& path,
                              bool duration) -> std::string {
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (v.is_number()) return fmt::format("{}", v.get<double>());
    if (v.is_string() && duration) return v.get<std::string>();
    throw err(path, duration ? "expected a number of seconds or a duration string" : "expected a number");
  };
  const auto is_duration = [](const std::string& key) {
    return key == "time" || key == "duration" || key == "mtbf";
  };
  if (j.contains("faults")) {
    const auto& list = j["faults"];
    if (!list.is_array()) throw err("$.faults", "expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const auto path = fmt::format("$.faults[{}]", i);
      const auto& f = list[i];
      if (!f.is_object()) throw err(path, "expected an object");
      if (!f.contains("kind") || !f["kind"].is_string())
        throw err(path + ".kind", "expected a fault kind string");
      std::string part = f["kind"].get<std::string>() + "@";
      bool first = true;
      for (const auto& [key, v] : f.items()) {
        if (key == "kind") continue;
        part += (first ? "" : ",") + key + "=" + value_text(v, path + "." + key, is_duration(key));
        first = false;
      }
      try {
        parts.push_back(parse_one(part, slots).text);
      } catch (const Error& e) {
        throw err(path, e.what());
      }
    }
  }
  if (j.contains("random")) {
    const auto& r = j["random"];
    if (!r.is_object()) throw err("$.random", "expected an object");
    std::string part = "random:";
    bool first = true;
    for (const auto& [key, v] : r.items()) {
      std::string text;
      if (key == "mix" && v.is_object()) {
        for (const auto& [k, s] : v.items())
          text += (text.empty() ? "" : "/") + k + ":" + value_text(s, "$.random.mix." + k, false);
      } else {
        text = value_text(v, "$.random." + key, is_duration(key) || key == "mix");
      }
      std::string name = key;
      std::replace(name.begin(), name.end(), '_', '-');
      part += (first ? "" : ",") + name + "=" + text;
      first = false;
    }
    try {
      parse_random(part, slots - std::clamp(spares, 0, slots), default_seed);
    } catch (const Error& e) {
      throw err("$.random", e.what());
    }
    parts.push_back(part);
  }
  std::string spec;
  for (const auto& p : parts) spec += (spec.empty() ? "" : ";") + p;
  if (spec.empty()) throw err("$", "no faults");
  auto plan = parse_fault_spec(spec, slots, horizon_s, default_seed, spares);
  plan.source = source;
  return plan;
}

FaultPlan load_fault_plan(std::string_view arg, int slots, double horizon_s, std::uint64_t default_seed,
                          int spares) {
  const auto text = trim(arg);
  std::error_code ec;
  // A file of that name is the plan, even one whose name holds '@' (runs/crash@3.json); anything else is
  // a spec.
  const bool file = std::filesystem::is_regular_file(std::string(text), ec);
  if (!file && text == "none") {  // a baseline: the same job, checkpoints and supervision, no fault
    FaultPlan plan;
    plan.source = "none";
    return plan;
  }
  if (!file && (text.find('@') != std::string_view::npos || text.starts_with("random:")))
    return parse_fault_spec(text, slots, horizon_s, default_seed, spares);
  if (!file && std::filesystem::is_directory(std::string(text), ec))
    throw usage_error(fmt::format("invalid --faults '{}': a directory, not a fault plan file", text));
  if (!file)
    throw usage_error(fmt::format(
        "invalid --faults '{}': not a fault spec (KIND@step=N, KIND@time=D, random:…, none) and no such file",
        text));
  return parse_fault_json(read_json_file(std::string(text)), std::string(text), slots, horizon_s,
                          default_seed, spares);
}

FiredRecord::FiredRecord(std::filesystem::path path) : path_(std::move(path)) {
  std::ifstream in(path_);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) keys_.insert(line);
}

namespace {
std::string fired_key(const PlannedFault& f) {
  return fmt::format("{} {}", f.id, f.text);
}
}  // namespace

bool FiredRecord::fired(const PlannedFault& fault) const {
  return keys_.count(fired_key(fault)) > 0;
}

void FiredRecord::mark(const PlannedFault& fault) {
  const std::string line = fired_key(fault) + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw runtime_error("cannot open " + path_.string() + ": " + std::strerror(errno));
  const bool ok =
      ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok)
    throw runtime_error("cannot record a fired fault in " + path_.string() + ": " + std::strerror(errno));
  keys_.insert(fired_key(fault));
}

}  // namespace fb::resilience
