// Probe: can a 3x3 convolution of our own take the forward BatchNorm work
// around it? The cnn's last unmet target is at most 58 kernels per step at
// batch 256; 41 of its 85 are BatchNorm kernels on either side of cuDNN's
// convolutions, and cuDNN's runtime fusion has no deterministic engine for the
// pattern (cudnn_fusion_probe.cu). conv3x3_fused_cuda.h's kernel here takes
//   prologue  BnReluPrologue: the BatchNorm + ReLU before the convolution,
//             a = relu(scale * x + shift) from the statistics, the same floats
//             as bn_relu_apply, stored for the backward;
//   epilogue  OutputStats: the BatchNorm statistics of its f16 output.
//
// BM_ConvBnFused/<shape>/<batch>/<path>/<minb>, shapes the cnn's six deep
// convolutions (H, C -> K): 28,32->64  14,64->64  14,64->128  7,128->128
// 7,128->256  3,256->256, at batch 256 and 1024:
//   path 0  tr's chain today: apply kernel, cuDNN's legacy convolution (its
//           heuristic's first deterministic algorithm), channel_stats and
//           finalize_sums;
//   path 1  the fused kernel and finalize_sums;
//   path 2  cuDNN's convolution alone;
//   path 3  the fused kernel without prologue or statistics (the raw
//           convolution, against path 2);
//   path 4  the fused kernel alone: the statistics in and out in 64.64 fixed
//           point (probe_fixed_sums_cuda.h), added by every block with integer
//           atomics, which give the same bits in any order, so no finalize
//           kernel; two parities, each kernel clearing the one the next uses;
// paths 1, 3 and 4 with minb 1 (launch bounds for one block per SM, two
// shared-memory stages when C > 32) and minb 2 (at most 128 registers, one
// stage, two blocks per SM: one block's loads beside the other's products).
// Each path is captured 8 times over in one graph (programmatic launch on, as
// in a step) and timed by CUDA events. Counters: us (per chain), nodes (graph
// nodes per chain), rows_per_block, blocks, smem_kb. Before timing, the fused
// path is checked against tr's chain (path 0 checks 1, path 2 checks 3): a
// must be the same bits, y and the sums within f16 rounding (rel_err_y,
// rel_err_sums, relative L2); the '[ conv bn fused ]' line says so, and a
// mismatch fails the case.
//   ./tr_experiments --benchmark_filter=BM_ConvBnFused
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
#include "experiments/probe_bn_apply_cuda.h"
#include "experiments/probe_check.h"
#include "experiments/probe_cudnn_conv3x3.h"
#include "framework/ops/kernels/channel_stats_cuda.h"
#include "framework/ops/op_call.h"
#include "tests/bench/device_fill.h"

