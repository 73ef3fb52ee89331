// Max pooling CUDA kernels. Semantics: framework/ops/compute/pool.h; visiting order:
// Note [pool window order] in pool_window.h.
// Every thread owns a vector of VEC channels at one position, so loads and
// stores are 16-byte and coalesced along C. The maximum is taken in window scan
// order with a strict '>' so forward and backward agree on "the first position
// that equals the output". No workspace, no atomics.
//   2x2 stride 2 pad 0 (the cnn, VGG): the fast path, one thread per window,
//     which writes all four gradients of its window (windows do not overlap);
//     with the winners recorded (what the layer runs) the backward reads dy and
//     one byte per output instead of x and y: at cnn batch 4096 on the H200
//     its three pools' backward took 0.444 ms a step from x and y.
//   any other window: forward one thread per output; backward a gather, one
//     thread per input position, over the outputs whose windows hold it, in the
//     CPU reference's order (pool_cpu.cpp), so both agree bit for bit; it gives
//     the fast path's bits for 2x2/s2 as well (the first term is taken as is).
//     With the winners recorded by the forward (argmax, what the max-pool layer
//     runs for these windows), the gather compares one byte per covering output
//     instead of rescanning its window: 83 us instead of 340 us for ResNet-50's
//     stem at batch 32 on the H200. That stem's window (3x3/s2/p1, with
//     winners) has unrolled kernels of its own: maxpool_3x3s2_cuda.h.
#include <algorithm>

#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/kernels/bn_train_cuda.h"
#include "framework/ops/kernels/channel_stats_cuda.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/maxpool_3x3s2_cuda.h"
#include "framework/ops/kernels/pool_vec_cuda.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

// ---- 2x2 stride 2 pad 0: the fast path ----

// Output row r = (n * Ho + oh) * Wo + ow of x[N,H,W,C]'s 2x2 windows, channels
// c0..c0+VEC: the window's maximum (scan order, strict '>'), stored to y with
// its winner (0..3 = kh * 2 + kw) when argmax is not null, and handed back in
// m (exact: the maximum of values of T), for the BatchNorm statistics of the
// fused MaxPoolFwd (channel_stats_cuda.h).
template <typename T>
struct Pool2x2Source {
  const T* x;
  T* y;
  uint8_t* argmax;
  int64_t H, W, C;
  template <int VEC>
  __device__ __forceinline__ void operator()(int64_t r, int64_t c0, float (&m)[VEC]) const {
    const int64_t Ho = H / 2, Wo = W / 2;
    const int64_t ow = r % Wo, t = r / Wo;
    const int64_t oh = t % Ho, n = t / Ho;
    const T* base = x + ((n * H + 2 * oh) * W + 2 * ow) * C + c0;
    float v[VEC];
    Vec<uint8_t, VEC> at;
    load_vec<T, VEC>(base, m);
#pragma unroll
    for (int j = 0; j < VEC; ++j) at.v[j] = 0;
    const int64_t offs[3] = {C, W * C, W * C + C};
#pragma unroll
    for (int k = 0; k < 3; ++k) {
      load_vec<T, VEC>(base + offs[k], v);
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        if (v[j] > m[j]) {
          m[j] = v[j];
          at.v[j] = uint8_t(k + 1);
        }
    }
    store_vec<T, VEC>(y + r * C + c0, m);
    if (argmax != nullptr) *reinterpret_cast<Vec<uint8_t, VEC>*>(argmax + r * C + c0) = at;
  }
};

// x[N,H,W,C] -> y[N,H/2,W/2,C] (and the winners); item = (output row, channel vector)
template <typename T, int VEC>
__global__ void maxpool_fwd_kernel(Pool2x2Source<T> src, int64_t total) {
  grid_dependency_begin();
  const int64_t G = src.C / VEC;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    float m[VEC];
    src(i / G, (i % G) * VEC, m);
  }
}

