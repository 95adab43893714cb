#include "workloads/train/expert_gemms.hpp"

namespace fb::workloads::train {
namespace {

struct Grouped {
  std::vector<kernels::GemmProblem> problems;
  std::vector<const void*> a, b;
  std::vector<void*> c;
  void add(const kernels::GemmProblem& p, const void* pa, const void* pb, void* pc) {
    problems.push_back(p);
    a.push_back(pa);
    b.push_back(pb);
    c.push_back(pc);
  }
  void run(StepContext& ctx) {
    if (!problems.empty()) ctx.gemm_engine->run_grouped(problems, a, b, c);
  }
};

}  // namespace

void expert_matmul(StepContext& c, const Region& experts, std::int64_t first, bool dgrad,
                   const std::vector<std::int64_t>& rows, const void* src, void* dst) {
  Grouped g;
  std::int64_t row = 0;
  for (std::size_t e = 0; e < rows.size(); ++e) {
    const std::int64_t t = first + 2 * static_cast<std::int64_t>(e), n = rows[e];
    const auto& w = experts.at(t);
    const std::int64_t from = dgrad ? w.out : w.in, to = dgrad ? w.in : w.out;
    kernels::GemmProblem p;
    p.dtype = c.dt;
    p.m = to, p.n = n, p.k = from, p.transa = !dgrad, p.lda = w.in, p.ldb = from, p.ldc = to;
    if (n > 0) g.add(p, weight(c, experts, t), c.at(src, row * from), c.at(dst, row * to));
    row += n;
  }
  g.run(c);
}

void expert_wgrad(StepContext& c, Region& experts, std::int64_t first, const std::vector<std::int64_t>& rows,
                  const void* x, const void* dy) {
  Grouped g;
  std::int64_t row = 0;
  for (std::size_t e = 0; e < rows.size(); ++e) {
    const std::int64_t t = first + 2 * static_cast<std::int64_t>(e), n = rows[e];
    const auto& w = experts.at(t);
    kernels::GemmProblem p;
    p.dtype = c.dt;
    p.m = w.in, p.n = w.out, p.k = n, p.transb = true, p.lda = w.in, p.ldb = w.out, p.ldc = w.in, p.beta = 1;
    if (n > 0) g.add(p, c.at(x, row * w.in), c.at(dy, row * w.out), weight_grad(c, experts, t));
    row += n;
  }
  g.run(c);
}

}  // namespace fb::workloads::train