namespace tr {
namespace {

using namespace tr::cuda;
using namespace tr::cuda::fused3x3;
using cudnn_graph::check_cuda;
using cudnn_graph::DeviceBuf;

struct Shape {
  int h, c, k;
};
const Shape kShapes[] = {{28, 32, 64}, {14, 64, 64}, {14, 64, 128}, {7, 128, 128}, {7, 128, 256}, {3, 256, 256}};

// Every buffer of a case: a and y of tr's chain (ref) and of the fused kernel.
struct Buffers {
  DeviceBuf<__half> x, w, gamma, beta, a_ref, a_fused, y_ref, y_fused;
  DeviceBuf<float> sums_in, sums_ref, sums_fused, partial;
  DeviceBuf<unsigned long long> fx_in, fx_acc;  // fixed point: sums_in's; the output's two parities
  explicit Buffers(const FusedShape& s)
      : x(size_t(s.rows() * s.C)),
        w(size_t(s.K) * 9 * s.C),
        gamma(size_t(s.C)),
        beta(size_t(s.C)),
        a_ref(size_t(s.rows() * s.C)),
        a_fused(size_t(s.rows() * s.C)),
        y_ref(size_t(s.rows() * s.K)),
        y_fused(size_t(s.rows() * s.K)),
        sums_in(size_t(2 * s.C)),
        sums_ref(size_t(2 * s.K)),
        sums_fused(size_t(2 * s.K)),
        partial(size_t(s.row_blocks()) * 2 * s.K),
        fx_in(size_t(4) * s.C),
        fx_acc(size_t(8) * s.K) {}
};

// One chain of `path` on env's stream (see the top of the file); path 4 adds
// its statistics into fixed-point parity `parity` and clears the other.
void launch_path(int path, int parity, const FusedShape& s, Buffers& b, const probe::CudnnConv3x3& conv,
                 cudnnHandle_t h, const ExecEnv& env, const GpuHandles& gh) {
  const double inv = 1.0 / double(s.rows());
  if (path == 0 || path == 2) {
    if (path == 0) {
      const ChannelGrid ga = channel_grid(s.rows(), s.C, 4, gh.sm_count, 8, 8);
      launch_kernel(&env, {ga.grid, ga.block, 0}, apply_kernel<4>, (const __half*)b.x.p, (const float*)b.sums_in.p,
                    (const __half*)b.gamma.p, (const __half*)b.beta.p, b.a_ref.p, s.rows(), int64_t(s.C), inv);
    }
    conv.run(h, path == 0 ? b.a_ref.p : b.x.p, b.w.p, b.y_ref.p);
    if (path == 0)
      launch_channel_stats<8>(&env, gh, RowSource<__half>{b.y_ref.p, s.K}, s.rows(), s.K, b.sums_ref.p, "probe");
    return;
  }
  if (path == 3) {
    launch_fused<NoPrologue, NoSums, 0>(env, s, b.x.p, b.w.p, b.y_fused.p, {}, {}, {});
    return;
  }
  BnReluPrologue pro;
  pro.gamma = b.gamma.p;
  pro.beta = b.beta.p;
  pro.inv_count = inv;
  pro.a = b.a_fused.p;
  SumsOut out;
  if (path == 1) {
    pro.sums = b.sums_in.p;
    out.partial = b.partial.p;
    launch_fused<BnReluPrologue, OutputStats, 1>(env, s, b.x.p, b.w.p, b.y_fused.p, pro, {}, out);
    SumOut<float, 2> fin;
    fin.partial = b.partial.p;
    fin.f32 = b.sums_fused.p;
    launch_kernel(&env, {unsigned(ceil_div(s.K, 32)), dim3(32, 32), 0}, finalize_sums<float, 2>,
                  (const float*)b.partial.p, int(s.row_blocks()), int64_t(s.K), fin);
    return;
  }
  const size_t words = size_t(4) * s.K;  // one parity: [2 sums][K][lo, hi]
  pro.fx = b.fx_in.p;
  out.fx = b.fx_acc.p + parity * words;
  out.fx_clear = b.fx_acc.p + (1 - parity) * words;
  launch_fused<BnReluPrologue, OutputStats, 2>(env, s, b.x.p, b.w.p, b.y_fused.p, pro, {}, out);
}

void BM_ConvBnFused(benchmark::State& state) {
  if (!probe::have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const Shape& sh = kShapes[state.range(0)];
  const int path = int(state.range(2));
  GpuHandles gh;
  gh.sm_count = query_sm_count(0);
  const FusedShape s = fused_shape(int(state.range(1)), sh.h, sh.c, sh.k, gh.sm_count, int(state.range(3)));
  try {
    cudnn_graph::ProbeEnv pe;
    Buffers b(s);
    DeviceBuf<char> stats_ws(size_t(16) << 20);
    gh.workspace = stats_ws.p;
    gh.workspace_bytes = size_t(16) << 20;
    ExecEnv env;
    env.stream = pe.stream;
    env.gpu = &gh;
    probe::CudnnConv3x3 conv(pe.h, probe::CudnnConv3x3::Dir::Forward, s.N, s.H, s.C, s.K);
    // Inputs: x around a shifted mean, weights of a He-like scale, and the
    // statistics of x itself (what the BatchNorm before the convolution uses).
    bench::device_fill(b.x.p, DType::F16, s.rows() * s.C, -1.0, 3.0, 11);
    bench::device_fill(b.w.p, DType::F16, int64_t(s.K) * 9 * s.C, -0.06, 0.06, 12);
    bench::device_fill(b.gamma.p, DType::F16, s.C, 0.5, 1.5, 13);
    bench::device_fill(b.beta.p, DType::F16, s.C, -0.5, 0.5, 14);
    launch_channel_stats<8>(&env, gh, RowSource<__half>{b.x.p, s.C}, s.rows(), s.C, b.sums_in.p, "probe");
    check_cuda(cudaMemsetAsync(b.fx_in.p, 0, size_t(4) * s.C * 8, pe.stream), "zero");
    check_cuda(cudaMemsetAsync(b.fx_acc.p, 0, size_t(8) * s.K * 8, pe.stream), "zero");
    to_fixed_kernel<float><<<unsigned(ceil_div(2 * s.C, 256)), 256, 0, pe.stream>>>(b.sums_in.p, 2 * s.C, b.fx_in.p);
    check_cuda(cudaStreamSynchronize(pe.stream), "inputs");

    // The check: the fused path against the chain it replaces (once per case).
    const std::string key = probe::case_key(s, path);
    const probe::CheckResult& check = probe::checked_once("conv bn fused " + key, [&] {
      const int fused = probe::fused_path(path);
      launch_path(probe::reference_path(path), 0, s, b, conv, pe.h, env, gh);
      launch_path(fused, 0, s, b, conv, pe.h, env, gh);
      check_cuda(cudaStreamSynchronize(pe.stream), "check run");
      const size_t ny = size_t(s.rows() * s.K), na = size_t(s.rows() * s.C);
      const double err_y = probe::rel_l2(probe::download(b.y_fused.p, ny), probe::download(b.y_ref.p, ny));
      bool a_same = true;
      double err_sums = 0;
      if (fused != 3) {
        a_same = probe::same_bits(probe::download(b.a_fused.p, na), probe::download(b.a_ref.p, na));
        err_sums = probe::fused_sums_error(fused, b.sums_fused.p, b.fx_acc.p, b.sums_ref.p, s.K);
      }
      const bool ok = a_same && err_y < 2e-3 && err_sums < 1e-3;
      char detail[160];
      std::snprintf(detail, sizeof detail, "a %s, rel_err_y %.2e, rel_err_sums %.2e",
                    fused != 3 ? (a_same ? "same bits" : "DIFFERS") : "not made", err_y, err_sums);
      probe::print_case("conv bn fused", key, s, ok, detail);
      return probe::CheckResult{ok, {{"rel_err_y", err_y}, {"rel_err_sums", err_sums}}};
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

BENCHMARK(tr::BM_ConvBnFused)->Apply([](benchmark::internal::Benchmark* b) {
  tr::probe::fused_probe_args(b, int(std::size(tr::kShapes)));
});
#endif  // TR_HAVE_CUDA