// dy -> dx over 2x2 / stride 2 windows; item = (n, window row, window col,
// channel vector) over the ceil(H/2) x ceil(W/2) windows, so odd trailing
// rows/cols are zeroed here too. Each window's gradient goes to its winner and
// the other three get 0. The winner: the recorded one when argmax is given
// (one byte per output; x and y are not read, about half the bytes), else the
// first of the window's inputs, in the forward's order, equal to y.
template <typename T, int VEC>
__global__ void maxpool_bwd_2x2_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
                                       const uint8_t* __restrict__ argmax, T* __restrict__ dx, int64_t N, int64_t H,
                                       int64_t W, int64_t C) {
  grid_dependency_begin();
  const int64_t Ho = H / 2, Wo = W / 2, Hw = (H + 1) / 2, Ww = (W + 1) / 2, G = C / VEC;
  const int64_t total = N * Hw * Ww * G;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G;
    int64_t t = i / G;
    const int64_t ow = t % Ww;
    t /= Ww;
    const int64_t oh = t % Hw;
    const int64_t n = t / Hw;
    const int64_t c0 = g * VEC;
    const int64_t h0 = 2 * oh, w0 = 2 * ow;
    float zero[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) zero[j] = 0.f;
    if (oh >= Ho || ow >= Wo) {  // partial window at an odd edge: no gradient
      for (int64_t h = h0; h < H && h < h0 + 2; ++h)
        for (int64_t w = w0; w < W && w < w0 + 2; ++w) store_vec<T, VEC>(dx + ((n * H + h) * W + w) * C + c0, zero);
      continue;
    }
    const int64_t o = ((n * Ho + oh) * Wo + ow) * C + c0;
    float d[VEC];
    load_vec<T, VEC>(dy + o, d);
    int win[VEC];  // the winner's k = kh * 2 + kw; 4: none (y matches no input)
    if (argmax != nullptr) {
      const Vec<uint8_t, VEC> at = *reinterpret_cast<const Vec<uint8_t, VEC>*>(argmax + o);
#pragma unroll
      for (int j = 0; j < VEC; ++j) win[j] = at.v[j];
    } else {
      float yy[VEC];
      load_vec<T, VEC>(y + o, yy);
#pragma unroll
      for (int j = 0; j < VEC; ++j) win[j] = 4;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        float xx[VEC];
        load_vec<T, VEC>(x + ((n * H + h0 + (k >> 1)) * W + w0 + (k & 1)) * C + c0, xx);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (win[j] == 4 && xx[j] == yy[j]) win[j] = k;
      }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float out[VEC];
#pragma unroll
      for (int j = 0; j < VEC; ++j) out[j] = win[j] == k ? d[j] : 0.f;
      store_vec<T, VEC>(dx + ((n * H + h0 + (k >> 1)) * W + w0 + (k & 1)) * C + c0, out);
    }
  }
}

// ---- any window (kernel, stride, pad) ----

// x[N,H,W,C] -> y[N,Ho,Wo,C] and, when argmax is not null, each output's
// winner (kh * k + kw from the window's corner); item = (n, oh, ow, channel vector)
template <typename T, int VEC>
__global__ void maxpool_fwd_general_kernel(const T* __restrict__ x, T* __restrict__ y, uint8_t* __restrict__ argmax,
                                           int64_t N, int64_t H, int64_t W, int64_t C, PoolWindow pw) {
  grid_dependency_begin();
  const int64_t Ho = pw.out_len(H), Wo = pw.out_len(W), G = C / VEC;
  const int64_t total = N * Ho * Wo * G;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G;
    int64_t t = i / G;
    const int64_t ow = t % Wo;
    t /= Wo;
    const int64_t oh = t % Ho;
    const int64_t n = t / Ho;
    const int64_t h0 = pw.in_begin(oh), h1 = pw.in_end(oh, H);
    const int64_t w0 = pw.in_begin(ow), w1 = pw.in_end(ow, W);
    const T* xn = x + n * H * W * C + g * VEC;
    float m[VEC], v[VEC];
    Vec<uint8_t, VEC> at;
    load_vec<T, VEC>(xn + (h0 * W + w0) * C, m);  // the window's first input position starts the max
#pragma unroll
    for (int j = 0; j < VEC; ++j) at.v[j] = uint8_t((h0 - pw.start(oh)) * pw.k + (w0 - pw.start(ow)));
    for (int64_t h = h0; h < h1; ++h)
      for (int64_t w = (h == h0 ? w0 + 1 : w0); w < w1; ++w) {
        load_vec<T, VEC>(xn + (h * W + w) * C, v);
        const uint8_t pos = uint8_t((h - pw.start(oh)) * pw.k + (w - pw.start(ow)));
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (v[j] > m[j]) {
            m[j] = v[j];
            at.v[j] = pos;
          }
      }
    store_vec<T, VEC>(y + i * VEC, m);
    if (argmax != nullptr) *reinterpret_cast<Vec<uint8_t, VEC>*>(argmax + i * VEC) = at;
  }
}

