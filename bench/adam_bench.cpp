// The one-launch multi-tensor Adam (kernels/adam_multi_tensor.hpp) on a GPU, as a fraction of the device's
// measured copy bandwidth (issue 15, target ≥ 0.80). Both figures are HBM bytes per second: a copy of B bytes
// reads and writes B (2B of traffic); a bf16 Adam step moves 28 bytes per parameter (fp32 master, m, v read
// and written: 24; bf16 gradient read: 2; bf16 weights written: 2), the count issue 15 uses.
//   build/<dir>/bench/adam_bench [--params N] [--iters N]
// Needs the cuda backend and a GPU: elsewhere it says so and exits 77 (skipped).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "kernels/adam_multi_tensor.hpp"

namespace {

constexpr int kSkipped = 77;

// A Llama-3-8B-like layer's parameter tensors (d 4096, 8 KV heads of 128, FFN 14336), repeated until the
// requested count: many tensors of unequal sizes, as the optimizer sees them.
std::vector<std::int64_t> tensor_sizes(std::int64_t params) {
  const std::int64_t layer[] = {4096, 4096 * 4096,  4096 * 1024,  4096 * 1024, 4096 * 4096,
                                4096, 4096 * 14336, 4096 * 14336, 14336 * 4096};
  std::vector<std::int64_t> sizes;
  std::int64_t total = 0;
  while (total < params)
    for (const std::int64_t s : layer) {
      const std::int64_t n = std::min(s, params - total);
      if (n <= 0) break;
      sizes.push_back(n);
      total += n;
    }
  return sizes;
}

double seconds_per_iter(fb::Backend& b, int iters, auto&& work) {
  for (int i = 0; i < 3; ++i) work();  // warm-up
  auto timer = b.make_timer();
  timer->start();
  for (int i = 0; i < iters; ++i) work();
  timer->stop();
  return timer->seconds() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t params = std::int64_t{1} << 29;  // 512 Mi parameters: 8 GiB of state, well past any cache
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if ((a == "--params" || a == "--iters") && i + 1 < argc) {
      const long long v = std::atoll(argv[++i]);
      if (v <= 0) {
        std::fprintf(stderr, "adam_bench: %s must be a positive integer\n", argv[i - 1]);
        return 2;
      }
      if (a == "--params")
        params = v;
      else
        iters = static_cast<int>(v);
    } else {
      std::fprintf(stderr, "adam_bench: unknown argument '%s' (usage: adam_bench [--params N] [--iters N])\n",
                   argv[i]);
      return 2;
    }
  }
  std::unique_ptr<fb::Backend> backend;
  try {
    backend = fb::make_backend(fb::BackendChoice::cuda, 0, 1);
  } catch (const fb::Error& e) {
    std::printf("adam_bench: needs a GPU; skipped (%s)\n", e.what());
    return kSkipped;
  }
  try {
    fb::Backend& b = *backend;
    // Copy bandwidth: device-to-device copy of 1 GiB (bytes copied per second; HBM traffic is twice that).
    const std::size_t copy_bytes = std::size_t{1} << 30;
    auto src = b.allocate(copy_bytes), dst = b.allocate(copy_bytes);
    const double copy_s = seconds_per_iter(b, iters, [&] { b.copy_device_to_device(dst, src, copy_bytes); });
    const double copy_traffic = 2.0 * copy_bytes / copy_s;
    src = {}, dst = {};

    // State: zero moments and master weights 0.5, random bf16 gradients; staged once on the host at the
    // largest tensor's size and uploaded into every tensor (generating 512 Mi values per run would dominate).
    const auto sizes = tensor_sizes(params);
    const std::int64_t largest = *std::max_element(sizes.begin(), sizes.end());
    const std::vector<float> zeros(largest, 0.0f), halves(largest, 0.5f);
    std::vector<std::uint16_t> grads(largest);
    fb::fill_random_host(grads.data(), grads.size(), fb::DType::bf16, 7, 1e-4, 1e-2);
    std::vector<fb::DeviceBuffer> buffers;
    std::vector<fb::kernels::AdamTensor> tensors;
    auto upload = [&](const void* data, std::size_t bytes) {
      buffers.push_back(b.allocate(bytes));
      if (data) b.copy_to_device(buffers.back(), data, bytes);
      return buffers.back().data();
    };
    for (const std::int64_t n : sizes) {
      fb::kernels::AdamTensor t;
      t.master = static_cast<float*>(upload(halves.data(), n * 4));
      t.m = static_cast<float*>(upload(zeros.data(), n * 4));
      t.v = static_cast<float*>(upload(zeros.data(), n * 4));
      t.grad = upload(grads.data(), n * 2);
      t.param = upload(nullptr, n * 2);
      t.count = n;
      tensors.push_back(t);
    }
    auto adam = fb::kernels::make_multi_tensor_adam(b, tensors, fb::DType::bf16);
    fb::kernels::AdamParams p;
    for (const bool norm : {false, true}) {
      const double s = seconds_per_iter(b, iters, [&] {
        ++p.step;
        adam->step(p, norm);
      });
      const double traffic = 28.0 * static_cast<double>(params) / s;
      std::printf(
          "adam bf16 %lld params in %zu tensors%s: %.3f ms/step, %.1f GB/s (28 B/param), copy %.1f GB/s "
          "read+write: fraction %.3f\n",
          static_cast<long long>(params), sizes.size(), norm ? " + grad sum of squares" : "", s * 1e3,
          traffic / 1e9, copy_traffic / 1e9, traffic / copy_traffic);
    }
  } catch (const fb::Error& e) {
    std::fprintf(stderr, "adam_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
