// The health report: verdict names and arithmetic, the per-rank JSON the ranks gather, the Results and
// summary of `factorybench health`, and the supervisor's reading of them back (docs/health.md, "Report").
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "reports/health_extra.hpp"
#include "workloads/health_checks.hpp"

namespace fb::workloads {

using health::metric;
using nlohmann::json;
using reports::Metric;

namespace {

constexpr std::string_view kVerdictNames[] = {"pass", "warn", "fail", "skip"};

json metric_json(const std::string& name, const Metric& m) {
  return {{"name", name},
          {"value", m.value},
          {"unit", m.unit},
          {"better", std::string(reports::to_string(m.better))}};
}

}  // namespace

CheckOutcome make_outcome(std::string_view check, Verdict verdict, std::string reason) {
  CheckOutcome o;
  o.check = std::string(check);
  o.verdict = verdict;
  o.reason = std::move(reason);
  return o;
}

std::string_view to_string(Verdict v) {
  return kVerdictNames[static_cast<int>(v)];
}

Verdict parse_verdict(std::string_view text) {
  for (int i = 0; i < 4; ++i)
    if (text == kVerdictNames[i]) return static_cast<Verdict>(i);
  throw input_error(fmt::format("unknown health verdict '{}': expected pass, warn, fail or skip", text));
}

Verdict combine_verdicts(std::span<const Verdict> checks) {
  Verdict v = Verdict::pass;
  for (const auto c : checks) {
    if (c == Verdict::fail) return Verdict::fail;
    if (c == Verdict::warn) v = Verdict::warn;
  }
  return v;
}

const CheckOutcome* RankHealth::find(std::string_view check) const {
  for (const auto& c : checks)
    if (c.check == check) return &c;
  return nullptr;
}

std::string RankHealth::reasons(Verdict which) const {
  std::string out;
  for (const auto& c : checks)
    if (c.verdict == which) out += (out.empty() ? "" : "; ") + c.check + ": " + c.reason;
  return out;
}

bool HealthRun::all_pass() const {
  return std::none_of(verdicts.begin(), verdicts.end(), [](Verdict v) { return v == Verdict::fail; });
}

bool HealthRun::passed() const {
  return all_pass() && !(job && job->verdict == Verdict::fail);
}

std::vector<int> HealthRun::failed_ranks() const {
  std::vector<int> out;
  for (std::size_t r = 0; r < verdicts.size(); ++r)
    if (verdicts[r] == Verdict::fail) out.push_back(static_cast<int>(r));
  return out;
}

json check_outcome_to_json(const CheckOutcome& ch) {
  json metrics = json::array();
  for (const auto& [name, m] : ch.metrics) metrics.push_back(metric_json(name, m));
  return {{"check", ch.check},
          {"verdict", std::string(to_string(ch.verdict))},
          {"reason", ch.reason},
          {"metrics", metrics}};
}

CheckOutcome check_outcome_from_json(const json& ch) {
  CheckOutcome o =
      make_outcome(ch.at("check").get<std::string>(), parse_verdict(ch.at("verdict").get<std::string>()),
                   ch.at("reason").get<std::string>());
  for (const auto& m : ch.at("metrics"))
    o.metrics.emplace_back(m.at("name").get<std::string>(),
                           metric(m.at("value").get<double>(), m.at("unit").get<std::string>(),
                                  reports::parse_better(m.at("better").get<std::string>())));
  return o;
}

json health_rank_to_json(const RankHealth& r) {
  json checks = json::array();
  for (const auto& ch : r.checks) checks.push_back(check_outcome_to_json(ch));
  return {{"rank", r.rank},
          {"host", r.host},
          {"device", r.device},
          {"verdict", std::string(to_string(r.verdict))},
          {"checks", checks}};
}

RankHealth health_rank_from_json(const json& j) {
  RankHealth r;
  r.rank = j.at("rank").get<int>();
  r.host = j.at("host").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.verdict = parse_verdict(j.at("verdict").get<std::string>());
  for (const auto& ch : j.at("checks")) r.checks.push_back(check_outcome_from_json(ch));
  return r;
}

std::vector<reports::Result> health_results(const HealthRun& run) {
  std::vector<reports::Result> out;
  const auto add = [&](const CheckOutcome& ch, std::string name, json params) {
    reports::Result res;
    res.benchmark = "health";
    res.name = std::move(name);
    res.params = std::move(params);
    for (const auto& [metric_name, m] : ch.metrics) res.set_metric(metric_name, m);
    if (ch.verdict == Verdict::fail) res.fail(ch.reason);
    if (ch.verdict == Verdict::skip) {
      res.status = reports::Status::skipped;
      res.error = ch.reason;
    }
    reports::write_health_extra(res, {std::string(to_string(ch.verdict)), ch.reason});
    out.push_back(std::move(res));
  };
  for (const auto& r : run.ranks)
    for (const auto& ch : r.checks)
      add(ch, fmt::format("{}/rank{}", ch.check, r.rank),
          {{"check", ch.check}, {"rank", r.rank}, {"host", r.host}, {"device", r.device}});
  // The job's result: no rank in its name or params (health_from_report reads ranks, and skips it).
  if (run.job)
    add(*run.job, run.job->check + "/job",
        {{"check", run.job->check}, {"scope", "job"}, {"ranks", run.verdicts.size()}});
  return out;
}

json health_summary(const HealthRun& run, const HealthOptions& options) {
  json ranks = json::array();
  std::vector<Verdict> all;
  for (const auto& r : run.ranks) {
    json failed = json::array(), warned = json::array();
    for (const auto& ch : r.checks) {
      if (ch.verdict == Verdict::fail) failed.push_back(ch.check);
      if (ch.verdict == Verdict::warn) warned.push_back(ch.check);
    }
    ranks.push_back(
        {{"rank", r.rank},
         {"host", r.host},
         {"device", r.device},
         {"verdict", std::string(to_string(r.verdict))},
         {"failed", failed},
         {"warned", warned},
         {"reason", r.verdict == Verdict::fail ? r.reasons(Verdict::fail) : r.reasons(Verdict::warn)}});
    all.push_back(r.verdict);
  }
  if (run.job) all.push_back(run.job->verdict);
  json failed_ranks = run.failed_ranks();
  json summary = {{"verdict", std::string(to_string(combine_verdicts(all)))},
                  {"ranks_total", run.verdicts.size()},
                  {"ranks_failed", failed_ranks},
                  {"checks", std::vector<std::string>(std::begin(kHealthChecks), std::end(kHealthChecks))},
                  {"options",
                   {{"expect_gpu", options.expect_gpu},
                    {"gemm_floor", options.gemm_floor ? json(*options.gemm_floor) : json(nullptr)},
                    {"allreduce_floor_gbps",
                     options.allreduce_floor_gbps ? json(*options.allreduce_floor_gbps) : json(nullptr)},
                    {"min_free_memory", options.min_free_memory},
                    {"checkpoint_dir", options.checkpoint_dir.string()}}},
                  {"ranks", ranks}};
  if (run.job)
    summary["job"] = {{"check", run.job->check},
                      {"verdict", std::string(to_string(run.job->verdict))},
                      {"reason", run.job->reason}};
  return summary;
}

std::vector<RankHealth> health_from_report(const reports::Report& report) {
  std::map<int, RankHealth> by_rank;
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const auto& res = report.results[i];
    if (res.benchmark != "health") continue;
    if (res.params.value("scope", "") == "job") continue;  // the job-level floor: no rank's verdict
    const auto where = fmt::format("results[{}] ({})", i, res.name);
    if (!res.params.contains("rank") || !res.params["rank"].is_number_integer())
      throw input_error(where + ".params.rank: missing or not an integer");
    if (!res.params.contains("check") || !res.params["check"].is_string())
      throw input_error(where + ".params.check: missing or not a string");
    const int rank = res.params["rank"].get<int>();
    Verdict v = res.status == reports::Status::failed    ? Verdict::fail
                : res.status == reports::Status::skipped ? Verdict::skip
                                                         : Verdict::pass;
    const auto extra = reports::read_health_extra(res);
    if (extra.verdict) v = parse_verdict(*extra.verdict);
    auto& r = by_rank[rank];
    r.rank = rank;
    r.host = res.params.value("host", "");
    r.device = res.params.value("device", "");
    CheckOutcome o = make_outcome(res.params["check"].get<std::string>(), v,
                                  extra.reason.value_or(res.error.value_or("")));
    for (const auto& [name, m] : res.metrics) o.metrics.emplace_back(name, m);
    r.checks.push_back(std::move(o));
  }
  std::vector<RankHealth> out;
  for (auto& [rank, r] : by_rank) {
    std::vector<Verdict> v;
    for (const auto& ch : r.checks) v.push_back(ch.verdict);
    r.verdict = combine_verdicts(v);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fb::workloads