// dy[N,Ho,Wo,C], argmax -> dx[N,H,W,C]: the gather of maxpool_bwd_general_kernel
// with the recorded winners, one thread per (n, ih, iw, channel vector); 32-bit
// index arithmetic within an image (rows * W * C < 2^31, checked by the launcher),
// images along blockIdx.y.
template <typename T, int VEC>
__global__ void maxpool_bwd_argmax_kernel(const T* __restrict__ dy, const uint8_t* __restrict__ argmax,
                                          T* __restrict__ dx, int64_t N, int H, int W, int C, PoolWindow pw) {
  grid_dependency_begin();
  const int Ho = int(pw.out_len(H)), Wo = int(pw.out_len(W)), G = C / VEC;
  const int per_image = H * W * G;
  const int k = int(pw.k), stride = int(pw.stride), pad = int(pw.pad);
  for (int64_t n = blockIdx.y; n < N; n += gridDim.y) {
    const T* dyn = dy + n * Ho * Wo * C;
    const uint8_t* an = argmax + n * Ho * Wo * C;
    T* dxn = dx + n * H * W * C;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < per_image; i += gridDim.x * blockDim.x) {
      const int g = i % G, p = i / G;
      const int ih = p / W, iw = p % W;
      // Outputs whose windows hold (ih, iw): o*stride - pad <= i <= o*stride - pad + k - 1.
      const int fh = ih + pad - k + 1, fw = iw + pad - k + 1;
      const int oh0 = fh <= 0 ? 0 : (fh + stride - 1) / stride, oh1 = min((ih + pad) / stride, Ho - 1);
      const int ow0 = fw <= 0 ? 0 : (fw + stride - 1) / stride, ow1 = min((iw + pad) / stride, Wo - 1);
      float acc[VEC];
      bool hit[VEC];
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        acc[j] = 0.f;
        hit[j] = false;
      }
      for (int oh = oh0; oh <= oh1; ++oh)
        for (int ow = ow0; ow <= ow1; ++ow) {
          const int o = (oh * Wo + ow) * C + g * VEC;
          const uint8_t pos = uint8_t((ih - (oh * stride - pad)) * k + (iw - (ow * stride - pad)));
          const Vec<uint8_t, VEC> at = *reinterpret_cast<const Vec<uint8_t, VEC>*>(an + o);
          bool any = false;
#pragma unroll
          for (int j = 0; j < VEC; ++j) any = any || at.v[j] == pos;
          if (!any) continue;
          float d[VEC];
          load_vec<T, VEC>(dyn + o, d);
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            if (at.v[j] == pos) {
              acc[j] = hit[j] ? acc[j] + d[j] : d[j];
              hit[j] = true;
            }
        }
      store_vec<T, VEC>(dxn + int64_t(p) * C + g * VEC, acc);
    }
  }
}

// Input positions of a thread block's neighbourhood: the backward walks them in
// tiles of kTileH x kTileW positions (all channel vectors of a position, then the
// next position of the tile), so the windows that neighbouring threads rescan
// overlap inside one block and mostly hit L1.
constexpr int64_t kTileH = 4, kTileW = 8;

