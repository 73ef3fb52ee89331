// Probe: is a BatchNorm forward cheaper as one cooperative kernel with two grid
// barriers than as tr's three kernels (statistics, finalize_sums, apply)?
//
// BM_BnChain/<layers>/<coop>: the cnn's seven training BatchNorm + ReLU
// forwards at batch 256 (rows x C = 200704x32, 2x 50176x64, 2x 12544x128,
// 2x 2304x256; f16 NHWC), one after the other in one captured graph with
// programmatic dependent launch, as in a full-capture step.
//   coop 0: channel_stats_kernel + finalize_sums (the framework's own kernels,
//           channel_stats_cuda.h) and an apply kernel: 3 kernels per layer.
//   coop 1: one cooperative kernel per layer: the same statistics into
//           per-block partials, grid barrier, the partials added in
//           finalize_sums' order by 8 channels x 32 lanes per block, grid
//           barrier, then the apply over the same rows. 1 kernel per layer.
//   coop 2: the statistics kernel, then an apply kernel in clusters of 8 blocks
//           that adds the partials itself (same order), each block of a
//           cluster a share of the channels, read by the others through
//           distributed shared memory. 2 kernels per layer.
//   coop 3: the statistics kernel adds its block's sums in 64.64 fixed point
//           with integer atomics (probe_fixed_sums_cuda.h), then an apply
//           kernel reads them: no finalize_sums, 2 kernels per layer. The
//           sums do not depend on the atomics' order; they are the exact sums
//           of the same block sums, so y may differ from the others' in the
//           last bit. Two parities per layer: each statistics kernel clears
//           the one its next pass uses.
// Coops 0-2 give the same sums bit for bit (the probe prints y's digest after
// one and after two launches of the graph: they must agree across coops 0-2,
// and every coop's two must agree). Each graph holds the layers twice (coop 3
// with one parity, then the other); time per pass of the layers by CUDA events.
#include <benchmark/benchmark.h>
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "experiments/probe_bn_apply_cuda.h"
#include "experiments/probe_check.h"
#include "experiments/probe_fixed_sums_cuda.h"
#include "framework/ops/kernels/bn_affine_cuda.h"
#include "framework/ops/kernels/channel_stats_cuda.h"

