#include "workloads/train/step_breakdown.hpp"

namespace fb::workloads::train {

const std::vector<std::string>& breakdown_categories() {
  static const std::vector<std::string> names = {"gemm",
                                                 "attention",
                                                 "moe_dispatch_combine",
                                                 "elementwise",
                                                 "exposed_tp_comm",
                                                 "exposed_ep_comm",
                                                 "exposed_dp_comm",
                                                 "optimizer",
                                                 "pipeline_bubble"};
  return names;
}

double compute_seconds(const CatSeconds& s) {
  return s[kGemm] + s[kAttention] + s[kElementwise] + s[kMoeRouting];
}

void StepTimer::start(bool profile) {
  profile_ = profile;
  cat_.fill(0);
  current_ = kElementwise;
  start_ = mark_start_ = Clock::now();
}

void StepTimer::mark(Cat c) {
  if (c == current_) return;
  if (profile_) backend_.synchronize();
  const auto now = Clock::now();
  cat_[current_] += std::chrono::duration<double>(now - mark_start_).count();
  mark_start_ = now;
  current_ = c;
}

double StepTimer::stop() {
  const auto now = Clock::now();
  cat_[current_] += std::chrono::duration<double>(now - mark_start_).count();
  mark_start_ = now;
  return std::chrono::duration<double>(now - start_).count();
}

}  // namespace fb::workloads::train
