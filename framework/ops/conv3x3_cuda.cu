// 3x3 convolutions (stride 1, pad 1, NHWC, weights KRSC). Semantics:
// framework/ops/conv3x3.h. Outputs are overwritten (beta = 0).
//
// cuDNN (legacy convolution API, fp32 compute) does every shape except the
// few-input-channel forward and filter gradient (Note [small-C convolutions]),
// which run the direct kernels below. The algorithm, descriptors and kernel
// choice come from GpuHandles::conv_plans, prepared before any capture (Note
// [conv plans before capture]); a launch only looks them up, so it is
// capture-safe and uses the same algorithm eagerly and in graphs.
//   workspace: the plan's workspace_bytes (ConvPlanCache::max_workspace_bytes()).
//   Small-C filter gradient: channel_grid(N*H*W, K, 1, SMs, 8, 16).grid.x * K*9*C * 4 bytes.
#include "framework/ops/conv3x3.h"
#include "framework/ops/conv_plan_cache_cuda.h"
#include "framework/ops/cuda_kernel_util_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

// ---------------------------------------------------------------- small-C kernels

constexpr int kSmallThreads = 256;
constexpr int kSmallFilterBlocksPerSm = 8;
constexpr int64_t kSmallFilterMinRows = 16;
constexpr int kPixUnroll = 8;

// y[p, k0..k0+KV) = sum over taps (r,s) and c of x[nbr(p,r,s), c] * w[k, r, s, c]
// One thread per (pixel, KV output channels); weights staged in shared memory
// as sw[(tap*C + c) * K + k]. Taps accumulate in (r, s, c) order.
template <typename T, int C, int KV>
__global__ void conv_small_fwd_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y, int N,
                                      int H, int W, int K) {
  extern __shared__ float sw[];
  for (int i = threadIdx.x; i < K * 9 * C; i += blockDim.x) {
    const int k = i / (9 * C), j = i % (9 * C);
    sw[j * K + k] = to_f(w[i]);
  }
  __syncthreads();
  const int KG = K / KV;
  const int64_t total = int64_t(N) * H * W * KG;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int kg = int(idx % KG);
    const int64_t p = idx / KG;
    const int wq = int(p % W);
    const int64_t t = p / W;
    const int h = int(t % H);
    const int64_t n = t / H;
    float acc[KV];
#pragma unroll
    for (int j = 0; j < KV; ++j) acc[j] = 0.f;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int ih = h + r - 1;
      if (ih < 0 || ih >= H) continue;
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const int iw = wq + s - 1;
        if (iw < 0 || iw >= W) continue;
        const T* xp = x + ((n * H + ih) * W + iw) * C;
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const float xv = to_f(xp[c]);
          const float* wr = sw + ((r * 3 + s) * C + c) * K + kg * KV;
#pragma unroll
          for (int j = 0; j < KV; ++j) acc[j] = fmaf(xv, wr[j], acc[j]);
        }
      }
    }
    store_vec<T, KV>(y + p * K + int64_t(kg) * KV, acc);
  }
}

// dw[k, r, s, c] = sum over pixels p of x[nbr(p,r,s), c] * dy[p, k]
// Block (bx, by): tx -> output channel k, ty -> pixel lane; each thread keeps
// the 9*C sums of its k over a fixed pixel set (kPixUnroll dy loads in flight),
// then block_sum_store / finalize_sums add them in a fixed order (Note
// [deterministic kernels]); output index k*9C + tap*C + c is dw's KRSC layout.
template <typename T, int C>
__global__ void conv_small_bwd_filter_kernel(const T* __restrict__ x, const T* __restrict__ dy, int N, int H, int W,
                                             int K, SumOut<T, 1> out) {
  const int k = int(blockIdx.y) * blockDim.x + threadIdx.x;
  const bool active = k < K;
  float acc[1][9 * C];
#pragma unroll
  for (int i = 0; i < 9 * C; ++i) acc[0][i] = 0.f;
  if (active) {
    const int64_t P = int64_t(N) * H * W;
    const int64_t stride = int64_t(gridDim.x) * blockDim.y;
    for (int64_t p0 = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; p0 < P; p0 += kPixUnroll * stride) {
      float d[kPixUnroll];
#pragma unroll
      for (int u = 0; u < kPixUnroll; ++u) {
        const int64_t p = p0 + u * stride;
        d[u] = p < P ? to_f(dy[p * K + k]) : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kPixUnroll; ++u) {
        const int64_t p = p0 + u * stride;
        if (p >= P) break;
        const int wq = int(p % W);
        const int64_t t = p / W;
        const int h = int(t % H);
        const int64_t n = t / H;
#pragma unroll
        for (int r = 0; r < 3; ++r) {
          const int ih = h + r - 1;
          if (ih < 0 || ih >= H) continue;
#pragma unroll
          for (int s = 0; s < 3; ++s) {
            const int iw = wq + s - 1;
            if (iw < 0 || iw >= W) continue;
            const T* xp = x + ((n * H + ih) * W + iw) * C;
#pragma unroll
            for (int c = 0; c < C; ++c) acc[0][(r * 3 + s) * C + c] = fmaf(to_f(xp[c]), d[u], acc[0][(r * 3 + s) * C + c]);
          }
        }
      }
    }
  }
  block_sum_store<T, 1, 9 * C>(acc, int64_t(k) * 9 * C, active, int64_t(K) * 9 * C, out);
}

