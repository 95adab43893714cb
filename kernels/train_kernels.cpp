#include "kernels/train_kernels.hpp"

#include <cmath>

#include "kernels/host/train_kernels_host.hpp"
#ifdef FB_HAVE_CUDA
#include "kernels/cuda/train_kernels_cuda.hpp"
#endif

namespace fb::kernels {

std::vector<float> rope_inverse_frequencies(std::int64_t rot_dim, float theta) {
  std::vector<float> out(static_cast<std::size_t>(rot_dim / 2));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(
        std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / static_cast<double>(rot_dim)));
  return out;
}

RopeTable rope_table(std::int64_t rot_dim, std::int64_t seq, float theta) {
  const auto inv_freq = rope_inverse_frequencies(rot_dim, theta);
  const std::size_t half = inv_freq.size();
  RopeTable t;
  t.cos.resize(static_cast<std::size_t>(seq) * half);
  t.sin.resize(t.cos.size());
  for (std::int64_t p = 0; p < seq; ++p)
    for (std::size_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv_freq[i];
      t.cos[static_cast<std::size_t>(p) * half + i] = std::cos(angle);
      t.sin[static_cast<std::size_t>(p) * half + i] = std::sin(angle);
    }
  return t;
}

std::unique_ptr<TrainKernels> make_train_kernels(Backend& backend) {
#ifdef FB_HAVE_CUDA
  if (backend.kind() == BackendKind::cuda) return make_cuda_train_kernels(backend);
#endif
  (void)backend;
  return make_host_train_kernels();
}

}  // namespace fb::kernels
