// Causal self-attention CUDA kernels. Semantics: framework/ops/compute/attention.h.
// A block owns 64 rows (queries, or keys in the dk/dv kernel) of one (sample,
// head); each row belongs to a pair of threads that split the head dim in
// halves, so a dot product is two half sums and one shuffle. The other side
// streams through shared memory in tiles of 32 rows, in f32; the [T,T] scores
// never leave the chip.
//   forward:   per query, an online softmax over the keys up to the diagonal;
//   dq, delta: per query, over the keys up to the diagonal;
//   dk, dv:    per key, over the queries from the diagonal on.
// Each output is summed by one thread in key (or query) order: the same bits on
// every run, without atomics. Blocks with the longest causal rows start first.
// f16 and bf16 with head dim 64 or 128 go to the tensor-core kernels instead
// (attention_tc_fwd_cuda.cu, attention_tc_bwd_cuda.cu); these serve f32 and
// the other head dims.
#include <cmath>
#include <type_traits>

#include "framework/ops/compute/attention.h"
#include "framework/ops/compute/attention_tc_cuda.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kRows = 64;  // rows a block owns
constexpr int kPair = 2;   // threads per row
constexpr int kThreads = kRows * kPair;
constexpr int kTile = 32;  // rows per shared-memory tile

// Sizes every kernel shares. Row t of head h's q in sample b is at
// qkv + (b*T + t) * 3C + h*d, its k at + C, its v at + 2C; y and dy rows are C apart.
struct Geometry {
  int T = 0, H = 0, C = 0;
  int BH = 0, tiles = 0;  // B*H, and ceil(T / kRows)
  float scale = 0.f;      // 1 / sqrt(d)
};

// 32 rows of a head-dim-D matrix in f32; a row's two halves are padded apart
// (D/2 + 4 floats) so the two threads of a pair read different banks.
template <int D>
struct Tile {
  float v[kTile][kPair][D / 2 + 4];
};

// Rows first .. first+count-1 (count <= kTile) of src, rows `stride` apart; zeros past count.
template <typename T, int D>
__device__ void load_tile(Tile<D>& tile, const T* __restrict__ src, int64_t stride, int first, int count) {
  for (int idx = threadIdx.x; idx < kTile * D; idx += kThreads) {
    const int r = idx / D, e = idx % D;
    tile.v[r][e / (D / 2)][e % (D / 2)] = r < count ? to_f(src[int64_t(first + r) * stride + e]) : 0.f;
  }
}

// This thread's half of row `row` (rows `stride` apart), times `mul`; zeros for an invalid row.
template <typename T, int D>
__device__ void load_half(float (&dst)[D / 2], const T* __restrict__ src, int64_t stride, int row, bool valid,
                          float mul) {
  const int half = threadIdx.x % kPair;
#pragma unroll
  for (int e = 0; e < D / 2; ++e) dst[e] = valid ? to_f(src[int64_t(row) * stride + half * (D / 2) + e]) * mul : 0.f;
}

template <typename T, int D>
__device__ void store_half(T* __restrict__ dst, int64_t stride, int row, const float (&src)[D / 2], float mul) {
  const int half = threadIdx.x % kPair;
#pragma unroll
  for (int e = 0; e < D / 2; ++e) dst[int64_t(row) * stride + half * (D / 2) + e] = from_f<T>(src[e] * mul);
}

// a . b over the head dim: this thread's half, plus its partner's (the same sum on both).
template <int D>
__device__ __forceinline__ float pair_dot(const float (&a)[D / 2], const float* b) {
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < D / 2; ++e) s += a[e] * b[e];
  return s + __shfl_xor_sync(0xffffffffu, s, 1);
}

struct BlockRows {
  int b, h, bh, row0;
};

