// Max pooling 3x3 / stride 2 / pad 1 (ResNet-50's stem) with recorded winners:
// kernels with the window unrolled, for pool_cuda.cu. Semantics and bits are
// those of the general kernels there (Note [pool window order]); these only
// keep more loads in flight. The general forward walks a window with runtime
// bounds, and the general gather loads one covering output at a time, each
// load waiting on the compare before it: at batch 32 they moved 1.5 and
// 0.85 TB/s on the H200, far from its 4.8.
//
// Geometry. Output o's window covers input rows 2o-1 .. 2o+1. So the input
// rows 2a and 2a+1 (and the same for columns) are covered by outputs a and
// a+1 only:
//   row 2a   by output a   at window row 1;
//   row 2a+1 by output a   at window row 2, then by output a+1 at window row 0.
// One backward thread owns the 2x2 input block (2a..2a+1, 2b..2b+1) of one
// channel vector, loads the four outputs (a..a+1, b..b+1) at once and writes
// four input gradients, each summed over its covering outputs in the gather's
// order (oh ascending, then ow), the first term taken as is.
//
// Registers, as measured at batch 32 (tr_bench_ops, H200): the forward keeps its
// nine loads as raw vectors and is held to 64 registers (4 blocks of 256 per
// SM): 22.7 us, against 47.9 for the general kernel and 61 for this one with
// floats and 133 registers. The backward keeps floats and 90 registers: 48 us
// against 83 for the general gather; held to 64 registers it spilled and took 85.
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/maxpool_3x3s2_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

// x[N,H,W,C] -> y[N,Ho,Wo,C], argmax[N,Ho,Wo,C] (kh * 3 + kw from the window's
// corner); item = (n, oh, ow, channel vector). The first input position of the
// window starts the max; the rest follow in row-major order with a strict '>'.
template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads, 4)
    maxpool_3x3s2_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, uint8_t* __restrict__ argmax, int64_t N, int H,
                             int W, int C) {
  grid_dependency_begin();
  const int Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1, G = C / VEC;
  const int per_image = Ho * Wo * G;
  for (int64_t n = blockIdx.y; n < N; n += gridDim.y) {
    const T* xn = x + n * H * W * C;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < per_image; i += gridDim.x * blockDim.x) {
      const int g = i % G, p = i / G;
      const int oh = p / Wo, ow = p % Wo;
      const int h0 = 2 * oh - 1, w0 = 2 * ow - 1;
      Vec<T, VEC> v[9];  // raw: half the registers of floats for f16, so more threads fit
      bool in[9];
#pragma unroll
      for (int q = 0; q < 9; ++q) {  // all nine loads issued before any compare
        const int h = h0 + q / 3, w = w0 + q % 3;
        in[q] = h >= 0 && h < H && w >= 0 && w < W;
        if (in[q]) v[q] = *reinterpret_cast<const Vec<T, VEC>*>(xn + (h * W + w) * C + g * VEC);
      }
      // The first input position of the window (in[] is a rectangle) starts the max.
      const int q0 = (h0 < 0 ? 3 : 0) + (w0 < 0 ? 1 : 0);
      float m[VEC] = {};
      Vec<uint8_t, VEC> at;
#pragma unroll
      for (int q = 0; q < 9; ++q) {
        if (!in[q] || q < q0) continue;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float f = to_f(v[q].v[j]);
          if (q == q0 || f > m[j]) {
            m[j] = f;
            at.v[j] = uint8_t(q);
          }
        }
      }
      const int64_t o = int64_t(n) * per_image * VEC + int64_t(i) * VEC;
      store_vec<T, VEC>(y + o, m);
      *reinterpret_cast<Vec<uint8_t, VEC>*>(argmax + o) = at;
    }
  }
}

// Adds output q's gradient to the lanes whose recorded winner is window position pos.
template <int VEC>
__device__ __forceinline__ void gather(const Vec<uint8_t, VEC>& at, const float (&d)[VEC], uint8_t pos,
                                       float (&acc)[VEC], bool (&hit)[VEC]) {
#pragma unroll
  for (int j = 0; j < VEC; ++j)
    if (at.v[j] == pos) {
      acc[j] = hit[j] ? acc[j] + d[j] : d[j];
      hit[j] = true;
    }
}

