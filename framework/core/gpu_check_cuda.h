#pragma once
// One status checker for every CUDA library (runtime, cuDNN, cuBLAS, NCCL).
// A failure throws tr::Error naming the call, file:line and the current device;
// running out of memory throws a UserError instead (throw_out_of_memory).
// Only included from CUDA-backend files (*_cuda.cu / *_cuda.cpp).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "framework/core/launch_tally.h"
#include "framework/core/setting.h"

namespace tr {

inline const char* status_string(cudaError_t s) { return cudaGetErrorString(s); }
inline const char* status_string(cudnnStatus_t s) { return cudnnGetErrorString(s); }
inline const char* status_string(cublasStatus_t s) { return cublasGetStatusString(s); }
inline const char* status_string(ncclResult_t s) { return ncclGetErrorString(s); }

inline bool status_ok(cudaError_t s) { return s == cudaSuccess; }
inline bool status_ok(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }
inline bool status_ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }
inline bool status_ok(ncclResult_t s) { return s == ncclSuccess; }

// Running out of memory is the user's to change (a smaller batch), not a bug
// in tr: a UserError (exit 2) naming the call, the bytes wanted where known,
// and what the device has free.
inline bool out_of_memory(cudaError_t s) { return s == cudaErrorMemoryAllocation; }
inline bool out_of_memory(cudnnStatus_t s) { return s == CUDNN_STATUS_ALLOC_FAILED; }
inline bool out_of_memory(cublasStatus_t s) { return s == CUBLAS_STATUS_ALLOC_FAILED; }
inline bool out_of_memory(ncclResult_t) { return false; }  // ncclSystemError has other causes too

[[noreturn]] inline void throw_out_of_memory(const char* call, size_t wanted, bool pinned_host, const char* file,
                                             int line) {
  (void)cudaGetLastError();  // not sticky: clear it so later calls do not report it again
  int dev = -1;
  cudaGetDevice(&dev);
  const std::string want = wanted > 0 ? cat(" wanting ", bytes_and_gib(int64_t(wanted))) : "";
  if (pinned_host) {
    const int64_t avail = host_available_bytes();
    throw UserError(cat("out of pinned host memory: ", call, want, " failed with ",
                        avail < 0 ? "an unknown amount" : bytes_and_gib(avail), " of host memory available (", file,
                        ":", line, "); use a smaller ", setting("batch")));
  }
  size_t free_b = 0, total_b = 0;
  const bool known = cudaMemGetInfo(&free_b, &total_b) == cudaSuccess;
  throw UserError(cat("out of device memory on device ", dev, ": ", call, want, " failed with ",
                      known ? cat(bytes_and_gib(int64_t(free_b)), " free of ", bytes_and_gib(int64_t(total_b)))
                            : std::string("an unknown amount free"),
                      " (", file, ":", line, "); use a smaller ", setting("batch")));
}

template <typename Status>
inline void check_status(Status s, const char* call, const char* file, int line) {
  if (status_ok(s)) return;
  if (out_of_memory(s)) throw_out_of_memory(call, 0, false, file, line);
  int dev = -1;
  cudaGetDevice(&dev);
  throw Error(cat(call, " failed: ", status_string(s), " (", file, ":", line, ", device ", dev, ")"));
}

// check_status for an allocation of `wanted` bytes (TR_GPU_ALLOC).
inline void check_alloc(cudaError_t s, const char* call, size_t wanted, bool pinned_host, const char* file, int line) {
  if (out_of_memory(s)) throw_out_of_memory(call, wanted, pinned_host, file, line);
  check_status(s, call, file, line);
}

// For destructors: report, never throw.
template <typename Status>
inline void warn_status(Status s, const char* call, const char* file, int line) noexcept {
  if (!status_ok(s)) warn_in_destructor(file, line, cat(call, " failed: ", status_string(s)));
}

}  // namespace tr

#define TR_GPU_CHECK(call) ::tr::check_status((call), #call, __FILE__, __LINE__)
// An allocation of `bytes`: out of memory names them (device memory, or pinned
// host memory for cudaMallocHost).
#define TR_GPU_ALLOC(call, bytes) ::tr::check_alloc((call), #call, (bytes), false, __FILE__, __LINE__)
#define TR_GPU_HOST_ALLOC(call, bytes) ::tr::check_alloc((call), #call, (bytes), true, __FILE__, __LINE__)
#define TR_GPU_WARN(call) ::tr::warn_status((call), #call, __FILE__, __LINE__)
// After every kernel launch: catches bad launch configurations at once.
// Counts the launch (Note [launch accounting]).
#define TR_LAUNCH_CHECK()                                                        \
  do {                                                                           \
    ++::tr::launch_tally().kernels;                                              \
    ::tr::check_status(cudaGetLastError(), "kernel launch", __FILE__, __LINE__); \
  } while (0)
// Wraps a cuDNN / cuBLAS call that launches kernels, counting it.
#define TR_LIBRARY_LAUNCH(call)           \
  do {                                    \
    ++::tr::launch_tally().library_calls; \
    TR_GPU_CHECK(call);                   \
  } while (0)