// The block's (sample, head) and first row; last_first: the last tile of rows first.
__device__ BlockRows block_rows(const Geometry& g, bool last_first) {
  const int bh = int(blockIdx.x % unsigned(g.BH));
  const int t = int(blockIdx.x / unsigned(g.BH));
  return {bh / g.H, bh % g.H, bh, (last_first ? g.tiles - 1 - t : t) * kRows};
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    attention_fwd_kernel(const T* __restrict__ qkv, T* __restrict__ y, float* __restrict__ lse, Geometry g) {
  grid_dependency_begin();
  __shared__ Tile<D> ks, vs;
  const BlockRows br = block_rows(g, true);
  const int half = threadIdx.x % kPair, i = br.row0 + threadIdx.x / kPair;
  const bool valid = i < g.T;
  const int64_t stride = 3 * int64_t(g.C);
  const T* base = qkv + int64_t(br.b) * g.T * stride + br.h * D;
  float q[D / 2], o[D / 2];
  load_half<T, D>(q, base, stride, i, valid, g.scale);
#pragma unroll
  for (int e = 0; e < D / 2; ++e) o[e] = 0.f;
  float m = -INFINITY, l = 0.f;
  const int keys = min(br.row0 + kRows, g.T);
  for (int k0 = 0; k0 < keys; k0 += kTile) {
    __syncthreads();
    load_tile<T, D>(ks, base + g.C, stride, k0, min(kTile, g.T - k0));
    load_tile<T, D>(vs, base + 2 * g.C, stride, k0, min(kTile, g.T - k0));
    __syncthreads();
    float s[kTile], tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const float dot = pair_dot<D>(q, ks.v[j][half]);
      s[j] = k0 + j <= i ? dot : -INFINITY;
      tile_max = fmaxf(tile_max, s[j]);
    }
    // Key 0 is in the first tile and every row sees it, so m is finite from then on.
    const float m_new = fmaxf(m, tile_max), corr = expf(m - m_new);
    l *= corr;
#pragma unroll
    for (int e = 0; e < D / 2; ++e) o[e] *= corr;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const float p = expf(s[j] - m_new);
      l += p;
#pragma unroll
      for (int e = 0; e < D / 2; ++e) o[e] += p * vs.v[j][half][e];
    }
    m = m_new;
  }
  if (!valid) return;
  store_half<T, D>(y + int64_t(br.b) * g.T * g.C + br.h * D, g.C, i, o, 1.f / l);
  if (half == 0) lse[int64_t(br.bh) * g.T + i] = m + logf(l);
}

// dq of each query (and its delta = dy . y), over the keys up to the diagonal.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(const T* __restrict__ dy, const T* __restrict__ qkv, const T* __restrict__ y,
                        const float* __restrict__ lse, T* __restrict__ dqkv, float* __restrict__ delta, Geometry g) {
  grid_dependency_begin();
  __shared__ Tile<D> ks, vs;
  const BlockRows br = block_rows(g, true);
  const int half = threadIdx.x % kPair, i = br.row0 + threadIdx.x / kPair;
  const bool valid = i < g.T;
  const int64_t stride = 3 * int64_t(g.C), y_off = int64_t(br.b) * g.T * g.C + br.h * D;
  const T* base = qkv + int64_t(br.b) * g.T * stride + br.h * D;
  float q[D / 2], dyr[D / 2], dq[D / 2];
  load_half<T, D>(q, base, stride, i, valid, g.scale);
  load_half<T, D>(dyr, dy + y_off, g.C, i, valid, 1.f);
  load_half<T, D>(dq, y + y_off, g.C, i, valid, 1.f);  // y, for delta; dq after
  const float dl = pair_dot<D>(dyr, dq);
#pragma unroll
  for (int e = 0; e < D / 2; ++e) dq[e] = 0.f;
  const float lse_i = valid ? lse[int64_t(br.bh) * g.T + i] : 0.f;
  const int keys = min(br.row0 + kRows, g.T);
  for (int k0 = 0; k0 < keys; k0 += kTile) {
    __syncthreads();
    load_tile<T, D>(ks, base + g.C, stride, k0, min(kTile, g.T - k0));
    load_tile<T, D>(vs, base + 2 * g.C, stride, k0, min(kTile, g.T - k0));
    __syncthreads();
#pragma unroll 4
    for (int j = 0; j < kTile; ++j) {
      const float s = pair_dot<D>(q, ks.v[j][half]);
      const float p = k0 + j <= i ? expf(s - lse_i) : 0.f;
      const float ds = p * (pair_dot<D>(dyr, vs.v[j][half]) - dl);
#pragma unroll
      for (int e = 0; e < D / 2; ++e) dq[e] += ds * ks.v[j][half][e];
    }
  }
  if (!valid) return;
  store_half<T, D>(dqkv + int64_t(br.b) * g.T * stride + br.h * D, stride, i, dq, g.scale);
  if (half == 0) delta[int64_t(br.bh) * g.T + i] = dl;
}

