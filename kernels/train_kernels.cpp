#include "kernels/train_kernels.hpp"

#include "kernels/host/train_kernels_host.hpp"
#ifdef FB_HAVE_CUDA
#include "kernels/cuda/train_kernels_cuda.hpp"
#endif

namespace fb::kernels {

std::unique_ptr<TrainKernels> make_train_kernels(Backend& backend) {
#ifdef FB_HAVE_CUDA
  if (backend.kind() == BackendKind::cuda) return make_cuda_train_kernels(backend);
#endif
  (void)backend;
  return make_host_train_kernels();
}

}  // namespace fb::kernels
