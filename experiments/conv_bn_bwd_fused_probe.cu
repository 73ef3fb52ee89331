// Probe: can a data-gradient convolution of our own take the backward
// BatchNorm work on both sides of it? The backward half of
// conv_bn_fused_probe.cu. In the cnn's backward, between two BatchNorm +
// ReLU layers a and b with a 3x3 convolution from a's output to b's input,
// tr runs today:
//   b's backward apply   dx_b = k * (relu_grad(dy_b) - mean terms)   (a kernel)
//   the data gradient    dy_a = conv^T(dx_b, w)                      (cuDNN)
//   a's backward reduce  sums of relu_grad(dy_a) and of it * xhat_a  (a kernel,
//                        and finalize_sums)
// conv3x3_fused_cuda.h's kernel takes all of it: the data gradient is its
// product with the filter flipped and transposed (w'[c,t,k] = w[k,8-t,c],
// which the optimizer's f16 copy could write beside w), BnBwdPrologue makes
// dx_b from each dy_b tile as it arrives (the same floats as
// bn_bwd_apply_rows, stored for the filter gradient), and BnBwdReduceSums
// adds a's sums from its f16 output (bn_bwd_reduce_rows' arithmetic).
//
// BM_ConvBnBwdFused/<shape>/<batch>/<path>/<minb>, shapes the cnn's data
// gradients (H, channels in -> out, i.e. the convolution's K -> C): 14,64->64
// 14,128->64  7,128->128  7,256->128  3,256->256, at batch 256 and 1024:
//   path 0  tr's chain today: apply, cuDNN's legacy data gradient (its
//           heuristic's first deterministic algorithm), reduce and finalize_sums;
//   path 1  the fused kernel and finalize_sums;
//   path 2  cuDNN's data gradient alone;
//   path 3  the fused kernel without prologue or sums (against path 2);
//   path 4  the fused kernel alone, b's sums in and a's sums out in 64.64
//           fixed point (no finalize kernel; two parities);
// paths 1, 3 and 4 with minb 1 and 2 (as conv_bn_fused_probe.cu). Timing as
// there (8 chains in one graph, programmatic launch). Before timing, the fused
// path is checked against the chain (path 0 checks 1, path 2 checks 3): dx_b,
// dy_a and a's sums within f16 rounding (rel_err_dx, rel_err_dy,
// rel_err_sums); whether dx_b is the same bits is printed too. One
// '[ conv bn bwd fused ]' line per case; a mismatch fails it.
//   ./tr_experiments --benchmark_filter=BM_ConvBnBwdFused
#include <benchmark/benchmark.h>

#ifdef TR_HAVE_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <iterator>
#include <vector>

#include "experiments/conv3x3_fused_cuda.h"
#include "experiments/cudnn_probe_env.h"
#include "experiments/fused_probe_case.h"
#include "experiments/probe_check.h"
#include "experiments/probe_cudnn_conv3x3.h"
#include "framework/ops/kernels/bn_rows_cuda.h"
#include "framework/ops/kernels/channel_stats_cuda.h"
#include "framework/ops/op_call.h"
#include "tests/bench/device_fill.h"

