#include "reports/health_extra.hpp"

#include "reports/extra_cursor.hpp"

namespace fb::reports {

void write_health_extra(Result& r, const HealthExtra& x) {
  if (x.verdict) r.extra["verdict"] = *x.verdict;
  if (x.reason) r.extra["reason"] = *x.reason;
}

HealthExtra read_health_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    HealthExtra x;
    if (!e.j.is_object()) return x;
    if (e.j.contains("verdict")) x.verdict = e.at("verdict").str();
    if (e.j.contains("reason")) x.reason = e.at("reason").str();
    return x;
  });
}

}  // namespace fb::reports
