#include "reports/burnin_extra.hpp"

#include "reports/extra_cursor.hpp"

namespace fb::reports {

using nlohmann::json;

void write_burnin_extra(Result& r, const BurninExtra& x) {
  json ranks = json::array();
  for (const auto& k : x.ranks)
    ranks.push_back({{"rank", k.rank},
                     {"local_rank", k.local_rank},
                     {"device", k.device},
                     {"gemms", k.gemms},
                     {"tflops", k.tflops},
                     {"checksums", k.checksums}});
  json problems = json::array();
  for (const auto& p : x.problems)
    problems.push_back(
        {{"rank", p.rank}, {"check", p.check}, {"first_seen_s", p.first_seen_s}, {"reason", p.reason}});
  r.extra["ranks"] = ranks;
  r.extra["problems"] = problems;
  r.extra["verdict"] = x.verdict;
}

BurninExtra read_burnin_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    BurninExtra x;
    x.ranks = e.at("ranks").each([](const ExtraCursor& k) {
      return BurninRankExtra{k.at("rank").integer<int>(), k.at("local_rank").integer<int>(),
                             k.at("device").str(),        k.at("gemms").integer<std::int64_t>(),
                             k.at("tflops").num(),        k.at("checksums").strings()};
    });
    x.problems = e.at("problems").each([](const ExtraCursor& p) {
      return BurninProblemExtra{p.at("rank").integer<int>(), p.at("check").integer<int>(),
                                p.at("first_seen_s").num(), p.at("reason").str()};
    });
    x.verdict = e.at("verdict").str();
    return x;
  });
}

}  // namespace fb::reports