ChannelGrid small_filter_grid(const ConvKey& key, int sms) {
  return channel_grid(key.n * key.h * key.w, key.k, 1, sms, kSmallFilterBlocksPerSm, kSmallFilterMinRows);
}

template <typename T, int C>
void launch_small_c(const ConvKey& key, const OpCall& c, const GpuHandles& gh, void* ws, cudaStream_t s) {
  const int sms = sm_count(gh.device);
  const int N = int(key.n), H = int(key.h), W = int(key.w), K = int(key.k);
  if (key.dir == ConvDir::Fwd) {
    const size_t smem = size_t(K) * 9 * C * sizeof(float);
    TR_CHECK(smem <= 48 * 1024, "Conv3x3Fwd: small-C weights need ", smem, " B of shared memory");
    auto run = [&](auto kv) {
      constexpr int KV = decltype(kv)::value;
      int64_t blocks = ceil_div(key.n * key.h * key.w * (key.k / KV), kSmallThreads);
      if (blocks > int64_t(sms) * 8) blocks = int64_t(sms) * 8;
      conv_small_fwd_kernel<T, C, KV><<<unsigned(blocks < 1 ? 1 : blocks), kSmallThreads, smem, s>>>(
          c.in[0].as<T>(), c.in[1].as<T>(), c.out[0].as<T>(), N, H, W, K);
    };
    if (key.k % kVec16<T> == 0 && aligned_to(c.out[0].data, 16)) run(std::integral_constant<int, kVec16<T>>{});
    else run(std::integral_constant<int, 1>{});
    TR_LAUNCH_CHECK();
    return;
  }
  const ChannelGrid g = small_filter_grid(key, sms);
  const int64_t outs = key.k * 9 * C;
  SumOut<T, 1> out;
  out.partial = static_cast<float*>(ws);
  out.t[0] = c.out[0].as<T>();
  TR_CHECK(g.grid.x <= 1 || ws != nullptr, "Conv3x3BwdFilter: small-C kernel without workspace");
  conv_small_bwd_filter_kernel<T, C><<<g.grid, g.block, sum_smem_bytes<1, 9 * C>(), s>>>(
      c.in[0].as<T>(), c.in[1].as<T>(), N, H, W, K, out);
  TR_LAUNCH_CHECK();
  launch_finalize<T, 1>(g, outs, out, s);
}

void run_small_c(const ConvKey& key, const OpCall& c, const GpuHandles& gh, void* ws, cudaStream_t s) {
  TR_CHECK(key.n * key.h * key.w < (int64_t(1) << 31) && key.k <= 4096, "conv3x3: small-C kernel shape too large: ",
           key.str());
  dispatch_float(key.dtype, "conv3x3", [&](auto tag) {
    using T = decltype(tag);
    switch (key.c) {
      case 1: launch_small_c<T, 1>(key, c, gh, ws, s); break;
      case 2: launch_small_c<T, 2>(key, c, gh, ws, s); break;
      case 3: launch_small_c<T, 3>(key, c, gh, ws, s); break;
      case 4: launch_small_c<T, 4>(key, c, gh, ws, s); break;
      default: TR_CHECK(false, "conv3x3: no small-C kernel for ", key.str());
    }
  });
}

// ---------------------------------------------------------------- cuDNN

