#include "workloads/train/optimizer.hpp"

#include <vector>

namespace fb::workloads::train {
namespace {

// Every tensor of a region, its gradients averaged over `replicas` × micro-batches.
void add_region(StepContext& c, Region& r, double replicas, std::vector<kernels::AdamTensor>& out) {
  const auto scale = static_cast<float>(1.0 / (replicas * static_cast<double>(c.plan.shape.grad_accum)));
  const double tp = static_cast<double>(c.o.parallel.tp);
  for (const auto& t : r.tensors) {
    kernels::AdamTensor a;
    a.master = r.master.as<float>() + t.offset;
    a.m = r.m.as<float>() + t.offset;
    a.v = r.v.as<float>() + t.offset;
    a.grad = c.at(r.grad, t.offset);
    a.param = c.at(r.param, t.offset);
    a.count = t.in * t.out;
    a.grad_scale = scale;
    a.norm_weight = 1.0 / (replicas * (t.tp_replicated ? tp : 1.0));
    out.push_back(a);
  }
}

}  // namespace

Optimizer::Optimizer(StepContext& c, ModelWeights& w) : c_(c) {
  std::vector<kernels::AdamTensor> tensors;
  add_region(c, w.dense, static_cast<double>(c.o.parallel.dp), tensors);
  if (w.experts.count) add_region(c, w.experts, static_cast<double>(c.groups.edp->size()), tensors);
  adam_ = kernels::make_multi_tensor_adam(c.backend, std::move(tensors), c.dt);
}

double Optimizer::step(std::int64_t step_number) {
  c_.mark(kOptimizer);
  kernels::AdamParams p;
  p.lr = c_.o.learning_rate;
  p.step = step_number;
  return adam_->step(p, true);
}

}  // namespace fb::workloads::train
