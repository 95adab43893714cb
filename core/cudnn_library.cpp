#include "core/cudnn_library.hpp"

#include <dlfcn.h>

#include <cstddef>

#include <fmt/format.h>

namespace fb {

bool cudnn_attention_compiled_in() {
#ifdef FB_HAVE_CUDNN
  return true;
#else
  return false;
#endif
}

namespace {

CudnnLibrary load() {
  CudnnLibrary lib;
  if (!cudnn_attention_compiled_in()) {
    lib.error = "built without cuDNN (FACTORYBENCH_CUDNN)";
    return lib;
  }
  // cuDNN 9 keeps one ABI across its minor releases: the soname carries the major version only.
  lib.handle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
  if (!lib.handle) {
    const char* why = dlerror();
    lib.error = why ? why : "dlopen(libcudnn.so.9) failed";
    return lib;
  }
  using GetVersion = std::size_t (*)();
  auto get_version = reinterpret_cast<GetVersion>(dlsym(lib.handle, "cudnnGetVersion"));
  if (!get_version) {
    lib.error = "libcudnn.so.9 has no cudnnGetVersion";
    dlclose(lib.handle);
    lib.handle = nullptr;
    return lib;
  }
  const std::size_t v = get_version();  // cuDNN 9: major*10000 + minor*100 + patch (cudnn_version.h)
  lib.version = fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
  return lib;
}

}  // namespace

const CudnnLibrary& cudnn_library() {
  static const CudnnLibrary lib = load();
  return lib;
}

}  // namespace fb
