#include "resilience/checkpoint_interval.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::resilience {
namespace {

void require_positive(double value, const char* what) {
  if (!std::isfinite(value) || value <= 0)
    throw usage_error(fmt::format("invalid {} {}: must be a positive number of seconds", what, value));
}

void require_non_negative(double value, const char* what) {
  if (!std::isfinite(value) || value < 0)
    throw usage_error(fmt::format("invalid {} {}: must be a non-negative number of seconds", what, value));
}

}  // namespace

double young_interval(double checkpoint_s, double mtbf_s) {
  require_positive(checkpoint_s, "checkpoint cost");
  require_positive(mtbf_s, "MTBF");
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

double daly_interval(double checkpoint_s, double mtbf_s) {
  require_positive(checkpoint_s, "checkpoint cost");
  require_positive(mtbf_s, "MTBF");
  const double delta = checkpoint_s, m = mtbf_s;
  if (delta >= 2.0 * m) return m;
  const double x = delta / (2.0 * m);
  return std::sqrt(2.0 * delta * m) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta;
}

double first_order_waste(double checkpoint_s, double restart_s, double mtbf_s) {
  require_positive(checkpoint_s, "checkpoint cost");
  require_non_negative(restart_s, "restart cost");
  require_positive(mtbf_s, "MTBF");
  return std::sqrt(2.0 * checkpoint_s / mtbf_s) + restart_s / mtbf_s;
}

namespace {

// The first-order terms, each a share of the wall time: checkpoints, the work a failure loses, the restart.
struct FirstOrderTerms {
  double computing, checkpoints, lost, restart;
};

FirstOrderTerms first_order_terms(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                                  double commit_s) {
  require_positive(interval_s, "checkpoint interval");
  require_positive(checkpoint_s, "checkpoint cost");
  require_non_negative(restart_s, "restart cost");
  require_positive(mtbf_s, "MTBF");
  require_non_negative(commit_s, "checkpoint write time");
  const double t = interval_s, w = commit_s, cycle = std::max(t, w);
  const double lost = t / 2.0 + std::min(w, t) + std::max(0.0, w - t) / 2.0;
  return {t / cycle, checkpoint_s / cycle, lost / mtbf_s, restart_s / mtbf_s};
}

}  // namespace

double first_order_overhead(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                            double commit_s) {
  const auto f = first_order_terms(interval_s, checkpoint_s, restart_s, mtbf_s, commit_s);
  return f.checkpoints + f.lost + f.restart;
}

double first_order_goodput(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                           double commit_s) {
  const auto f = first_order_terms(interval_s, checkpoint_s, restart_s, mtbf_s, commit_s);
  // In Young's order (1 − C/T − T/2M − R/M, then × 1 unless a write holds saves back): W = 0 gives his
  // formula to the bit.
  return std::clamp(f.computing * (1.0 - f.checkpoints - f.lost - f.restart), 0.0, 1.0);
}

double exponential_goodput(double interval_s, double checkpoint_s, double restart_s, double mtbf_s,
                           double commit_s) {
  require_positive(interval_s, "checkpoint interval");
  require_positive(checkpoint_s, "checkpoint cost");
  require_non_negative(restart_s, "restart cost");
  require_positive(mtbf_s, "MTBF");
  require_non_negative(commit_s, "checkpoint write time");
  const double m = mtbf_s;
  const double first = checkpoint_s + std::max(interval_s, commit_s);  // L1; L2 − L1 = min(T, W)
  const double retry_extra = std::min(interval_s, commit_s);
  // (1 − e^{−L1/M})·e^{L2/M} = e^{(L2 − L1)/M}·(e^{L1/M} − 1); expm1 keeps the precision where L1/M is tiny
  // (M of years): e^x − 1 would cancel to nothing.
  const double wall_per_work =
      m * std::exp((restart_s + retry_extra) / m) * std::expm1(first / m) / interval_s;
  return std::isfinite(wall_per_work) ? 1.0 / wall_per_work : 0.0;
}

}  // namespace fb::resilience
