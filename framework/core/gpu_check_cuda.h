#pragma once
// One status checker for every CUDA library (runtime, cuDNN, cuBLAS, NCCL).
// A failure throws tr::Error naming the call, file:line and the current device.
// Only included from CUDA-backend files (*_cuda.cu / *_cuda.cpp).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "framework/core/error.h"
#include "framework/core/launch_tally.h"

namespace tr {

inline const char* status_string(cudaError_t s) { return cudaGetErrorString(s); }
inline const char* status_string(cudnnStatus_t s) { return cudnnGetErrorString(s); }
inline const char* status_string(cublasStatus_t s) { return cublasGetStatusString(s); }
inline const char* status_string(ncclResult_t s) { return ncclGetErrorString(s); }

inline bool status_ok(cudaError_t s) { return s == cudaSuccess; }
inline bool status_ok(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }
inline bool status_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
inline bool status_ok(ncclResult_t s) { return s == ncclSuccess; }

template <typename Status>
inline void check_status(Status s, const char* call, const char* file, int line) {
  if (status_ok(s)) return;
  int dev = -1;
  cudaGetDevice(&dev);
  throw Error(cat(call, " failed: ", status_string(s), " (", file, ":", line, ", device ", dev, ")"));
}

// For destructors: report, never throw.
template <typename Status>
inline void warn_status(Status s, const char* call, const char* file, int line) noexcept {
  if (!status_ok(s)) warn_in_destructor(file, line, cat(call, " failed: ", status_string(s)));
}

}  // namespace tr

#define TR_GPU_CHECK(call) ::tr::check_status((call), #call, __FILE__, __LINE__)
#define TR_GPU_WARN(call) ::tr::warn_status((call), #call, __FILE__, __LINE__)
// After every kernel launch: catches bad launch configurations at once.
// Counts the launch (Note [launch accounting]).
#define TR_LAUNCH_CHECK()                                                       \
  do {                                                                          \
    ++::tr::launch_tally().kernels;                                             \
    ::tr::check_status(cudaGetLastError(), "kernel launch", __FILE__, __LINE__); \
  } while (0)
// Wraps a cuDNN / cuBLAS call that launches kernels, counting it.
#define TR_LIBRARY_LAUNCH(call)            \
  do {                                     \
    ++::tr::launch_tally().library_calls;  \
    TR_GPU_CHECK(call);                    \
  } while (0)