namespace tr {
namespace {

using namespace tr::cuda;
using namespace tr::cuda::fused3x3;
using cudnn_graph::check_cuda;
using cudnn_graph::DeviceBuf;

constexpr float kEps = 1e-5f;

struct Shape {
  int h, cin, cout;  // the data gradient's: the convolution's K -> C
};
const Shape kShapes[] = {{14, 64, 64}, {14, 128, 64}, {7, 128, 128}, {7, 256, 128}, {3, 256, 256}};

// A BatchNorm + ReLU layer's saved forward state: its input x, gamma, and
// batch = (mean, var), affine = (scale, shift) from x's statistics.
struct BnLayer {
  DeviceBuf<__half> x, gamma, beta;
  DeviceBuf<float> sums, batch, affine;
  BnLayer(int64_t rows, int C)
      : x(size_t(rows * C)),
        gamma(size_t(C)),
        beta(size_t(C)),
        sums(size_t(2 * C)),
        batch(size_t(2 * C)),
        affine(size_t(2 * C)) {}
};

struct Buffers {
  BnLayer a, b;  // a: after the data gradient, b: before it
  DeviceBuf<__half> dy_b, w, w_t, dx_ref, dx_fused, dy_a_ref, dy_a_fused;
  DeviceBuf<float> dsums_b, dsums_ref, dsums_fused, partial;
  DeviceBuf<unsigned long long> fx_b, fx_acc;  // fixed point: b's backward sums; a's two parities
  explicit Buffers(const FusedShape& s)
      : a(s.rows(), s.K),
        b(s.rows(), s.C),
        dy_b(size_t(s.rows() * s.C)),
        w(size_t(s.C) * 9 * s.K),
        w_t(size_t(s.K) * 9 * s.C),
        dx_ref(size_t(s.rows() * s.C)),
        dx_fused(size_t(s.rows() * s.C)),
        dy_a_ref(size_t(s.rows() * s.K)),
        dy_a_fused(size_t(s.rows() * s.K)),
        dsums_b(size_t(2 * s.C)),
        dsums_ref(size_t(2 * s.K)),
        dsums_fused(size_t(2 * s.K)),
        partial(size_t(s.row_blocks()) * 2 * s.K),
        fx_b(size_t(4) * s.C),
        fx_acc(size_t(8) * s.K) {}
};

// batch and affine of a layer from its sums, as the forward's apply writes them.
__global__ void forward_state_kernel(const float* sums, const __half* gamma, const __half* beta, int C,
                                     double inv_count, float* batch, float* affine) {
  const int c = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= C) return;
  float sc, sh;
  bn_train_affine(sums, gamma, beta, C, c, inv_count, kEps, sc, sh, batch, affine);
}

// w_t[c, t, k] = w[k, 8 - t, c]: the data gradient as a forward convolution.
__global__ void flip_transpose_kernel(const __half* w, __half* w_t, int K, int C) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(K) * 9 * C) return;
  const int k = int(i / (9 * C)), t = int(i / C % 9), c = int(i % C);
  w_t[(int64_t(c) * 9 + t) * K + k] = w[(int64_t(k) * 9 + (8 - t)) * C + c];
}

// tr's two backward phases, through bn_rows_cuda.h's device functions.
template <int VEC>
__global__ void bwd_apply_kernel(const __half* dy, const float* affine, const __half* x, const float* batch,
                                 const __half* gamma, const float* dsums, __half* dx, int64_t rows, int64_t C,
                                 double inv_count) {
  grid_dependency_begin();
  bn_bwd_apply_rows<__half, VEC>(dy, affine, x, batch, gamma, dsums, dx, rows, C, inv_count, kEps, true);
}
template <int VEC>
__global__ void bwd_reduce_kernel(const __half* dy, const float* affine, const __half* x, const float* batch,
                                  int64_t rows, int64_t C, SumOut<__half, 2> out) {
  grid_dependency_begin();
  bn_bwd_reduce_rows<__half, VEC>(dy, affine, x, batch, rows, C, kEps, true, out);
}
// dsums f32[2, C] of dy over layer l, as BnReluBwdReduce launches it (its grid, then finalize_sums).
void launch_reduce(const ExecEnv& env, const GpuHandles& gh, const __half* dy, const BnLayer& l, int64_t rows,
                   int64_t C, float* dsums) {
  const ChannelGrid g = channel_grid(rows, C, 4, gh.sm_count, kStatsBlocksPerSm, kStatsMinRowsPerThread);
  SumOut<__half, 2> out;
  out.partial = static_cast<float*>(gh.workspace);
  out.f32 = dsums;
  launch_kernel(&env, {g.grid, g.block, sum_smem_bytes<2, 4>()}, bwd_reduce_kernel<4>, dy, (const float*)l.affine.p,
                (const __half*)l.x.p, (const float*)l.batch.p, rows, C, out);
  launch_finalize<__half, 2>(g, C, out, &env);
}

