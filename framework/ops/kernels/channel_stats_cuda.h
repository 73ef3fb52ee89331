#pragma once
// Per-channel (sum v, sum v^2) over the rows of an NHWC activation: BatchNorm's
// training statistics. BnStats reads them from x; an op that produces a
// BatchNorm's input can also hand them over in the same pass (MaxPoolFwd with
// a third output, Note [fusion]), so the activation is not read again.
//
// The source says how a thread obtains row r's VEC channels from c0:
//   src(r, c0, v)  fills float v[VEC] (and may store what it computed).
// The grid (channel_grid with kStatsBlocksPerSm, kStatsMinRowsPerThread), each
// thread's rows and the order it adds them do not depend on the source, so the
// sums are the same bits whichever source produced the values
// (Note [deterministic kernels]). Only included from .cu files.
#include "framework/ops/kernels/channel_sums_cuda.h"

namespace tr::cuda {

constexpr int kStatsBlocksPerSm = 4;
constexpr int64_t kStatsMinRowsPerThread = 4;

// rows x C values -> per-block partials (or the sums, with one row block),
// added as launch_sums arranges: the body of channel_stats_kernel, and the
// first phase of the kernels that apply the BatchNorm too (bn_train_cuda.h).
// UNROLL rows in flight per thread; the sums' order is a plain loop's
// whatever UNROLL is, so it changes registers, not bits.
template <int VEC, int UNROLL = 4, bool SYNC = false, typename Src>
__device__ __forceinline__ void channel_stats_rows(const Src& src, int64_t rows, int64_t C,
                                                   const SumOut<float, 2>& out) {
  const int64_t g = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = g * VEC;
  const bool active = c0 < C;
  float acc[2][VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) acc[0][i] = acc[1][i] = 0.f;
  if (active) {
    const int64_t stride = int64_t(gridDim.x) * blockDim.y;
    int64_t r = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
    // UNROLL rows in flight, added in row order: the order of a plain loop.
    for (; r + (UNROLL - 1) * stride < rows; r += UNROLL * stride) {
      float v[UNROLL][VEC];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) src(r + u * stride, c0, v[u]);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          acc[0][i] += v[u][i];
          acc[1][i] = fmaf(v[u][i], v[u][i], acc[1][i]);
        }
    }
    for (; r < rows; r += stride) {
      float v[VEC];
      src(r, c0, v);
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        acc[0][i] += v[i];
        acc[1][i] = fmaf(v[i], v[i], acc[1][i]);
      }
    }
  }
  block_sum_store<float, 2, VEC, 2 * VEC, SYNC>(acc, c0, active, C, out);
}

template <int VEC, typename Src, bool SYNC = false>
__global__ void channel_stats_kernel(Src src, int64_t rows, int64_t C, SumOut<float, 2> out) {
  grid_dependency_begin();
  channel_stats_rows<VEC, 4, SYNC>(src, rows, C, out);
}

// Row r of x[rows, C], as BnStats reads it.
template <typename T>
struct RowSource {
  const T* x;
  int64_t C;
  template <int VEC>
  __device__ __forceinline__ void operator()(int64_t r, int64_t c0, float (&v)[VEC]) const {
    load_vec<T, VEC>(x + r * C + c0, v);
  }
};

// The widest vector the statistics take for C channels (16 bytes, else one
// element); every pointer the source touches must allow it. 16 bytes: the
// statistics hold no per-channel parameters (40 registers), and measured
// slower with 8-byte vectors.
template <typename T>
int stats_vec(int64_t C, std::initializer_list<const void*> ptrs) {
  if (C % kVec16<T> != 0) return 1;
  for (const void* p : ptrs)
    if (p != nullptr && !aligned_to(p, 16)) return 1;
  return kVec16<T>;
}

// Launches the statistics of `rows` rows of C channels into sums f32[2, C]
// (the kernel, which adds its blocks' partials behind a grid barrier or has
// finalize_sums add them: launch_sums); VEC as
// stats_vec chose it. The partials take the op's workspace.
template <int VEC, typename Src>
void launch_channel_stats(const ExecEnv* env, const GpuHandles& gh, const Src& src, int64_t rows, int64_t C,
                          float* sums, const char* op) {
  const ChannelGrid g = channel_grid(rows, C, VEC, sm_count(gh), kStatsBlocksPerSm, kStatsMinRowsPerThread);
  SumOut<float, 2> out;
  out.partial = static_cast<float*>(workspace(gh, sum_partial_bytes<2>(g, C), op));
  out.f32 = sums;
  launch_sums(env, gh, g, sum_smem_bytes<2, VEC>(), C, out, channel_stats_kernel<VEC, Src>,
              channel_stats_kernel<VEC, Src, true>, src, rows, C);
}

}  // namespace tr::cuda