// dy[N,Ho,Wo,C], x, y -> dx[N,H,W,C], the gather of pool_cpu.cpp's
// maxpool_bwd_impl; item = (n, tile row, tile col, position in tile, channel vector).
// For each covering output (oh, then ow): lanes whose x equals y are candidates;
// a candidate loses when an earlier position of that window (scan order) also
// equals y. Winners add dy; the first term is taken as is.
template <typename T, int VEC>
__global__ void maxpool_bwd_general_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y,
                                           T* __restrict__ dx, int64_t N, int64_t H, int64_t W, int64_t C,
                                           PoolWindow pw) {
  grid_dependency_begin();
  const int64_t Ho = pw.out_len(H), Wo = pw.out_len(W), G = C / VEC;
  const int64_t tiles_h = (H + kTileH - 1) / kTileH, tiles_w = (W + kTileW - 1) / kTileW;
  const int64_t total = N * tiles_h * tiles_w * kTileH * kTileW * G;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i % G;
    int64_t t = i / G;
    const int64_t q = t % (kTileH * kTileW);
    t /= kTileH * kTileW;
    const int64_t tw = t % tiles_w;
    t /= tiles_w;
    const int64_t th = t % tiles_h;
    const int64_t n = t / tiles_h;
    const int64_t ih = th * kTileH + q / kTileW, iw = tw * kTileW + q % kTileW;
    if (ih >= H || iw >= W) continue;  // a partial tile at the bottom/right edge
    const T* xn = x + n * H * W * C + g * VEC;
    float xv[VEC], acc[VEC];
    bool hit[VEC];
    load_vec<T, VEC>(xn + (ih * W + iw) * C, xv);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      acc[j] = 0.f;
      hit[j] = false;
    }
    int64_t oh0, oh1, ow0, ow1;
    pw.covering(ih, Ho, &oh0, &oh1);
    pw.covering(iw, Wo, &ow0, &ow1);
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = ((n * Ho + oh) * Wo + ow) * C + g * VEC;
        float yy[VEC];
        bool cand[VEC];
        load_vec<T, VEC>(y + o, yy);
        bool any = false;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          cand[j] = xv[j] == yy[j];
          any = any || cand[j];
        }
        const int64_t w0 = pw.in_begin(ow), w1 = pw.in_end(ow, W);
        for (int64_t h = pw.in_begin(oh); any && h <= ih; ++h)
          for (int64_t w = w0; any && w < (h < ih ? w1 : iw); ++w) {
            float v[VEC];
            load_vec<T, VEC>(xn + (h * W + w) * C, v);
            any = false;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              cand[j] = cand[j] && !(v[j] == yy[j]);
              any = any || cand[j];
            }
          }
        if (!any) continue;
        float d[VEC];
        load_vec<T, VEC>(dy + o, d);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (cand[j]) {
            acc[j] = hit[j] ? acc[j] + d[j] : d[j];
            hit[j] = true;
          }
      }
#pragma unroll
    for (int j = 0; j < VEC; ++j)
      if (!hit[j]) acc[j] = 0.f;
    store_vec<T, VEC>(dx + ((n * H + ih) * W + iw) * C + g * VEC, acc);
  }
}

