#include "core/fault_injection.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"

namespace fb {
namespace {

constexpr std::string_view kVar = "FACTORYBENCH_INJECT";

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto p = text.find(sep);
    out.push_back(text.substr(0, p));
    if (p == std::string_view::npos) break;
    text.remove_prefix(p + 1);
  }
  return out;
}

[[noreturn]] void bad(std::string_view item, const std::string& why) {
  throw usage_error("invalid " + std::string(kVar) + " entry '" + std::string(item) + "': " + why);
}

// Ranks count from 0; call and check numbers from 1 (`least`).
std::uint64_t number(std::string_view item, std::string_view key, std::string_view value,
                     long long least = 0) {
  std::string s(value);
  char* end = nullptr;
  const long long v = s.empty() ? -1 : std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < least)
    bad(item, least == 0 ? std::string(key) + " must be a non-negative integer"
                         : fmt::format("{} must be an integer of at least {} ({} numbers start at {})", key,
                                       least, key, least));
  return static_cast<std::uint64_t>(v);
}

}  // namespace

double InjectedFaults::send_delay(int from, int to) const {
  double d = from == slow_rank ? slow_rank_delay_s : 0;
  for (const auto& l : slow_links)
    if ((l.a == from && l.b == to) || (l.a == to && l.b == from)) d += l.delay_s;
  return d;
}

double InjectedFaults::collective_delay(int rank) const {
  return rank == slow_rank ? slow_rank_delay_s : 0;
}

InjectedFaults parse_injected_faults(std::string_view spec) {
  InjectedFaults f;
  f.text = std::string(spec);
  if (spec.empty()) return f;
  for (auto item : split(spec, ';')) {
    // As --faults refuses it: an empty entry is a typo (a lost entry, or one ';' too many), not nothing.
    if (item.empty())
      throw usage_error(
          fmt::format("invalid {} '{}': an empty entry (two ';' in a row, or one at an end)", kVar, spec));
    const auto at = item.find('@');
    if (at == std::string_view::npos) bad(item, "expected KIND@key=value,...");
    const auto kind = item.substr(0, at);
    std::map<std::string_view, std::string_view> kv;
    for (auto part : split(item.substr(at + 1), ',')) {
      const auto eq = part.find('=');
      if (eq == std::string_view::npos) bad(item, "expected key=value, got '" + std::string(part) + "'");
      if (!kv.emplace(part.substr(0, eq), part.substr(eq + 1)).second)
        bad(item, "key '" + std::string(part.substr(0, eq)) + "' given twice");
    }
    auto take = [&](std::string_view key) {
      const auto it = kv.find(key);
      if (it == kv.end()) bad(item, "missing " + std::string(key) + "=");
      const auto v = it->second;
      kv.erase(it);
      return v;
    };
    // A bad duration is named with the variable and its entry, as every other bad value in it.
    auto duration = [&](std::string_view key) {
      const auto text = take(key);
      try {
        return parse_duration(text, std::string(key));
      } catch (const Error& e) {
        bad(item, e.what());
      }
    };
    if (kind == "slow-link") {
      const auto ranks = take("ranks");
      const auto dash = ranks.find('-');
      if (dash == std::string_view::npos) bad(item, "ranks must be A-B");
      InjectedFaults::SlowLink l;
      l.a = static_cast<int>(number(item, "ranks", ranks.substr(0, dash)));
      l.b = static_cast<int>(number(item, "ranks", ranks.substr(dash + 1)));
      if (l.a == l.b) bad(item, "a link needs two different ranks");
      l.delay_s = duration("delay");
      for (const auto& other : f.slow_links)
        if (std::min(other.a, other.b) == std::min(l.a, l.b) &&
            std::max(other.a, other.b) == std::max(l.a, l.b))
          bad(item, fmt::format("the link {}-{} is given twice (its delays would add up)", l.a, l.b));
      f.slow_links.push_back(l);
    } else if (kind == "slow-rank") {
      if (f.slow_rank >= 0) bad(item, "one slow-rank entry per run (a second would replace the first)");
      f.slow_rank = static_cast<int>(number(item, "rank", take("rank")));
      f.slow_rank_delay_s = duration("delay");
    } else if (kind == "hang") {
      if (f.hang_rank >= 0) bad(item, "one hang entry per run (a second would replace the first)");
      f.hang_rank = static_cast<int>(number(item, "rank", take("rank")));
      f.hang_call = number(item, "call", take("call"), 1);
    } else if (kind == "sdc") {
      if (f.sdc_rank >= 0) bad(item, "one sdc entry per run (a second would replace the first)");
      f.sdc_rank = static_cast<int>(number(item, "rank", take("rank")));
      if (kv.count("check")) f.sdc_check = number(item, "check", take("check"), 1);
    } else if (kind == "wrong") {
      if (f.wrong_rank >= 0) bad(item, "one wrong entry per run (a second would replace the first)");
      f.wrong_rank = static_cast<int>(number(item, "rank", take("rank")));
      if (kv.count("check")) f.wrong_check = number(item, "check", take("check"), 1);
    } else {
      bad(item,
          "unknown kind '" + std::string(kind) + "' (expected slow-link, slow-rank, hang, sdc or wrong)");
    }
    if (!kv.empty()) bad(item, "unknown key '" + std::string(kv.begin()->first) + "'");
  }
  return f;
}

