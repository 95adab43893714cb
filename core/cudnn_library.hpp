#pragma once
// cuDNN 9, loaded at run time (dlopen) for the fused-attention engine: a build with the engine still runs
// where cuDNN is missing, and says why the engine is unusable. No cuDNN headers here (issue 15).
#include <string>

namespace fb {

struct CudnnLibrary {
  void* handle = nullptr;  // dlopen handle of libcudnn.so.9 (process lifetime), or nullptr
  std::string version;     // "9.19.0" when loaded
  std::string error;       // why it is not loaded: not built in, or the loader's message
};

// True when this build contains the cuDNN attention engine (FACTORYBENCH_CUDNN).
bool cudnn_attention_compiled_in();

// Loads libcudnn.so.9 on first use (thread-safe) and keeps it loaded.
const CudnnLibrary& cudnn_library();

}  // namespace fb