// dk and dv of each key, over the queries from the diagonal to the end.
template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    attention_dkv_kernel(const T* __restrict__ dy, const T* __restrict__ qkv, const float* __restrict__ lse,
                         const float* __restrict__ delta, T* __restrict__ dqkv, Geometry g) {
  grid_dependency_begin();
  __shared__ Tile<D> qs, dys;
  __shared__ float lse_s[kTile], delta_s[kTile];
  const BlockRows br = block_rows(g, false);
  const int half = threadIdx.x % kPair, j = br.row0 + threadIdx.x / kPair;
  const bool valid = j < g.T;
  const int64_t stride = 3 * int64_t(g.C), row = int64_t(br.bh) * g.T;
  const T* base = qkv + int64_t(br.b) * g.T * stride + br.h * D;
  const T* dy_base = dy + int64_t(br.b) * g.T * g.C + br.h * D;
  float k[D / 2], v[D / 2], dk[D / 2], dv[D / 2];
  load_half<T, D>(k, base + g.C, stride, j, valid, g.scale);
  load_half<T, D>(v, base + 2 * g.C, stride, j, valid, 1.f);
#pragma unroll
  for (int e = 0; e < D / 2; ++e) dk[e] = 0.f, dv[e] = 0.f;
  for (int q0 = br.row0; q0 < g.T; q0 += kTile) {
    const int count = min(kTile, g.T - q0);
    __syncthreads();
    load_tile<T, D>(qs, base, stride, q0, count);
    load_tile<T, D>(dys, dy_base, g.C, q0, count);
    if (threadIdx.x < kTile) {
      lse_s[threadIdx.x] = int(threadIdx.x) < count ? lse[row + q0 + threadIdx.x] : 0.f;
      delta_s[threadIdx.x] = int(threadIdx.x) < count ? delta[row + q0 + threadIdx.x] : 0.f;
    }
    __syncthreads();
#pragma unroll 4
    for (int r = 0; r < kTile; ++r) {
      const float s = pair_dot<D>(k, qs.v[r][half]);
      const float p = q0 + r >= j && r < count ? expf(s - lse_s[r]) : 0.f;
      const float ds = p * (pair_dot<D>(v, dys.v[r][half]) - delta_s[r]);
#pragma unroll
      for (int e = 0; e < D / 2; ++e) {
        dv[e] += p * dys.v[r][half][e];
        dk[e] += ds * qs.v[r][half][e];
      }
    }
  }
  if (!valid) return;
  T* out = dqkv + int64_t(br.b) * g.T * stride + br.h * D;
  store_half<T, D>(out + g.C, stride, j, dk, g.scale);
  store_half<T, D>(out + 2 * g.C, stride, j, dv, 1.f);
}

// f(std::integral_constant<int, D>) for the head dim d (the shape rule allows only these).
template <typename F>
void with_head_dim(int64_t d, const char* op, F&& f) {
  switch (d) {
    case 8: f(std::integral_constant<int, 8>{}); return;
    case 16: f(std::integral_constant<int, 16>{}); return;
    case 32: f(std::integral_constant<int, 32>{}); return;
    case 64: f(std::integral_constant<int, 64>{}); return;
    case 128: f(std::integral_constant<int, 128>{}); return;
    default: break;
  }
  TR_CHECK(false, op, ": head dim ", d, " has no kernel");
}

struct Problem {
  int64_t B = 0;
  Geometry g;
  int64_t d = 0;
};