namespace {

using namespace tr;
using namespace tr::cuda;
namespace cg = cooperative_groups;

constexpr int kVec = 8;  // halves per 16-byte load

struct Layer {
  int64_t rows, C;
};
const Layer kLayers[] = {{200704, 32}, {50176, 64}, {50176, 64}, {12544, 128}, {12544, 128}, {2304, 256}, {2304, 256}};

// Statistics, barrier, finalize (finalize_sums' order), barrier, apply.
__global__ void coop_kernel(const __half* x, const __half* gamma, const __half* beta, __half* y, float* partial,
                            float* sums, int64_t rows, int64_t C, double inv_count) {
  grid_dependency_begin();
  cg::grid_group grid = cg::this_grid();
  const int64_t c0 = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * kVec;
  const bool active = c0 < C;
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  const int64_t r0 = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  {
    float acc[2][kVec];
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[0][i] = acc[1][i] = 0.f;
    const RowSource<__half> src{x, C};
    if (active) {
      int64_t r = r0;
      for (; r + 3 * stride < rows; r += 4 * stride) {
        float v[4][kVec];
#pragma unroll
        for (int u = 0; u < 4; ++u) src(r + u * stride, c0, v[u]);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int i = 0; i < kVec; ++i) {
            acc[0][i] += v[u][i];
            acc[1][i] = fmaf(v[u][i], v[u][i], acc[1][i]);
          }
      }
      for (; r < rows; r += stride) {
        float v[kVec];
        src(r, c0, v);
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          acc[0][i] += v[i];
          acc[1][i] = fmaf(v[i], v[i], acc[1][i]);
        }
      }
    }
    SumOut<float, 2> out;
    out.partial = partial;
    out.f32 = sums;
    block_sum_store<float, 2, kVec>(acc, c0, active, C, out);
  }
  if (gridDim.x > 1) {
    grid.sync();
    // finalize: block b adds channels [8b, 8b + 8) over 32 lanes, as finalize_sums.
    __shared__ float sm[2][32][9];
    const int nb = int(gridDim.x);
    const int flat = int(blockIdx.y * gridDim.x + blockIdx.x);
    const int t = int(threadIdx.y * blockDim.x + threadIdx.x);
    const int tx = t % 8, ty = t / 8;  // 8 channels x 32 lanes
    for (int64_t chb = int64_t(flat) * 8; chb < C; chb += int64_t(gridDim.x) * gridDim.y * 8) {
      const int64_t ch = chb + tx;
      float a0 = 0.f, a1 = 0.f;
      if (ch < C)
        for (int b = ty; b < nb; b += 32) {
          a0 += partial[(int64_t(b) * 2 + 0) * C + ch];
          a1 += partial[(int64_t(b) * 2 + 1) * C + ch];
        }
      sm[0][ty][tx] = a0;
      sm[1][ty][tx] = a1;
      __syncthreads();
      for (int s = 16; s > 0; s >>= 1) {
        if (ty < s) {
          sm[0][ty][tx] += sm[0][ty + s][tx];
          sm[1][ty][tx] += sm[1][ty + s][tx];
        }
        __syncthreads();
      }
      if (ty == 0 && ch < C) {
        sums[ch] = sm[0][0][tx];
        sums[C + ch] = sm[1][0][tx];
      }
      __syncthreads();
    }
    grid.sync();
  } else {
    __syncthreads();
  }
  if (active) apply_rows<kVec>(x, sums, gamma, beta, y, rows, C, c0, r0, stride, inv_count);
}

// The apply with finalize_sums folded in: the 8 blocks of a cluster share the
// block's channels, each adds the partials of every 8th channel in
// finalize_sums' order (one warp per channel: lane l over partials l, l + 32,
// ..., then the same pairwise tree as shuffles), and reads the others' sums
// through distributed shared memory. nb == 1: the sums are already final.
constexpr int kCluster = 8;
template <int VEC>
__global__ void apply_cluster_kernel(const __half* x, const float* partial, int nb, const __half* gamma,
                                     const __half* beta, __half* y, int64_t rows, int64_t C, double inv_count) {
  grid_dependency_begin();
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float own[2][256];                               // [sum k][channel of this block]
  const int64_t cb = int64_t(blockIdx.y) * blockDim.x * VEC;  // the block's first channel
  const int nch = int(C - cb < int64_t(blockDim.x) * VEC ? C - cb : int64_t(blockDim.x) * VEC);
  const int warp = int((threadIdx.y * blockDim.x + threadIdx.x) / 32),
            lane = int(threadIdx.x + threadIdx.y * blockDim.x) % 32;
  const int warps = int(blockDim.x * blockDim.y / 32);
  const int rank = int(cluster.block_rank());
  for (int j = rank + kCluster * warp; j < nch; j += kCluster * warps) {
    const int64_t ch = cb + j;
    float a0 = 0.f, a1 = 0.f;
    if (nb == 1) {
      if (lane == 0) {
        a0 = partial[ch];
        a1 = partial[C + ch];
      }
    } else {
      for (int b = lane; b < nb; b += 32) {
        a0 += partial[(int64_t(b) * 2 + 0) * C + ch];
        a1 += partial[(int64_t(b) * 2 + 1) * C + ch];
      }
      for (int s = 16; s > 0; s >>= 1) {
        a0 += __shfl_down_sync(0xffffffffu, a0, s);
        a1 += __shfl_down_sync(0xffffffffu, a1, s);
      }
    }
    if (lane == 0) {
      own[0][j] = a0;
      own[1][j] = a1;
    }
  }
  cluster.sync();
  const int64_t c0 = cb + int64_t(threadIdx.x) * VEC;
  float sums2[2][VEC];
  if (c0 < C)
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const int j = int(c0 - cb) + i;
      const float* o = cluster.map_shared_rank(&own[0][0], unsigned(j % kCluster));
      sums2[0][i] = o[j];
      sums2[1][i] = o[256 + j];
    }
  cluster.sync();  // no block leaves while another still reads its shared memory
  if (c0 >= C) return;
  float sc[VEC], sh[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    float pair[2] = {sums2[0][i], sums2[1][i]};
    // bn_train_affine reads sums[ch] and sums[C + ch]: a 2-element view with C = 1.
    bn_train_affine(pair, gamma + c0 + i, beta + c0 + i, 1, 0, inv_count, 1e-5f, sc[i], sh[i], nullptr, nullptr);
  }
  apply_rows_affine<VEC>(x, sc, sh, y, rows, C, c0, int64_t(blockIdx.x) * blockDim.y + threadIdx.y,
                         int64_t(gridDim.x) * blockDim.y);
}