// dy[N,Ho,Wo,C], argmax -> dx[N,H,W,C]; item = (n, a, b, channel vector), the
// input block (2a..2a+1, 2b..2b+1). Outputs: 0 = (a,b), 1 = (a,b+1), 2 = (a+1,b), 3 = (a+1,b+1).
template <typename T, int VEC>
__global__ void maxpool_3x3s2_bwd_kernel(const T* __restrict__ dy, const uint8_t* __restrict__ argmax,
                                         T* __restrict__ dx, int64_t N, int H, int W, int C) {
  grid_dependency_begin();
  const int Ho = (H - 1) / 2 + 1, Wo = (W - 1) / 2 + 1, G = C / VEC;
  const int per_image = Ho * Wo * G;
  for (int64_t n = blockIdx.y; n < N; n += gridDim.y) {
    const T* dyn = dy + n * Ho * Wo * C;
    const uint8_t* an = argmax + n * Ho * Wo * C;
    T* dxn = dx + n * H * W * C;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < per_image; i += gridDim.x * blockDim.x) {
      const int g = i % G, p = i / G;
      const int a = p / Wo, b = p % Wo;
      const bool down = a + 1 < Ho, right = b + 1 < Wo;
      Vec<uint8_t, VEC> at[4];
      float d[4][VEC] = {};
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int oh = a + (q >> 1), ow = b + (q & 1);
        if (((q >> 1) && !down) || ((q & 1) && !right)) {
#pragma unroll
          for (int j = 0; j < VEC; ++j) at[q].v[j] = 0xff;  // no window position matches
          continue;
        }
        const int o = (oh * Wo + ow) * C + g * VEC;
        at[q] = *reinterpret_cast<const Vec<uint8_t, VEC>*>(an + o);
        load_vec<T, VEC>(dyn + o, d[q]);
      }
      // Input (2a + r, 2b + s): its covering outputs in gather order and its window position in each.
#pragma unroll
      for (int rs = 0; rs < 4; ++rs) {
        const int r = rs >> 1, s = rs & 1;
        const int ih = 2 * a + r, iw = 2 * b + s;
        if (ih >= H || iw >= W) continue;
        float acc[VEC];
        bool hit[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          acc[j] = 0.f;
          hit[j] = false;
        }
        // output (a + u, b + v) holds (ih, iw) at window position (r + 1 - 2u) * 3 + (s + 1 - 2v)
#pragma unroll
        for (int u = 0; u <= r; ++u)
#pragma unroll
          for (int v = 0; v <= s; ++v)
            gather<VEC>(at[u * 2 + v], d[u * 2 + v], uint8_t((r + 1 - 2 * u) * 3 + (s + 1 - 2 * v)), acc, hit);
        store_vec<T, VEC>(dxn + (ih * W + iw) * C + g * VEC, acc);
      }
    }
  }
}

bool fits(int64_t h, int64_t w, int64_t c, int vec, const std::initializer_list<const void*>& ptrs) {
  if (h * w * c >= (int64_t(1) << 31) || c % vec != 0) return false;
  for (const void* p : ptrs)
    if (!aligned_to(p, 16)) return false;
  return true;
}

}  // namespace

bool is_3x3s2p1(const PoolWindow& pw) { return pw.k == 3 && pw.stride == 2 && pw.pad == 1; }

bool maxpool_3x3s2_fwd(const ExecEnv* env, int sms, DType dtype, const void* x, void* y, uint8_t* argmax, int64_t n,
                       int64_t h, int64_t w, int64_t c) {
  bool done = false;
  dispatch_float(dtype, "MaxPoolFwd", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = kVec16<T>;
    if (V == 1 || !fits(h, w, c, V, {x, y, argmax})) return;
    const int64_t per_image = ((h - 1) / 2 + 1) * ((w - 1) / 2 + 1) * (c / V);
    const dim3 grid = image_grid(per_image, n, sms, kThreads, kBlocksPerSm);
    launch_kernel(env, {grid, kThreads, 0}, maxpool_3x3s2_fwd_kernel<T, V>, static_cast<const T*>(x),
                  static_cast<T*>(y), argmax, n, int(h), int(w), int(c));
    done = true;
  });
  return done;
}

bool maxpool_3x3s2_bwd(const ExecEnv* env, int sms, DType dtype, const void* dy, const uint8_t* argmax, void* dx,
                       int64_t n, int64_t h, int64_t w, int64_t c) {
  bool done = false;
  dispatch_float(dtype, "MaxPoolBwd", [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = kVec16<T>;
    if (V == 1 || !fits(h, w, c, V, {dy, dx, argmax})) return;
    const int64_t per_image = ((h - 1) / 2 + 1) * ((w - 1) / 2 + 1) * (c / V);
    const dim3 grid = image_grid(per_image, n, sms, kThreads, kBlocksPerSm);
    launch_kernel(env, {grid, kThreads, 0}, maxpool_3x3s2_bwd_kernel<T, V>, static_cast<const T*>(dy), argmax,
                  static_cast<T*>(dx), n, int(h), int(w), int(c));
    done = true;
  });
  return done;
}

}  // namespace tr