Problem problem_of(const OpCall& c, const TensorRef& qkv, const char* op) {
  const int heads = attrs_of(c, op).heads;
  TR_CHECK(qkv.shape.rank == 3 && qkv.shape[2] % 3 == 0 && heads > 0 && (qkv.shape[2] / 3) % heads == 0, op, ": qkv ",
           qkv.shape.str(), " with ", heads, " heads");
  Problem p;
  p.B = qkv.shape[0];
  p.g.T = int(qkv.shape[1]);
  p.g.C = int(qkv.shape[2] / 3);
  p.g.H = heads;
  p.g.BH = int(p.B) * heads;
  p.g.tiles = int(ceil_div(p.g.T, kRows));
  p.d = p.g.C / heads;
  p.g.scale = float(1.0 / std::sqrt(double(p.d)));
  return p;
}

void check_like(const TensorRef& t, DType dtype, int64_t n, const char* op, const char* what) {
  check_dtype(t, dtype, op, what);
  check_numel(t, n, op, what);
}

LaunchShape grid_of(const Problem& p) { return {dim3(unsigned(int64_t(p.g.tiles) * p.g.BH)), kThreads, 0}; }

}  // namespace

void attention_fwd_cuda(const OpCall& c) {
  const char* op = "AttentionFwd";
  check_operands(OpKind::AttentionFwd, c);
  const TensorRef &qkv = c.in[0], &y = c.out[0], &lse = c.out[1];
  const Problem p = problem_of(c, qkv, op);
  check_like(y, qkv.dtype, p.B * p.g.T * p.g.C, op, "y");
  check_like(lse, DType::F32, int64_t(p.g.BH) * p.g.T, op, "lse");
  dispatch_float(qkv.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>) {
      if (attention_tc_has_kernel(p.d, {qkv.data, y.data})) {
        attention_tc_fwd(c.env, {int(p.B), p.g.T, p.g.H, int(p.d)}, qkv.as<T>(), y.as<T>(), lse.as<float>());
        return;
      }
    }
    with_head_dim(p.d, op, [&](auto dim) {
      launch_kernel(c.env, grid_of(p), attention_fwd_kernel<T, dim.value>, qkv.as<T>(), y.as<T>(), lse.as<float>(),
                    p.g);
    });
  });
}

void attention_bwd_cuda(const OpCall& c) {
  const char* op = "AttentionBwd";
  check_operands(OpKind::AttentionBwd, c);
  const TensorRef &dy = c.in[0], &qkv = c.in[1], &y = c.in[2], &lse = c.in[3], &dqkv = c.out[0], &delta = c.out[1];
  const Problem p = problem_of(c, qkv, op);
  const int64_t n_y = p.B * p.g.T * p.g.C, rows = int64_t(p.g.BH) * p.g.T;
  check_like(dy, qkv.dtype, n_y, op, "dy");
  check_like(y, qkv.dtype, n_y, op, "y");
  check_like(lse, DType::F32, rows, op, "lse");
  check_like(dqkv, qkv.dtype, qkv.shape.numel(), op, "dqkv");
  check_like(delta, DType::F32, rows, op, "delta");
  dispatch_float(qkv.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>) {
      if (attention_tc_has_kernel(p.d, {dy.data, qkv.data, y.data, dqkv.data})) {
        attention_tc_bwd(c.env, {int(p.B), p.g.T, p.g.H, int(p.d)}, dy.as<T>(), qkv.as<T>(), y.as<T>(), lse.as<float>(),
                         dqkv.as<T>(), delta.as<float>());
        return;
      }
    }
    with_head_dim(p.d, op, [&](auto dim) {
      launch_kernel(c.env, grid_of(p), attention_dq_kernel<T, dim.value>, dy.as<T>(), qkv.as<T>(), y.as<T>(),
                    lse.as<float>(), dqkv.as<T>(), delta.as<float>(), p.g);
      launch_kernel(c.env, grid_of(p), attention_dkv_kernel<T, dim.value>, dy.as<T>(), qkv.as<T>(), lse.as<float>(),
                    delta.as<float>(), dqkv.as<T>(), p.g);
    });
  });
}

}  // namespace tr
