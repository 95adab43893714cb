#include "kernels/adam_multi_tensor.hpp"

#include <utility>

#include "kernels/host/adam_reference.hpp"
#ifdef FB_HAVE_CUDA
#include "kernels/cuda/adam_multi_tensor.hpp"
#endif

namespace fb::kernels {

std::unique_ptr<MultiTensorAdam> make_multi_tensor_adam(Backend& backend, std::vector<AdamTensor> tensors,
                                                        DType type) {
#ifdef FB_HAVE_CUDA
  if (backend.kind() == BackendKind::cuda)
    return make_cuda_multi_tensor_adam(backend, std::move(tensors), type);
#else
  (void)backend;
#endif
  return make_host_multi_tensor_adam(std::move(tensors), type);
}

}  // namespace fb::kernels
