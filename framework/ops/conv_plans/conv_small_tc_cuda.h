#pragma once
// Small-C 3x3 / stride 1 / pad 1 convolutions in f16 on the tensor cores
// (mma.sync m16n8k16, f16 products, f32 sums): the forward and the filter
// gradient of the first layer (C <= 4 input channels) as GEMMs over the
// im2col index k = (r*3 + s)*C + c, 9*C of them, zero-padded to the mma's
// width. Note [small-C on tensor cores] in conv_small_tc_cuda.cu.
//
// The CUDA-core kernels of conv_cuda.cu keep f32 and the channel counts these
// do not take; uses_small_c_tc says which.
#include <cstddef>
#include <cstdint>

#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"

namespace tr {

struct ExecEnv;

// f16, C <= 4, and K a multiple of 16 up to 64 (the first layers of the zoo).
bool uses_small_c_tc(const ConvKey& key);

// y[N,H,W,K] = conv(x[N,H,W,C], w[K,3,3,C]).
void conv_small_fwd_tc(const ExecEnv* env, int sms, const void* x, const void* w, void* y, const ConvKey& key);

// dw[K,3,3,C] = sum over pixels of x's 3x3xC window times dy[N,H,W,K], through
// per-block partials in `ws` (small_c_tc_filter_workspace_bytes) added in block
// order.
void conv_small_bwd_filter_tc(const ExecEnv* env, int sms, const void* x, const void* dy, void* dw, void* ws,
                              const ConvKey& key);
size_t small_c_tc_filter_workspace_bytes(const ConvKey& key, int sms);

}  // namespace tr
