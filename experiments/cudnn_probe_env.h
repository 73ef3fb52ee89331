#pragma once
// What the cuDNN probes (cudnn_fusion_probe.cu, cudnn_engine_probe.cu) share:
// CUDA errors as tr::Error, an owned device buffer, and a cuDNN handle on its
// own stream with two timing events, all released on every way out.
#ifdef TR_HAVE_CUDA
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstddef>

#include "framework/core/error.h"
#include "framework/ops/conv_plans/cudnn_graph_cuda.h"

namespace tr::cudnn_graph {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(cat(what, ": ", cudaGetErrorString(e)));
}

// n elements of T on the device (at least one, so that p is never null).
template <class T>
struct DeviceBuf {
  T* p = nullptr;
  explicit DeviceBuf(size_t n) { check_cuda(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  ~DeviceBuf() { cudaFree(p); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
};

// A cuDNN handle working on a non-blocking stream, and two events to time it.
struct ProbeEnv {
  cudnnHandle_t h = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  ProbeEnv() {
    try {
      check(cudnnCreate(&h), "cudnnCreate");
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
      check_cuda(cudaEventCreate(&e0), "event");
      check_cuda(cudaEventCreate(&e1), "event");
      check(cudnnSetStream(h, stream), "cudnnSetStream");
    } catch (...) {
      release();
      throw;
    }
  }
  ~ProbeEnv() { release(); }
  ProbeEnv(const ProbeEnv&) = delete;
  ProbeEnv& operator=(const ProbeEnv&) = delete;

 private:
  void release() {
    if (stream) cudaStreamSynchronize(stream);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (h) cudnnDestroy(h);
    if (stream) cudaStreamDestroy(stream);
  }
};

}  // namespace tr::cudnn_graph
#endif  // TR_HAVE_CUDA
