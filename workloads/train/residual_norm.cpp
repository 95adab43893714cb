#include "workloads/train/residual_norm.hpp"

namespace fb::workloads::train {

NormTarget norm_target(const StepContext& c, const Region& dense, std::int64_t gamma_t, void* normed,
                       float* rstd) {
  return {weight(c, dense, gamma_t), normed, rstd};
}

void residual_add(StepContext& c, void* out, const void* x, const void* delta, const NormTarget& next) {
  c.mark(kElementwise);
  const std::int64_t h = c.m.hidden;
  if (!next.gamma) {  // the end of a stage that is not the last: the residual add alone
    c.copy(out, x, c.rows * h);
    c.k->add(out, c.my_rows(delta), c.dt, c.rows * h);
    return;
  }
  c.k->rmsnorm_forward(x, c.my_rows(delta), out, next.gamma, c.my_rows(next.normed), next.rstd, c.dt, c.rows,
                       h, h, c.m.norm_eps);
}

void norm_only(StepContext& c, const void* x, const NormTarget& target) {
  c.mark(kElementwise);
  const std::int64_t h = c.m.hidden;
  c.k->rmsnorm_forward(x, nullptr, nullptr, target.gamma, c.my_rows(target.normed), target.rstd, c.dt, c.rows,
                       h, h, c.m.norm_eps);
}

void norm_backward(StepContext& c, Region& dense, std::int64_t gamma_t, const void* dy, const void* x,
                   const float* rstd, const void* d_residual, void* dx) {
  c.mark(kElementwise);
  const std::int64_t h = c.m.hidden;
  c.k->rmsnorm_backward(c.my_rows(dy), x, weight(c, dense, gamma_t), rstd,
                        d_residual ? c.my_rows(d_residual) : nullptr, c.my_rows(dx),
                        weight_grad(c, dense, gamma_t), c.dt, c.rows, h, h);
}

}  // namespace fb::workloads::train