void check_injected_ranks(const InjectedFaults& f, int world_size) {
  const auto check = [&](int rank, const char* kind) {
    if (rank >= world_size)
      throw usage_error(fmt::format("{} '{}': {} names rank {}, but the job has ranks 0..{}", kVar, f.text,
                                    kind, rank, world_size - 1));
  };
  for (const auto& l : f.slow_links) {
    check(l.a, "slow-link");
    check(l.b, "slow-link");
  }
  check(f.slow_rank, "slow-rank");
  check(f.hang_rank, "hang");
  check(f.sdc_rank, "sdc");
  check(f.wrong_rank, "wrong");
}

void check_hang_has_peers(const InjectedFaults& f, int world_size) {
  // The watchdog finds a hang through the ranks left waiting for the stuck one: alone, the stuck rank waits
  // in no call, and the job would sit there until killed.
  if (f.hang_rank >= 0 && world_size < 2)
    throw usage_error(
        fmt::format("{} '{}': hang needs a second rank to wait for the stuck one (the watchdog "
                    "names the rank its peers wait for): run at least 2 ranks",
                    kVar, f.text));
}

void check_injection_applies(std::string_view command, int world_size, const InjectionTargets& can) {
  const auto& f = injected_faults();
  check_injected_ranks(f, world_size);
  // A slow link delays messages between its two ranks; collectives are delayed by a slow rank only.
  if (can.communicator && !can.point_to_point && !f.slow_links.empty())
    throw usage_error(
        fmt::format("{} '{}': {} sends no point-to-point message, so slow-link cannot act on it "
                    "(slow-rank delays its collectives)",
                    kVar, f.text, command));
  if (!can.communicator && can.numbered_calls && (!f.slow_links.empty() || f.slow_rank >= 0))
    throw usage_error(
        fmt::format("{} '{}': {} sends nothing through the communicator: slow-link and "
                    "slow-rank cannot act on it (hang can)",
                    kVar, f.text, command));
  if (!can.communicator && !can.numbered_calls &&
      (!f.slow_links.empty() || f.slow_rank >= 0 || f.hang_rank >= 0))
    throw usage_error(
        fmt::format("{} '{}': {} sends nothing through the communicator: slow-link, slow-rank and "
                    "hang cannot act on it",
                    kVar, f.text, command));
  if (!can.sdc && f.sdc_rank >= 0)
    throw usage_error(fmt::format("{} '{}': {} has no burn-in check for sdc to act on (burnin has)", kVar,
                                  f.text, command));
  if (!can.collective_check && f.wrong_rank >= 0)
    throw usage_error(fmt::format(
        "{} '{}': {} runs no collective --check for wrong to act on (collective does, without --no-check)",
        kVar, f.text, command));
  check_hang_has_peers(f, world_size);
}

const InjectedFaults& injected_faults() {
  static const InjectedFaults faults = [] {
    const char* env = std::getenv(kVar.data());
    return env && *env ? parse_injected_faults(env) : InjectedFaults{};
  }();
  return faults;
}

}  // namespace fb