void maxpool_bwd_from_argmax(const OpCall& c, const Nhwc& d, const PoolWindow& pw) {
  const char* op = "MaxPoolArgmaxBwd";
  const TensorRef& dy = c.in[0];
  const TensorRef& argmax = c.in[2];
  const TensorRef& dx = c.out[0];
  const Shape ys = pooled_shape(c.in[1].shape, pw);
  TR_CHECK(argmax.shape == ys && dy.shape == ys && dy.dtype == dx.dtype && dx.shape == c.in[1].shape, op, ": dy ",
           dy.shape.str(), ", argmax ", argmax.shape.str(), ", dx ", dx.shape.str(), " for x ", c.in[1].shape.str());
  TR_CHECK(d.h * d.w * d.c < (int64_t(1) << 31), op, ": an image of ", d.h, "x", d.w, "x", d.c, " is too large");
  const GpuHandles& gh = handles_of(c, op);
  if (is_3x3s2p1(pw) && maxpool_3x3s2_bwd(c.env, sm_count(gh), dy.dtype, dy.data,
                                          static_cast<const uint8_t*>(argmax.data), dx.data, d.n, d.h, d.w, d.c))
    return;
  dispatch_float(dy.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(d.c, {dy.data, dx.data}) && aligned_to(argmax.data, kVec16<T>), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      if (pw.is_2x2()) {  // one item per (possibly partial) window: the search's kernel, given the winners
        const int64_t work = d.n * ((d.h + 1) / 2) * ((d.w + 1) / 2) * (d.c / V);
        if (work == 0) return;
        launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, maxpool_bwd_2x2_kernel<T, V>, dy.as<T>(),
                      nullptr, nullptr, static_cast<const uint8_t*>(argmax.data), dx.as<T>(), d.n, d.h, d.w, d.c);
        return;
      }
      const int64_t per_image = d.h * d.w * (d.c / V);
      if (per_image == 0 || d.n == 0) return;
      launch_kernel(c.env, {image_grid(per_image, d.n, sm_count(gh), kPoolThreads, kPoolBlocksPerSm), kPoolThreads, 0},
                    maxpool_bwd_argmax_kernel<T, V>, dy.as<T>(), static_cast<const uint8_t*>(argmax.data), dx.as<T>(),
                    d.n, int(d.h), int(d.w), int(d.c), pw);
    });
  });
}

// The fused MaxPoolFwd (y, argmax, sums): the 2x2 pool's outputs and the
// BatchNorm statistics of y in one pass, with BnStats's grid and order (the
// same bits as MaxPoolFwd then BnStats when the vector width is the same).
void maxpool_stats_2x2(const OpCall& c, const Nhwc& d, const PoolWindow& pw, uint8_t* argmax) {
  const char* op = "MaxPoolFwd";
  const TensorRef& sums = c.out[2];
  TR_CHECK(pw.is_2x2(), op, ": the BatchNorm statistics output needs 2x2 windows of stride 2 without padding, got ",
           pw.k, "x", pw.k, " stride ", pw.stride, " pad ", pw.pad);
  check_dtype(sums, DType::F32, op, "sums");
  check_numel(sums, 2 * d.c, op, "sums");
  const GpuHandles& gh = handles_of(c, op);
  const int64_t rows = d.n * (d.h / 2) * (d.w / 2);
  dispatch_float(c.in[0].dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const Pool2x2Source<T> src{c.in[0].as<T>(), c.out[0].as<T>(), argmax, d.h, d.w, d.c};
    const bool vec = stats_vec<T>(d.c, {c.in[0].data, c.out[0].data}) == kVec16<T> && aligned_to(argmax, kVec16<T>);
    if (vec) launch_channel_stats<kVec16<T>>(c.env, gh, src, rows, d.c, sums.as<float>(), op);
    else launch_channel_stats<1>(c.env, gh, src, rows, d.c, sums.as<float>(), op);
  });
}

