# Decides whether the cuDNN fused-attention engine (kernels/cuda/attention_cudnn.cpp) is built (issue 15).
# FACTORYBENCH_CUDNN=AUTO builds it when the cuda backend is built and cudnn.h and the cuDNN frontend headers
# are found; ON requires them; OFF skips it. Only headers are needed at build time: the frontend loads
# libcudnn.so.9 at run time (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING), so a binary built with it still runs, and
# falls back to the GEMM attention, where cuDNN is missing. The frontend headers come from the
# nvidia-cudnn-frontend wheel (scripts/install-deps.sh puts them in /opt/cudnn-frontend/include).
set(FACTORYBENCH_CUDNN AUTO CACHE STRING "Build the cuDNN attention engine: AUTO, ON or OFF")
set_property(CACHE FACTORYBENCH_CUDNN PROPERTY STRINGS AUTO ON OFF)
set(FB_HAVE_CUDNN OFF)
if(NOT FACTORYBENCH_CUDNN STREQUAL "OFF")
  if(FB_HAVE_CUDA)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS $ENV{CUDNN_HOME}/include ${CUDAToolkit_INCLUDE_DIRS})
    find_path(CUDNN_FRONTEND_INCLUDE_DIR cudnn_frontend.h
              HINTS $ENV{CUDNN_FRONTEND_PREFIX}/include /opt/cudnn-frontend/include ${CUDAToolkit_INCLUDE_DIRS})
    if(CUDNN_INCLUDE_DIR AND CUDNN_FRONTEND_INCLUDE_DIR)
      add_library(fb_cudnn INTERFACE)
      # The frontend's own copy of nlohmann/json is not in the wheel; graph serialisation is not used here.
      target_compile_definitions(fb_cudnn INTERFACE FB_HAVE_CUDNN=1 NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING
                                                    CUDNN_FRONTEND_SKIP_JSON_LIB)
      target_include_directories(fb_cudnn SYSTEM INTERFACE ${CUDNN_FRONTEND_INCLUDE_DIR} ${CUDNN_INCLUDE_DIR})
      target_link_libraries(fb_cudnn INTERFACE ${CMAKE_DL_LIBS})
      set(FB_HAVE_CUDNN ON)
    elseif(FACTORYBENCH_CUDNN STREQUAL "ON")
      message(FATAL_ERROR "FACTORYBENCH_CUDNN=ON but cudnn.h (${CUDNN_INCLUDE_DIR}) or cudnn_frontend.h "
                          "(${CUDNN_FRONTEND_INCLUDE_DIR}) was not found: run scripts/install-deps.sh or set "
                          "CUDNN_HOME / CUDNN_FRONTEND_PREFIX")
    endif()
  elseif(FACTORYBENCH_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "FACTORYBENCH_CUDNN=ON needs the cuda backend (FACTORYBENCH_CUDA)")
  endif()
endif()
message(STATUS "factorybench cuDNN attention engine: ${FB_HAVE_CUDNN}")