// channel_stats_kernel's sums, each block's then added to fx_out in fixed
// point by the threads that stored them; block 0 clears the other parity.
template <int VEC>
__global__ void stats_fixed_kernel(RowSource<__half> src, int64_t rows, int64_t C, float* partial,
                                   unsigned long long* fx_out, unsigned long long* fx_clear) {
  grid_dependency_begin();
  if (blockIdx.x == 0 && blockIdx.y == 0)
    for (int64_t i = int64_t(threadIdx.y) * blockDim.x + threadIdx.x; i < 4 * C; i += int64_t(blockDim.x) * blockDim.y)
      fx_clear[i] = 0;
  SumOut<float, 2> out;
  out.partial = partial;
  out.f32 = partial;  // one row block: its sums land where block 0's partials would
  channel_stats_rows<VEC>(src, rows, C, out);
  const int64_t c0 = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * VEC;
  if (threadIdx.y != 0 || c0 >= C) return;
#pragma unroll
  for (int k = 0; k < 2; ++k)
#pragma unroll
    for (int i = 0; i < VEC; ++i)
      fixed_add(fx_out + 2 * (k * C + c0 + i), partial[(int64_t(blockIdx.x) * 2 + k) * C + c0 + i]);
}

// The apply with (scale, shift) from fixed-point sums.
template <int VEC>
__global__ void apply_fixed_kernel(const __half* x, const unsigned long long* fx, const __half* gamma,
                                   const __half* beta, __half* y, int64_t rows, int64_t C, double inv_count) {
  grid_dependency_begin();
  const int64_t c0 = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * VEC;
  if (c0 >= C) return;
  float sc[VEC], sh[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) bn_affine_fixed(fx, gamma, beta, int(C), int(c0 + i), inv_count, 1e-5f, sc[i], sh[i]);
  apply_rows_affine<VEC>(x, sc, sh, y, rows, C, c0, int64_t(blockIdx.x) * blockDim.y + threadIdx.y,
                         int64_t(gridDim.x) * blockDim.y);
}

