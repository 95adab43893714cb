#include "workloads/train/optimizer.hpp"

namespace fb::workloads::train {

double Optimizer::replicas(const Region& r) const {
  if (&r == &w_.dense) return static_cast<double>(c_.o.parallel.dp);
  return w_.experts.count ? static_cast<double>(c_.groups.edp->size()) : 1.0;
}

double Optimizer::gradient_sum_squares() {
  c_.mark(kOptimizer);
  const auto& d = w_.dense;
  double s = c_.k->sum_squares(d.grad.data(), c_.dt, d.count) / static_cast<double>(c_.o.parallel.dp);
  if (w_.experts.count)
    s += c_.k->sum_squares(w_.experts.grad.data(), c_.dt, w_.experts.count) / c_.groups.edp->size();
  return s;
}

void Optimizer::update(std::int64_t step_number) {
  c_.mark(kOptimizer);
  kernels::AdamParams p;
  p.lr = c_.o.learning_rate;
  p.step = step_number;
  for (Region* r : {&w_.dense, &w_.experts}) {
    if (r->count == 0) continue;
    // Gradients are sums over micro-batches and DP replicas: average them.
    p.grad_scale = static_cast<float>(1.0 / (replicas(*r) * static_cast<double>(c_.plan.shape.grad_accum)));
    c_.k->adam_update(r->param.data(), r->grad.data(), c_.dt, r->master.as<float>(), r->m.as<float>(),
                      r->v.as<float>(), r->count, p);
  }
}

}  // namespace fb::workloads::train