// The fused MaxPoolFwd with the BatchNorm + ReLU after it (Note [one kernel
// per BatchNorm], bn_train_cuda.h): x, gamma, beta -> p, argmax, sums as
// maxpool_stats_2x2 gives them, then y, batch, affine as BnReluApply of p.
void maxpool_bn_2x2(const OpCall& c) {
  const char* op = "PoolBnReluApply";
  const OpOperands named(OpKind::PoolBnReluApply, c);
  const TensorRef &x = c.in[0], &gamma = c.in[1], &beta = c.in[2];
  const TensorRef &p = c.out[0], &argmax = c.out[1], &sums = c.out[2];
  const TensorRef &y = c.out[3], &batch = c.out[4], &affine = c.out[5];
  const Nhwc d = nhwc(x, op, "x");
  const PoolWindow pw = checked_pool_window(attrs_of(c, op), x.shape, op, true);
  TR_CHECK(pw.is_2x2(), op, ": the BatchNorm after the pool needs 2x2 windows of stride 2 without padding, got ", pw.k,
           "x", pw.k, " stride ", pw.stride, " pad ", pw.pad);
  TR_CHECK(p.dtype == x.dtype && p.shape == pooled_shape(x.shape, pw), op, ": p is ", p.shape.str());
  TR_CHECK(argmax.dtype == DType::U8 && argmax.shape == p.shape, op, ": argmax is ", dtype_name(argmax.dtype),
           argmax.shape.str());
  TR_CHECK(y.dtype == p.dtype && y.shape == p.shape, op, ": y is ", dtype_name(y.dtype), y.shape.str());
  check_bn_train_operands(sums, gamma, beta, batch, affine, x.dtype, d.c, op);
  const int64_t rows = d.n * (d.h / 2) * (d.w / 2);
  const double inv_count = bn_inv_count(c, p, rows, op);
  const GpuHandles& gh = handles_of(c, op);
  const float eps = attrs_of(c, op).eps;
  const bool relu = attrs_of(c, op).relu;
  auto* am = static_cast<uint8_t*>(argmax.data);
  bool one_kernel = false;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const Pool2x2Source<T> src{x.as<T>(), p.as<T>(), am, d.h, d.w, d.c};
    auto launch = [&](auto vtag) {
      constexpr int V = decltype(vtag)::value;
      return launch_bn_relu_train<V, 2>(c.env, gh, src, p.as<T>(), rows, d.c, sums.as<float>(), gamma.as<T>(),
                                        beta.as<T>(), y.as<T>(), batch.as<float>(), affine.as<float>(), inv_count, eps,
                                        relu, op);
    };
    // maxpool_stats_2x2's vector width (the sums' grid), which y must allow too.
    const bool vec = stats_vec<T>(d.c, {x.data, p.data}) == kVec16<T> && aligned_to(am, kVec16<T>);
    if (vec && aligned_to(y.data, 16)) one_kernel = launch(std::integral_constant<int, kVec16<T>>{});
    else if (!vec) one_kernel = launch(std::integral_constant<int, 1>{});
  });
  if (one_kernel) return;
  // The two ops apart: their own kernels, grids and vector widths.
  const TensorRef apply_in[4] = {p, sums, gamma, beta};
  maxpool_stats_fwd_cuda(OpCall{&x, 1, c.out, 3, c.attrs, c.variant, c.env});
  bn_relu_apply_cuda(OpCall{apply_in, 4, c.out + 3, 3, c.attrs, c.variant, c.env});
}

// MaxPoolFwd (x -> y), with its winners (MaxPoolArgmaxFwd: y, argmax) and
// y's statistics (MaxPoolStatsFwd: y, argmax, sums); the kinds' own operand
// lists are checked by the callers.
void maxpool_cuda(const OpCall& c, bool with_argmax, bool with_stats, const char* op) {
  const TensorRef& x = c.in[0];
  const TensorRef& y = c.out[0];
  const Nhwc d = nhwc(x, op, "x");
  const PoolWindow pw = checked_pool_window(attrs_of(c, op), x.shape, op, true);
  TR_CHECK(y.dtype == x.dtype && y.shape == pooled_shape(x.shape, pw), op, ": y is ", y.shape.str());
  uint8_t* argmax = nullptr;
  if (with_argmax) {
    TR_CHECK(c.out[1].dtype == DType::U8 && c.out[1].shape == y.shape, op, ": argmax is ", dtype_name(c.out[1].dtype),
             c.out[1].shape.str());
    TR_CHECK(pw.k <= 16, op, ": a recorded winner needs a window of at most 16x16");
    argmax = static_cast<uint8_t*>(c.out[1].data);
  }
  if (with_stats) {
    maxpool_stats_2x2(c, d, pw, argmax);
    return;
  }
  const GpuHandles& gh = handles_of(c, op);
  if (argmax != nullptr && is_3x3s2p1(pw) &&
      maxpool_3x3s2_fwd(c.env, sm_count(gh), x.dtype, x.data, y.data, argmax, d.n, d.h, d.w, d.c))
    return;
  const bool fast = pw.is_2x2();
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const bool vec = can_vec<T>(d.c, {x.data, y.data}) && (argmax == nullptr || aligned_to(argmax, kVec16<T>));
    with_vec<T>(vec, [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      const int64_t work = y.shape.numel() / V;
      if (work == 0) return;
      const unsigned grid = pool_grid(work, sm_count(gh));
      if (fast)
        launch_kernel(c.env, {dim3(grid), kPoolThreads, 0}, maxpool_fwd_kernel<T, V>,
                      Pool2x2Source<T>{x.as<T>(), y.as<T>(), argmax, d.h, d.w, d.c}, work);
      else
        launch_kernel(c.env, {dim3(grid), kPoolThreads, 0}, maxpool_fwd_general_kernel<T, V>, x.as<T>(), y.as<T>(),
                      argmax, d.n, d.h, d.w, d.c, pw);
    });
  });
}

}  // namespace