struct Buffers {
  std::vector<__half*> x, y;
  std::vector<float*> sums;
  __half *gamma = nullptr, *beta = nullptr;
  float* partial = nullptr;
  std::vector<unsigned long long*> fx;  // per layer: two parities of [2 sums][C][lo, hi]
  Buffers() {
    std::vector<__half> h;
    for (const Layer& l : kLayers) {
      const size_t n = size_t(l.rows * l.C);
      h.resize(n);
      for (size_t i = 0; i < n; ++i) h[i] = __float2half(float((i * 2654435761u) % 1000) / 250.f - 1.7f);
      __half *xp, *yp;
      float* sp;
      cudaMalloc(&xp, n * 2);
      cudaMalloc(&yp, n * 2);
      cudaMalloc(&sp, 2 * l.C * 4);
      cudaMemcpy(xp, h.data(), n * 2, cudaMemcpyHostToDevice);
      unsigned long long* fp;
      cudaMalloc(&fp, size_t(8) * l.C * sizeof(unsigned long long));
      cudaMemset(fp, 0, size_t(8) * l.C * sizeof(unsigned long long));
      fx.push_back(fp);
      x.push_back(xp);
      y.push_back(yp);
      sums.push_back(sp);
    }
    std::vector<__half> g(256, __float2half(1.25f)), b(256, __float2half(0.1f));
    cudaMalloc(&gamma, 512);
    cudaMalloc(&beta, 512);
    cudaMemcpy(gamma, g.data(), 512, cudaMemcpyHostToDevice);
    cudaMemcpy(beta, b.data(), 512, cudaMemcpyHostToDevice);
    cudaMalloc(&partial, 8 << 20);
  }
  ~Buffers() {
    for (auto* p : x) cudaFree(p);
    for (auto* p : y) cudaFree(p);
    for (auto* p : sums) cudaFree(p);
    for (auto* p : fx) cudaFree(p);
    cudaFree(gamma);
    cudaFree(beta);
    cudaFree(partial);
  }
};

// Launches the layers' BatchNorm forwards on env's stream, as `mode` says
// (the top of the file); coop 3 adds into parity `parity` and clears the other.
void launch_layers(const ExecEnv& env, const GpuHandles& gh, Buffers& b, int layers, int mode, int parity) {
  const bool coop = mode == 1;
  cudaStream_t s = static_cast<cudaStream_t>(env.stream);
  for (int i = 0; i < layers; ++i) {
    const Layer& l = kLayers[i];
    const ChannelGrid g = channel_grid(l.rows, l.C, kVec, gh.sm_count, kStatsBlocksPerSm, kStatsMinRowsPerThread);
    const double inv = 1.0 / double(l.rows);
    if (mode == 3) {
      unsigned long long* use = b.fx[i] + size_t(4) * l.C * parity;
      unsigned long long* other = b.fx[i] + size_t(4) * l.C * (1 - parity);
      launch_kernel(&env, {g.grid, g.block, sum_smem_bytes<2, kVec>()}, stats_fixed_kernel<kVec>,
                    RowSource<__half>{b.x[i], l.C}, l.rows, l.C, b.partial, use, other);
      const ChannelGrid ga = channel_grid(l.rows, l.C, 4, gh.sm_count, 8, 8);
      launch_kernel(&env, {ga.grid, ga.block, 0}, apply_fixed_kernel<4>, (const __half*)b.x[i],
                    (const unsigned long long*)use, (const __half*)b.gamma, (const __half*)b.beta, b.y[i], l.rows, l.C,
                    inv);
    } else if (mode == 2) {
      // statistics into partials (no finalize), then the apply that finishes them
      SumOut<float, 2> out;
      out.partial = b.partial;
      out.f32 = b.partial;  // one row block: the final sums, read as nb == 1
      launch_kernel(&env, {g.grid, g.block, sum_smem_bytes<2, kVec>()}, channel_stats_kernel<kVec, RowSource<__half>>,
                    RowSource<__half>{b.x[i], l.C}, l.rows, l.C, out);
      ChannelGrid ga = channel_grid(l.rows, l.C, 4, gh.sm_count, 8, 8);
      LaunchShape shape{dim3(unsigned(ceil_div(ga.grid.x, kCluster) * kCluster), ga.grid.y), ga.block, 0};
      shape.cluster_x = kCluster;
      launch_kernel(&env, shape, apply_cluster_kernel<4>, (const __half*)b.x[i], (const float*)b.partial, int(g.grid.x),
                    (const __half*)b.gamma, (const __half*)b.beta, b.y[i], l.rows, l.C, inv);
    } else if (!coop) {
      launch_channel_stats<kVec>(&env, gh, RowSource<__half>{b.x[i], l.C}, l.rows, l.C, b.sums[i], "probe");
      const ChannelGrid ga = channel_grid(l.rows, l.C, 4, gh.sm_count, 8, 8);
      launch_kernel(&env, {ga.grid, ga.block, 0}, apply_kernel<4>, b.x[i], b.sums[i], b.gamma, b.beta, b.y[i], l.rows,
                    l.C, inv);
    } else {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = g.grid;
      cfg.blockDim = g.block;
      cfg.dynamicSmemBytes = sum_smem_bytes<2, kVec>();
      cfg.stream = s;
      cudaLaunchAttribute attrs[2] = {};
      attrs[0].id = cudaLaunchAttributeCooperative;
      attrs[0].val.cooperative = 1;
      attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attrs[1].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attrs;
      cfg.numAttrs = 2;
      TR_GPU_CHECK(cudaLaunchKernelEx(&cfg, coop_kernel, (const __half*)b.x[i], (const __half*)b.gamma,
                                      (const __half*)b.beta, b.y[i], b.partial, b.sums[i], l.rows, l.C, inv));
    }
  }
}