struct ConvLaunch {
  cudnnHandle_t h;
  const ConvPlan* plan;
  void* ws;
  bool done;  // the small-C kernel already ran
};

// Checks the call against the plan's key and binds the handle to the op's stream.
ConvLaunch begin(const OpCall& c, OpKind kind, const char* op) {
  check_arity(c, 2, 1, op);
  const GpuHandles& gh = handles_of(c, op);
  TR_CHECK(gh.cudnn != nullptr, op, ": no cuDNN handle");
  TR_CHECK(gh.conv_plans != nullptr, op, ": no ConvPlanCache in GpuHandles");
  const TensorRef& a = c.in[0];
  const TensorRef& b = c.in[1];
  const TensorRef& out = c.out[0];
  TR_CHECK(a.dtype == DType::F32 || a.dtype == DType::F16, op, ": dtype ", dtype_name(a.dtype),
           " is not supported on CUDA (f32 or f16 only)");
  check_dtype(b, a.dtype, op, "second input");
  check_dtype(out, a.dtype, op, "output");
  const ConvKey key = conv_key(kind, a.shape, b.shape, a.dtype);
  const Shape want = kind == OpKind::Conv3x3Fwd       ? Shape{key.n, key.h, key.w, key.k}
                     : kind == OpKind::Conv3x3BwdData ? Shape{key.n, key.h, key.w, key.c}
                                                      : Shape{key.k, 3, 3, key.c};
  TR_CHECK(out.shape.numel() == want.numel(), op, ": output is ", out.shape.str(), ", expected ", want.str());
  ConvLaunch l;
  l.h = static_cast<cudnnHandle_t>(gh.cudnn);
  l.plan = &gh.conv_plans->lookup(key);
  l.ws = workspace(gh, l.plan->workspace_bytes, op);
  l.done = false;
  if (l.plan->impl == ConvImpl::SmallC) {
    run_small_c(key, c, gh, l.ws, stream_of(c));
    l.done = true;
    return l;
  }
  TR_GPU_CHECK(cudnnSetStream(l.h, stream_of(c)));
  return l;
}

}  // namespace

// x[N,H,W,C], w[K,3,3,C] -> y[N,H,W,K]
void conv3x3_fwd_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::Conv3x3Fwd, "Conv3x3Fwd");
  if (l.done) return;
  const float alpha = 1.f, beta = 0.f;
  TR_GPU_CHECK(cudnnConvolutionForward(l.h, &alpha, l.plan->x.get(), c.in[0].data, l.plan->w.get(), c.in[1].data,
                                       l.plan->conv.get(), cudnnConvolutionFwdAlgo_t(l.plan->algo), l.ws,
                                       l.plan->workspace_bytes, &beta, l.plan->y.get(), c.out[0].data));
}

// dy[N,H,W,K], w[K,3,3,C] -> dx[N,H,W,C]
void conv3x3_bwd_data_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::Conv3x3BwdData, "Conv3x3BwdData");
  if (l.done) return;
  const float alpha = 1.f, beta = 0.f;
  TR_GPU_CHECK(cudnnConvolutionBackwardData(l.h, &alpha, l.plan->w.get(), c.in[1].data, l.plan->y.get(),
                                            c.in[0].data, l.plan->conv.get(),
                                            cudnnConvolutionBwdDataAlgo_t(l.plan->algo), l.ws,
                                            l.plan->workspace_bytes, &beta, l.plan->x.get(), c.out[0].data));
}

// x[N,H,W,C], dy[N,H,W,K] -> dw[K,3,3,C]
void conv3x3_bwd_filter_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::Conv3x3BwdFilter, "Conv3x3BwdFilter");
  if (l.done) return;
  const float alpha = 1.f, beta = 0.f;
  TR_GPU_CHECK(cudnnConvolutionBackwardFilter(l.h, &alpha, l.plan->x.get(), c.in[0].data, l.plan->y.get(),
                                              c.in[1].data, l.plan->conv.get(),
                                              cudnnConvolutionBwdFilterAlgo_t(l.plan->algo), l.ws,
                                              l.plan->workspace_bytes, &beta, l.plan->w.get(), c.out[0].data));
}

size_t small_c_conv_workspace_bytes(const ConvKey& key, int sms) {
  if (key.dir != ConvDir::BwdFilter) return 0;
  return sum_partial_bytes<1>(small_filter_grid(key, sms), key.k * 9 * key.c);
}

}  // namespace tr
