#pragma once
// cuDNN's legacy 3x3 / stride 1 / pad 1 convolution of NHWC f16 tensors, the
// forward or the data gradient, with its heuristic's first deterministic
// algorithm (what tr's ConvPlanCache runs by default); descriptors and
// workspace are made once, so run() can be captured.
//   x[N,H,H,C], w[K,3,3,C], y[N,H,H,K]; forward: y = conv(x), data gradient: dx = conv^T(dy).
#include <cuda_fp16.h>
#include <cudnn.h>

#include <algorithm>

#include "experiments/cudnn_probe_env.h"

namespace tr::probe {

class CudnnConv3x3 {
 public:
  enum class Dir { Forward, DataGradient };
  CudnnConv3x3(cudnnHandle_t h, Dir dir, int N, int H, int C, int K) : dir_(dir) {
    try {
      make(h, N, H, C, K);
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudnnConv3x3() { release(); }
  CudnnConv3x3(const CudnnConv3x3&) = delete;
  CudnnConv3x3& operator=(const CudnnConv3x3&) = delete;

  // Forward: in = x, out = y. Data gradient: in = dy, out = dx.
  void run(cudnnHandle_t h, const __half* in, const __half* w, __half* out) const {
    const float one = 1.f, zero = 0.f;
    if (dir_ == Dir::Forward)
      cudnn_graph::check(cudnnConvolutionForward(h, &one, xd_, in, wd_, w, cd_, fwd_, ws_, ws_bytes_, &zero, yd_, out),
                         "legacy convolution");
    else
      cudnn_graph::check(
          cudnnConvolutionBackwardData(h, &one, wd_, w, yd_, in, cd_, bwd_, ws_, ws_bytes_, &zero, xd_, out),
          "legacy data gradient");
  }

 private:
  void make(cudnnHandle_t h, int N, int H, int C, int K) {
    using cudnn_graph::check;
    check(cudnnCreateTensorDescriptor(&xd_), "x");
    check(cudnnCreateTensorDescriptor(&yd_), "y");
    check(cudnnCreateFilterDescriptor(&wd_), "w");
    check(cudnnCreateConvolutionDescriptor(&cd_), "conv");
    check(cudnnSetTensor4dDescriptor(xd_, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, N, C, H, H), "x");
    check(cudnnSetTensor4dDescriptor(yd_, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, N, K, H, H), "y");
    check(cudnnSetFilter4dDescriptor(wd_, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, K, C, 3, 3), "w");
    check(cudnnSetConvolution2dDescriptor(cd_, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "conv");
    check(cudnnSetConvolutionMathType(cd_, CUDNN_TENSOR_OP_MATH), "math");
    int got = 0;
    if (dir_ == Dir::Forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check(cudnnGetConvolutionForwardAlgorithm_v7(h, xd_, wd_, cd_, yd_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
            "forward algorithms");
      fwd_ = first_deterministic(perf, got).algo;
      check(cudnnGetConvolutionForwardWorkspaceSize(h, xd_, wd_, cd_, yd_, fwd_, &ws_bytes_), "workspace");
    } else {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, wd_, yd_, cd_, xd_, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                        &got, perf),
            "data gradient algorithms");
      bwd_ = first_deterministic(perf, got).algo;
      check(cudnnGetConvolutionBackwardDataWorkspaceSize(h, wd_, yd_, cd_, xd_, bwd_, &ws_bytes_), "workspace");
    }
    cudnn_graph::check_cuda(cudaMalloc(&ws_, std::max<size_t>(ws_bytes_, 16)), "workspace");
  }
  void release() {
    cudaFree(ws_);
    if (xd_) cudnnDestroyTensorDescriptor(xd_);
    if (yd_) cudnnDestroyTensorDescriptor(yd_);
    if (wd_) cudnnDestroyFilterDescriptor(wd_);
    if (cd_) cudnnDestroyConvolutionDescriptor(cd_);
  }
  template <class Perf>
  static const Perf& first_deterministic(const Perf* perf, int got) {
    const Perf* pick = std::find_if(perf, perf + got, [](const Perf& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC;
    });
    if (pick == perf + got) throw Error("no deterministic legacy algorithm");
    return *pick;
  }
  Dir dir_;
  cudnnTensorDescriptor_t xd_ = nullptr, yd_ = nullptr;
  cudnnFilterDescriptor_t wd_ = nullptr;
  cudnnConvolutionDescriptor_t cd_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_{};
  cudnnConvolutionBwdDataAlgo_t bwd_{};
  size_t ws_bytes_ = 0;
  void* ws_ = nullptr;
};

}  // namespace tr::probe