void BM_BnChain(benchmark::State& state) {
  if (!tr::probe::have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int layers = int(state.range(0));
  const int mode = int(state.range(1));
  GpuHandles gh;
  gh.sm_count = query_sm_count(0);
  gh.workspace_bytes = 8 << 20;
  cudaMalloc(&gh.workspace, gh.workspace_bytes);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  ExecEnv env;
  env.stream = s;
  env.gpu = &gh;
  Buffers b;
  {  // the grid must fit on the device at once for a cooperative launch
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, coop_kernel, kChannelBlockThreads,
                                                  sum_smem_bytes<2, kVec>());
    state.counters["coop_blocks_per_sm"] = per_sm;
  }
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  launch_layers(env, gh, b, layers, mode, 0);
  launch_layers(env, gh, b, layers, mode, 1);
  TR_GPU_CHECK(cudaStreamEndCapture(s, &g));
  TR_GPU_CHECK(cudaGraphInstantiate(&exec, g, 0));
  // Checksum of every y after one launch and after another, to compare the
  // variants' bits, and each variant's runs, in the log.
  unsigned long long digest[2] = {0, 0};
  for (int run = 0; run < 2; ++run) {
    TR_GPU_CHECK(cudaGraphLaunch(exec, s));
    TR_GPU_CHECK(cudaStreamSynchronize(s));
    unsigned long long sum = 0;
    for (int i = 0; i < layers; ++i) {
      std::vector<unsigned short> h(size_t(kLayers[i].rows * kLayers[i].C));
      cudaMemcpy(h.data(), b.y[i], h.size() * 2, cudaMemcpyDeviceToHost);
      for (size_t j = 0; j < h.size(); ++j) sum = sum * 1099511628211ull + h[j];
    }
    digest[run] = sum;
  }
  std::printf("[ bn grid sync ] layers %d coop %d: y digest %016llx, again %016llx%s\n", layers, mode, digest[0],
              digest[1], digest[0] == digest[1] ? "" : " (DIFFERS)");
  if (digest[0] != digest[1]) state.SkipWithError("two launches of the graph gave different bits");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto _ : state) {
    cudaEventRecord(e0, s);
    for (int k = 0; k < 10; ++k) cudaGraphLaunch(exec, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    state.SetIterationTime(1e-3 * ms / 20);  // ten launches of two passes
  }
  if (cudaGetLastError() != cudaSuccess) state.SkipWithError("graph launch failed");
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFree(gh.workspace);
}

}  // namespace

BENCHMARK(BM_BnChain)->ArgsProduct({{1, 7}, {0, 1, 2, 3}})->ArgNames({"layers", "coop"})->UseManualTime();