// One chain of `path` (see the top of the file); path 4 adds a's sums into
// fixed-point parity `parity` and clears the other.
void launch_path(int path, int parity, const FusedShape& s, Buffers& b, const probe::CudnnConv3x3& conv,
                 cudnnHandle_t h, const ExecEnv& env, const GpuHandles& gh) {
  const double inv = 1.0 / double(s.rows());
  if (path == 0 || path == 2) {
    if (path == 0) {
      const ChannelGrid ga = channel_grid(s.rows(), s.C, 4, gh.sm_count, 8, 8);
      launch_kernel(&env, {ga.grid, ga.block, 0}, bwd_apply_kernel<4>, (const __half*)b.dy_b.p,
                    (const float*)b.b.affine.p, (const __half*)b.b.x.p, (const float*)b.b.batch.p,
                    (const __half*)b.b.gamma.p, (const float*)b.dsums_b.p, b.dx_ref.p, s.rows(), int64_t(s.C), inv);
    }
    conv.run(h, path == 0 ? b.dx_ref.p : b.dy_b.p, b.w.p, b.dy_a_ref.p);
    if (path == 0) launch_reduce(env, gh, b.dy_a_ref.p, b.a, s.rows(), s.K, b.dsums_ref.p);
    return;
  }
  if (path == 3) {
    launch_fused<NoPrologue, NoSums, 0>(env, s, b.dy_b.p, b.w_t.p, b.dy_a_fused.p, {}, {}, {});
    return;
  }
  BnBwdPrologue pro;
  pro.x = b.b.x.p;
  pro.affine = b.b.affine.p;
  pro.batch = b.b.batch.p;
  pro.gamma = b.b.gamma.p;
  pro.inv_count = inv;
  pro.dx = b.dx_fused.p;
  BnBwdReduceSums epi;
  epi.x = b.a.x.p;
  epi.affine = b.a.affine.p;
  epi.batch = b.a.batch.p;
  SumsOut out;
  if (path == 1) {
    pro.dsums = b.dsums_b.p;
    out.partial = b.partial.p;
    launch_fused<BnBwdPrologue, BnBwdReduceSums, 1>(env, s, b.dy_b.p, b.w_t.p, b.dy_a_fused.p, pro, epi, out);
    SumOut<float, 2> fin;
    fin.partial = b.partial.p;
    fin.f32 = b.dsums_fused.p;
    launch_kernel(&env, {unsigned(ceil_div(s.K, 32)), dim3(32, 32), 0}, finalize_sums<float, 2>,
                  (const float*)b.partial.p, int(s.row_blocks()), int64_t(s.K), fin);
    return;
  }
  const size_t words = size_t(4) * s.K;
  pro.fx = b.fx_b.p;
  out.fx = b.fx_acc.p + parity * words;
  out.fx_clear = b.fx_acc.p + (1 - parity) * words;
  launch_fused<BnBwdPrologue, BnBwdReduceSums, 2>(env, s, b.dy_b.p, b.w_t.p, b.dy_a_fused.p, pro, epi, out);
}

// Fills a layer's x, gamma, beta and makes its forward state.
void make_layer(BnLayer& l, int64_t rows, int C, uint64_t seed, const ExecEnv& env, const GpuHandles& gh) {
  bench::device_fill(l.x.p, DType::F16, rows * C, -1.0, 3.0, seed);
  bench::device_fill(l.gamma.p, DType::F16, C, 0.5, 1.5, seed + 1);
  bench::device_fill(l.beta.p, DType::F16, C, -0.5, 0.5, seed + 2);
  launch_channel_stats<8>(&env, gh, RowSource<__half>{l.x.p, C}, rows, C, l.sums.p, "probe");
  forward_state_kernel<<<unsigned(ceil_div(C, 256)), 256, 0, static_cast<cudaStream_t>(env.stream)>>>(
      l.sums.p, l.gamma.p, l.beta.p, C, 1.0 / double(rows), l.batch.p, l.affine.p);
}