void maxpool_fwd_cuda(const OpCall& c) {
  const OpOperands named(OpKind::MaxPoolFwd, c);
  maxpool_cuda(c, false, false, "MaxPoolFwd");
}

void maxpool_argmax_fwd_cuda(const OpCall& c) {
  const OpOperands named(OpKind::MaxPoolArgmaxFwd, c);
  maxpool_cuda(c, true, false, "MaxPoolArgmaxFwd");
}

void maxpool_stats_fwd_cuda(const OpCall& c) {
  const OpOperands named(OpKind::MaxPoolStatsFwd, c);
  maxpool_cuda(c, true, true, "MaxPoolStatsFwd");
}

void pool_bn_relu_apply_cuda(const OpCall& c) { maxpool_bn_2x2(c); }

void maxpool_argmax_bwd_cuda(const OpCall& c) {
  const char* op = "MaxPoolArgmaxBwd";
  const OpOperands named(OpKind::MaxPoolArgmaxBwd, c);
  const TensorRef& x = named.in("x");
  TR_CHECK(named.in("argmax").dtype == DType::U8, op, ": argmax is ", dtype_name(named.in("argmax").dtype));
  maxpool_bwd_from_argmax(c, nhwc(x, op, "x"), checked_pool_window(attrs_of(c, op), x.shape, op, true));
}

void maxpool_bwd_cuda(const OpCall& c) {
  const char* op = "MaxPoolBwd";
  const OpOperands named(OpKind::MaxPoolBwd, c);
  const TensorRef& dy = c.in[0];
  const TensorRef& x = c.in[1];
  const TensorRef& y = c.in[2];
  const TensorRef& dx = c.out[0];
  const Nhwc d = nhwc(x, op, "x");
  const PoolWindow pw = checked_pool_window(attrs_of(c, op), x.shape, op, true);
  TR_CHECK(y.dtype == x.dtype && y.shape == pooled_shape(x.shape, pw), op, ": y is ", y.shape.str());
  check_same(dy, y, op, "dy");
  check_same(dx, x, op, "dx");
  const GpuHandles& gh = handles_of(c, op);
  const bool fast = pw.is_2x2();
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    with_vec<T>(can_vec<T>(d.c, {dy.data, x.data, y.data, dx.data}), [&](auto vt) {
      constexpr int V = decltype(vt)::value;
      if (fast) {  // one item per (possibly partial) 2x2 window
        const int64_t work = d.n * ((d.h + 1) / 2) * ((d.w + 1) / 2) * (d.c / V);
        if (work == 0) return;
        launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, maxpool_bwd_2x2_kernel<T, V>, dy.as<T>(),
                      x.as<T>(), y.as<T>(), nullptr, dx.as<T>(), d.n, d.h, d.w, d.c);
      } else {  // one item per input position of whole tiles
        const int64_t work = d.n * ceil_div(d.h, kTileH) * kTileH * ceil_div(d.w, kTileW) * kTileW * (d.c / V);
        if (work == 0) return;
        launch_kernel(c.env, {pool_grid(work, sm_count(gh)), kPoolThreads, 0}, maxpool_bwd_general_kernel<T, V>,
                      dy.as<T>(), x.as<T>(), y.as<T>(), dx.as<T>(), d.n, d.h, d.w, d.c, pw);
      }
    });
  });
}

}  // namespace tr
