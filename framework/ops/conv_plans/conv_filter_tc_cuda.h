#pragma once
// The filter gradient of 3x3 / stride 1 / pad 1 convolutions with many
// channels (C a multiple of 32, K a multiple of 64), f16 on the tensor cores:
// dw[K,3,3,C] = sum over pixels p of dy[p,K] (x) x[p + (r-1, s-1), C], a GEMM
// of M = K channels, N = 9*C im2col columns and a reduction over N*H*W pixels.
// Note [3x3 filter gradient on tensor cores] in conv_filter_tc_cuda.cu.
#include <cstddef>

#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"

namespace tr {

struct ExecEnv;

// What the kernel can run: an f16 filter gradient, 3x3 / stride 1 / pad 1,
// C % 32 == 0, K % 64 == 0, W <= 64.
bool uses_filter_tc(const ConvKey& key);
// Where the plans choose it over cuDNN: the shapes it was measured faster at,
// C = 32 -> K = 64 (the cnn's second convolution: 33.8 us against cuDNN's 57.7
// at batch 256, 108 against 177 at 1024; H200). At every wider shape of the
// cnn and the zoo cuDNN's sm90 kernels were faster (the H200 lab log's
// "The second convolution's filter gradient"; docs/results.md, "Earlier measurements").
bool filter_tc_beats_cudnn(const ConvKey& key);

// Lets the kernel take more than 48 KB of shared memory on the current device
// (up to what its largest geometry needs). Once per device before the first
// launch: ConvPlanCache::prepare calls it, with the rank's device current, so
// no launch (eager or captured) pays the driver call.
void prepare_filter_tc_device();

// dw[K,3,3,C] from x[N,H,W,C] and dy[N,H,W,K], through per-block partials in
// `ws` (filter_tc_workspace_bytes) added in block order: deterministic.
// prepare_filter_tc_device() must have run on this device.
void conv_bwd_filter_tc(const ExecEnv* env, int sms, const void* x, const void* dy, void* dw, void* ws,
                        const ConvKey& key);
size_t filter_tc_workspace_bytes(const ConvKey& key, int sms);

}  // namespace tr
