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

std::unique_ptr<TrainKernels> make_train_kernels(Backend& backend) {
#ifdef FB_HAVE_CUDA
  if (backend.kind() == BackendKind::cuda) return make_cuda_train_kernels(backend);
#endif
  (void)backend;
  return make_host_train_kernels();
}

}  // namespace fb::kernels