void BM_ConvBnBwdFused(benchmark::State& state) {
  if (!probe::have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const Shape& sh = kShapes[state.range(0)];
  const int path = int(state.range(2));
  GpuHandles gh;
  gh.sm_count = query_sm_count(0);
  const FusedShape s = fused_shape(int(state.range(1)), sh.h, sh.cin, sh.cout, gh.sm_count, int(state.range(3)));
  try {
    cudnn_graph::ProbeEnv pe;
    Buffers b(s);
    DeviceBuf<char> sums_ws(size_t(16) << 20);
    gh.workspace = sums_ws.p;
    gh.workspace_bytes = size_t(16) << 20;
    ExecEnv env;
    env.stream = pe.stream;
    env.gpu = &gh;
    // The convolution maps a's output (s.K channels) to b's input (s.C): its
    // filter is w[s.C, 3, 3, s.K], and cuDNN's data gradient goes from s.C to s.K.
    probe::CudnnConv3x3 conv(pe.h, probe::CudnnConv3x3::Dir::DataGradient, s.N, s.H, s.K, s.C);
    make_layer(b.a, s.rows(), s.K, 21, env, gh);
    make_layer(b.b, s.rows(), s.C, 31, env, gh);
    bench::device_fill(b.dy_b.p, DType::F16, s.rows() * s.C, -1.0, 1.0, 41);
    bench::device_fill(b.w.p, DType::F16, int64_t(s.C) * 9 * s.K, -0.06, 0.06, 42);
    flip_transpose_kernel<<<unsigned(ceil_div(int64_t(s.C) * 9 * s.K, 256)), 256, 0, pe.stream>>>(b.w.p, b.w_t.p, s.C,
                                                                                                  s.K);
    launch_reduce(env, gh, b.dy_b.p, b.b, s.rows(), s.C, b.dsums_b.p);  // b's sums, as the layer above makes them
    check_cuda(cudaMemsetAsync(b.fx_b.p, 0, size_t(4) * s.C * 8, pe.stream), "zero");
    check_cuda(cudaMemsetAsync(b.fx_acc.p, 0, size_t(8) * s.K * 8, pe.stream), "zero");
    to_fixed_kernel<float><<<unsigned(ceil_div(2 * s.C, 256)), 256, 0, pe.stream>>>(b.dsums_b.p, 2 * s.C, b.fx_b.p);
    check_cuda(cudaStreamSynchronize(pe.stream), "inputs");

    // The check: the fused path against the chain it replaces (once per case).
    const std::string key = probe::case_key(s, path);
    const probe::CheckResult& check = probe::checked_once("conv bn bwd fused " + key, [&] {
      const int fused = probe::fused_path(path);
      launch_path(probe::reference_path(path), 0, s, b, conv, pe.h, env, gh);
      launch_path(fused, 0, s, b, conv, pe.h, env, gh);
      check_cuda(cudaStreamSynchronize(pe.stream), "check run");
      const size_t n_in = size_t(s.rows() * s.C), n_out = size_t(s.rows() * s.K);
      const double err_dy = probe::rel_l2(probe::download(b.dy_a_fused.p, n_out), probe::download(b.dy_a_ref.p, n_out));
      double err_dx = 0, err_sums = 0;
      bool dx_same = false;
      if (fused != 3) {
        const auto dxf = probe::download(b.dx_fused.p, n_in), dxr = probe::download(b.dx_ref.p, n_in);
        err_dx = probe::rel_l2(dxf, dxr);
        dx_same = probe::same_bits(dxf, dxr);
        err_sums = probe::fused_sums_error(fused, b.dsums_fused.p, b.fx_acc.p, b.dsums_ref.p, s.K);
      }
      const bool ok = err_dx < 1e-3 && err_dy < 2e-3 && err_sums < 2e-3;
      char detail[192];
      std::snprintf(detail, sizeof detail, "dx %s, rel_err_dx %.2e, rel_err_dy %.2e, rel_err_sums %.2e",
                    fused == 3 ? "not made"
                    : dx_same  ? "same bits"
                               : "not the same bits",
                    err_dx, err_dy, err_sums);
      probe::print_case("conv bn bwd fused", key, s, ok, detail);
      return probe::CheckResult{ok, {{"rel_err_dx", err_dx}, {"rel_err_dy", err_dy}, {"rel_err_sums", err_sums}}};
    });
    // The timed chains start from zeroed fixed-point sums, as the check did.
    check_cuda(cudaMemsetAsync(b.fx_acc.p, 0, size_t(8) * s.K * 8, pe.stream), "zero");
    probe::finish_case(state, s, check, pe, [&](int i) { launch_path(path, i % 2, s, b, conv, pe.h, env, gh); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace
}  // namespace tr

BENCHMARK(tr::BM_ConvBnBwdFused)->Apply([](benchmark::internal::Benchmark* b) {
  tr::probe::fused_probe_args(b, int(std::size(tr::kShapes)));
});
#endif  // TR_HAVE_CUDA
