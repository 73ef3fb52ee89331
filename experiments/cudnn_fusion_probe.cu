// Whether cuDNN's runtime fusion can take the cnn's BatchNorm work into its
// convolutions, and at what speed (issue: fused conv / BatchNorm / ReLU). For
// each convolution of the cnn whose input is a BN + ReLU output, three graphs
// with that BN + ReLU as the prologue, r = relu(x * scale[C] + bias[C]):
//   scale_bias_relu_conv           x[N,H,W,C] f16 -> r -> conv3x3 (w[K,3,3,C]) -> y[N,H,W,K] f16
//   scale_bias_relu_conv_genstats  the same, and sum[K], sqsum[K] f32 of y
//                                  (where a BN follows the conv directly)
//   scale_bias_relu_wgrad          r and dy[N,H,W,K] f16 -> dw[K,3,3,C] f16
// With all three, r would never be written or read again. Built with the
// backend graph API (framework/ops/conv_plans/cudnn_graph_cuda.h); the first kMaxConfigs engine configs of
// heuristic mode A and of the fallback list are built, timed, and marked
// deterministic or not (CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC). tr keeps its
// modes bit-identical, so only a deterministic engine could serve; the fastest
// one is checked against the unfused path (our reference prologue, rounded to
// f16 as bn_relu_apply stores it, and cuDNN's legacy API with a deterministic
// algorithm) and run twice to see that it repeats to the bit.
// Counters: configs, plans, deterministic_plans, best_det_us, best_any_us,
// out_rel_err, sum_rel_err, out_repeatable, sums_repeatable, repeatable (both),
// scale_bias_f32. Output and statistics repeat apart: an engine whose output
// repeats could still serve with tr's own statistics after it. Compare best_det_us
// with tr_bench_ops's unfused cases of the same shape on the same GPU
// (cnn/bB/conv_fwd, conv_bwd_filter, bn_relu_apply, bn_stats), which the GPU
// check's fusion-probe part runs after it.
//   ./tr_experiments --benchmark_filter=cudnn_fusion
#include <benchmark/benchmark.h>

#ifdef TR_HAVE_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "experiments/cudnn_pointwise.h"
#include "experiments/cudnn_probe_env.h"
#include "framework/core/error.h"
#include "framework/core/rng.h"

namespace tr {
namespace {

using cudnn_graph::check_cuda;
using cudnn_graph::Desc;
using cudnn_graph::DeviceBuf;

constexpr int64_t kMaxConfigs = 4;  // per heuristic: a runtime-compiled engine takes a compilation each

enum class Pattern { Conv, ConvStats, Wgrad };
const char* pattern_name(Pattern p) {
  return p == Pattern::Conv        ? "scale_bias_relu_conv"
         : p == Pattern::ConvStats ? "scale_bias_relu_conv_genstats"
                                   : "scale_bias_relu_wgrad";
}

struct Case {
  int64_t batch, side, c, k;  // N, H = W, C -> K
  Pattern pattern;
  int64_t rows() const { return batch * side * side; }
  int64_t out_elems() const { return pattern == Pattern::Wgrad ? k * 9 * c : rows() * k; }
};

enum Uid : int64_t { kX = 1, kScale, kBias, kW, kY, kSum, kSqSum, kDy, kDw, kAfterScale, kAfterBias, kAfterRelu };

// The operation graph of one case; scale and bias of type `sb`.
struct FusedGraph {
  std::vector<Desc> keep;  // what the graph's operations refer to
  Desc graph{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};

  FusedGraph(cudnnHandle_t h, const Case& c, cudnnDataType_t sb) {
    using namespace cudnn_graph;
    keep.reserve(32);  // references into it stay valid
    const int64_t N = c.batch, H = c.side, C = c.c, K = c.k;
    const cudnnDataType_t f16 = CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
    auto& x = keep.emplace_back(tensor(kX, N, C, H, H, f16, false));
    auto& scale = keep.emplace_back(tensor(kScale, 1, C, 1, 1, sb, false));
    auto& bias = keep.emplace_back(tensor(kBias, 1, C, 1, 1, sb, false));
    auto& a = keep.emplace_back(tensor(kAfterScale, N, C, H, H, f32, true));
    auto& b = keep.emplace_back(tensor(kAfterBias, N, C, H, H, f32, true));
    auto& r = keep.emplace_back(tensor(kAfterRelu, N, C, H, H, f32, true));
    auto& mul = keep.emplace_back(pointwise_mode(CUDNN_POINTWISE_MUL));
    auto& add = keep.emplace_back(pointwise_mode(CUDNN_POINTWISE_ADD));
    auto& relu = keep.emplace_back(pointwise_mode(CUDNN_POINTWISE_RELU_FWD));
    std::vector<cudnnBackendDescriptor_t> ops;
    ops.push_back(keep.emplace_back(pointwise_op(mul, x, &scale, a)).get());
    ops.push_back(keep.emplace_back(pointwise_op(add, a, &bias, b)).get());
    ops.push_back(keep.emplace_back(pointwise_op(relu, b, nullptr, r)).get());
    auto& conv = keep.emplace_back(convolution(1));
    const float alpha = 1.f, beta = 0.f;
    if (c.pattern == Pattern::Wgrad) {
      auto& dy = keep.emplace_back(tensor(kDy, N, K, H, H, f16, false));
      auto& dw = keep.emplace_back(tensor(kDw, K, C, 3, 3, f16, false));
      auto& op = keep.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
      op.desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, r)
          .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, dy)
          .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, dw)
          .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta)
          .finalize();
      ops.push_back(op.get());
    } else {
      auto& w = keep.emplace_back(tensor(kW, K, C, 3, 3, f16, false));
      auto& y = keep.emplace_back(tensor(kY, N, K, H, H, f16, false));
      auto& op = keep.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      op.desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, r)
          .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
          .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
          .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta)
          .finalize();
      ops.push_back(op.get());
      if (c.pattern == Pattern::ConvStats) {
        auto& sum = keep.emplace_back(tensor(kSum, 1, K, 1, 1, f32, false));
        auto& sq = keep.emplace_back(tensor(kSqSum, 1, K, 1, 1, f32, false));
        const cudnnGenStatsMode_t mode = CUDNN_GENSTATS_SUM_SQSUM;
        auto& gs = keep.emplace_back(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
        gs.set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &mode)
            .set(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32)
            .desc(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, y)
            .desc(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, sum)
            .desc(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, sq)
            .finalize();
        ops.push_back(gs.get());
      }
    }
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data())
        .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
        .finalize();
  }
};

// r = relu(x * scale + bias) rounded to f16 (what bn_relu_apply stores), [rows, C].
__global__ void scale_bias_relu_kernel(const __half* x, const float* scale, const float* bias, __half* r, int64_t n,
                                       int C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % C);
    r[i] = __float2half_rn(fmaxf(0.f, __half2float(x[i]) * scale[c] + bias[c]));
  }
}

// Per channel of y[rows, K]: sum, sum of squares and sum of |y|, in f64 (a
// reference, not a fast kernel).
__global__ void channel_sums_kernel(const __half* y, int64_t rows, int K, double* out) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= K) return;
  double s = 0, q = 0, a = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double v = __half2float(y[r * K + k]);
    s += v;
    q += v * v;
    a += fabs(v);
  }
  out[3 * k] = s;
  out[3 * k + 1] = q;
  out[3 * k + 2] = a;
}

__global__ void float_to_half_kernel(const float* in, __half* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(in[i]);
}

template <class T>
std::vector<T> to_host(const T* p, size_t n) {
  std::vector<T> v(n);
  check_cuda(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "copy back");
  return v;
}

void upload_random_half(__half* dst, size_t n, float lo, float hi, uint64_t seed) {
  Rng rng(seed);
  std::vector<__half> v(n);
  for (auto& e : v) e = __float2half_rn(rng.uniform(lo, hi));
  check_cuda(cudaMemcpy(dst, v.data(), n * sizeof(__half), cudaMemcpyHostToDevice), "upload");
}

// The inputs and outputs of one case: the fused plans write out[0] (and
// sums[0]); the second run of the chosen plan writes out[1]; the unfused path
// writes ref.
struct CaseData {
  int64_t C, K;
  DeviceBuf<__half> x, r, w, dy, out0, out1, ref, sb_half;
  DeviceBuf<float> sb, sums0, sums1;
  DeviceBuf<double> ref_sums;
  explicit CaseData(const Case& c)
      : C(c.c),
        K(c.k),
        x(size_t(c.rows() * c.c)),
        r(size_t(c.rows() * c.c)),
        w(size_t(c.k * 9 * c.c)),
        dy(size_t(c.rows() * c.k)),
        out0(size_t(c.out_elems())),
        out1(size_t(c.out_elems())),
        ref(size_t(c.out_elems())),
        sb_half(size_t(2 * c.c)),
        sb(size_t(2 * c.c)),
        sums0(size_t(2 * c.k)),
        sums1(size_t(2 * c.k)),
        ref_sums(size_t(3 * c.k)) {
    upload_random_half(x.p, size_t(c.rows() * C), -1.f, 1.f, 11);
    upload_random_half(w.p, size_t(K * 9 * C), -0.1f, 0.1f, 12);
    upload_random_half(dy.p, size_t(c.rows() * K), -0.01f, 0.01f, 13);
    Rng rng(14);
    std::vector<float> h(size_t(2 * C));
    for (int64_t i = 0; i < C; ++i) h[size_t(i)] = rng.uniform(0.5f, 1.5f);       // scale
    for (int64_t i = C; i < 2 * C; ++i) h[size_t(i)] = rng.uniform(-0.5f, 0.5f);  // bias
    check_cuda(cudaMemcpy(sb.p, h.data(), h.size() * 4, cudaMemcpyHostToDevice), "upload scale, bias");
    float_to_half_kernel<<<int((2 * C + 255) / 256), 256>>>(sb.p, sb_half.p, int(2 * C));
    check_cuda(cudaDeviceSynchronize(), "scale, bias to f16");
  }
};

// The unfused path into data.ref (and data.ref_sums): the prologue kernel, then
// cuDNN's legacy convolution or filter gradient with its first deterministic algorithm.
void unfused(cudnnHandle_t h, cudaStream_t stream, const Case& c, CaseData& d) {
  using cudnn_graph::check;
  const int N = int(c.batch), H = int(c.side), C = int(c.c), K = int(c.k);
  scale_bias_relu_kernel<<<1024, 256, 0, stream>>>(d.x.p, d.sb.p, d.sb.p + C, d.r.p, c.rows() * C, C);
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  check(cudnnCreateTensorDescriptor(&xd), "x");
  check(cudnnCreateTensorDescriptor(&yd), "y");
  check(cudnnCreateFilterDescriptor(&wd), "w");
  check(cudnnCreateConvolutionDescriptor(&cd), "conv");
  check(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, N, C, H, H), "x");
  check(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, N, K, H, H), "y");
  check(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, K, C, 3, 3), "w");
  check(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "conv");
  check(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH), "math");
  const float one = 1.f, zero = 0.f;
  int got = 0;
  size_t ws_bytes = 0;
  if (c.pattern == Pattern::Wgrad) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, xd, yd, cd, wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                                                        &got, perf),
          "filter gradient algorithms");
    const auto* pick = std::find_if(perf, perf + got, [](const auto& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC;
    });
    if (pick == perf + got) throw Error("no deterministic legacy filter gradient for the reference");
    check(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, xd, yd, cd, wd, pick->algo, &ws_bytes), "workspace");
    DeviceBuf<char> ws(ws_bytes);
    check(cudnnConvolutionBackwardFilter(h, &one, xd, d.r.p, yd, d.dy.p, cd, pick->algo, ws.p, ws_bytes, &zero, wd,
                                         d.ref.p),
          "legacy filter gradient");
    check_cuda(cudaStreamSynchronize(stream), "sync");
  } else {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
          "forward algorithms");
    const auto* pick = std::find_if(perf, perf + got, [](const auto& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC;
    });
    if (pick == perf + got) throw Error("no deterministic legacy convolution for the reference");
    check(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, pick->algo, &ws_bytes), "workspace");
    DeviceBuf<char> ws(ws_bytes);
    check(cudnnConvolutionForward(h, &one, xd, d.r.p, wd, d.w.p, cd, pick->algo, ws.p, ws_bytes, &zero, yd, d.ref.p),
          "legacy convolution");
    channel_sums_kernel<<<int((K + 63) / 64), 64, 0, stream>>>(d.ref.p, c.rows(), K, d.ref_sums.p);
    check_cuda(cudaStreamSynchronize(stream), "sync");
  }
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
}

// The variant pack of one run: its output into out (and sums).
Desc variant_pack(const Case& c, CaseData& d, bool f32_scale_bias, __half* out, float* sums, void* workspace) {
  void* scale = f32_scale_bias ? static_cast<void*>(d.sb.p) : static_cast<void*>(d.sb_half.p);
  void* bias = f32_scale_bias ? static_cast<void*>(d.sb.p + d.C) : static_cast<void*>(d.sb_half.p + d.C);
  std::vector<void*> ptrs = {d.x.p, scale, bias};
  std::vector<int64_t> uids = {kX, kScale, kBias};
  if (c.pattern == Pattern::Wgrad) {
    ptrs.insert(ptrs.end(), {d.dy.p, out});
    uids.insert(uids.end(), {kDy, kDw});
  } else {
    ptrs.insert(ptrs.end(), {d.w.p, out});
    uids.insert(uids.end(), {kW, kY});
  }
  if (c.pattern == Pattern::ConvStats) {
    ptrs.insert(ptrs.end(), {sums, sums + d.K});
    uids.insert(uids.end(), {kSum, kSqSum});
  }
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data())
      .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
      .finalize();
  return pack;
}

struct Plan {
  explicit Plan(Desc c) : cfg(std::move(c)) {}
  Desc cfg;  // kept alive with the plan, as the graph it came from
  Desc plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  cudnn_graph::EngineInfo info;
  int64_t workspace = 0;
  double us = -1;  // per execution; negative: it did not execute
};

// Every plan that builds for the case: f32 scale and bias first, f16 where no
// engine takes f32. Sets *f32 to the type that served and *configs to the
// configs tried; `graphs` keeps the graphs alive.
std::vector<Plan> build_plans(cudnnHandle_t h, const Case& c, const std::string& name,
                              std::vector<std::unique_ptr<FusedGraph>>& graphs, bool* f32, int64_t* configs) {
  std::vector<Plan> plans;
  for (cudnnDataType_t t : {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF}) {
    try {
      graphs.push_back(std::make_unique<FusedGraph>(h, c, t));
    } catch (const Error& e) {
      std::printf("[ cudnn fusion ] %s: the graph with %s scale and bias: %s\n", name.c_str(),
                  t == CUDNN_DATA_FLOAT ? "f32" : "f16", e.what());
      continue;
    }
    for (cudnnBackendHeurMode_t m : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      for (Desc& cfg : cudnn_graph::engine_configs(graphs.back()->graph, m, kMaxConfigs)) {
        ++*configs;
        Plan p(std::move(cfg));
        p.info = cudnn_graph::engine_info(p.cfg);
        p.plan.desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, p.cfg)
            .set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        if (!p.plan.try_finalize()) continue;
        int64_t n = 0;
        cudnn_graph::check(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                    CUDNN_TYPE_INT64, 1, &n, &p.workspace),
                           "plan workspace");
        const bool seen = p.info.index >= 0 && std::any_of(plans.begin(), plans.end(),
                                                           [&](const Plan& q) { return q.info.index == p.info.index; });
        if (!seen) plans.push_back(std::move(p));
      }
    }
    if (!plans.empty()) {
      *f32 = t == CUDNN_DATA_FLOAT;
      break;
    }
  }
  return plans;
}

// Largest |a - b| over the largest |b|.
double rel_err(const std::vector<__half>& a, const std::vector<__half>& b) {
  double top = 0, err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double u = __half2float(a[i]), v = __half2float(b[i]);
    top = std::max(top, std::fabs(v));
    err = std::max(err, std::fabs(u - v));
  }
  return err / (top + 1e-30);
}

// The whole probe of one case: builds and times every plan, checks the
// fastest deterministic one, then times it in the benchmark loop.
void probe(benchmark::State& state, const std::string& name, const Case& c) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  try {
    const cudnn_graph::ProbeEnv env;  // released on every way out, after the buffers and descriptors below
    cudnnHandle_t h = env.h;
    cudaStream_t stream = env.stream;
    cudaEvent_t e0 = env.e0, e1 = env.e1;
    CaseData d(c);

    std::vector<std::unique_ptr<FusedGraph>> graphs;  // outlive the plans built from them
    bool f32 = true;
    int64_t configs = 0;
    std::vector<Plan> plans = build_plans(h, c, name, graphs, &f32, &configs);
    state.counters["configs"] = double(configs);
    state.counters["plans"] = double(plans.size());
    if (plans.empty()) {
      std::printf("[ cudnn fusion ] %s: %lld configs, no plan builds\n", name.c_str(), static_cast<long long>(configs));
      state.SkipWithError("no engine takes the fused graph");
      return;
    }
    int64_t ws_bytes = 0;
    for (const Plan& p : plans) ws_bytes = std::max(ws_bytes, p.workspace);
    DeviceBuf<char> ws{size_t(ws_bytes)};
    const Desc pack0 = variant_pack(c, d, f32, d.out0.p, d.sums0.p, ws.p);
    const Desc pack1 = variant_pack(c, d, f32, d.out1.p, d.sums1.p, ws.p);
    auto time_plan = [&](const Desc& plan, int reps) {  // us per execution; negative where it fails
      for (int i = 0; i < 3; ++i)
        if (cudnnBackendExecute(h, plan.get(), pack0.get()) != CUDNN_STATUS_SUCCESS) return -1.0;
      check_cuda(cudaEventRecord(e0, stream), "record");
      for (int i = 0; i < reps; ++i)
        if (cudnnBackendExecute(h, plan.get(), pack0.get()) != CUDNN_STATUS_SUCCESS) return -1.0;
      check_cuda(cudaEventRecord(e1, stream), "record");
      check_cuda(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, e0, e1), "elapsed time");
      return 1e3 * double(ms) / reps;
    };
    const Plan* best = nullptr;  // the fastest deterministic plan
    double best_any = -1;
    int deterministic = 0;
    for (Plan& p : plans) {
      p.us = time_plan(p.plan, 20);
      std::printf("[ cudnn fusion ] %s: engine %lld%s%s, workspace %lld B: %s\n", name.c_str(),
                  static_cast<long long>(p.info.index), p.info.deterministic ? "" : " (non-deterministic)",
                  p.info.runtime_compiled ? " (runtime compiled)" : "", static_cast<long long>(p.workspace),
                  p.us < 0 ? "does not execute" : cat(p.us, " us").c_str());
      if (p.us < 0) continue;
      if (best_any < 0 || p.us < best_any) best_any = p.us;
      if (!p.info.deterministic) continue;
      ++deterministic;
      if (!best || p.us < best->us) best = &p;
    }
    state.counters["deterministic_plans"] = deterministic;
    if (best_any >= 0) state.counters["best_any_us"] = best_any;
    if (!best) {
      std::printf("[ cudnn fusion ] %s: %lld configs, %zu plans, no deterministic one executes\n", name.c_str(),
                  static_cast<long long>(configs), plans.size());
      state.SkipWithError("no deterministic engine");
      return;
    }
    state.counters["best_det_us"] = best->us;

    // The fastest deterministic plan twice, against the unfused path.
    unfused(h, stream, c, d);
    cudnn_graph::check(cudnnBackendExecute(h, best->plan.get(), pack0.get()), "execute");
    cudnn_graph::check(cudnnBackendExecute(h, best->plan.get(), pack1.get()), "execute");
    check_cuda(cudaStreamSynchronize(stream), "sync");
    const size_t n = size_t(c.out_elems());
    const auto o0 = to_host(d.out0.p, n), o1 = to_host(d.out1.p, n), ref = to_host(d.ref.p, n);
    const double out_err = rel_err(o0, ref);
    const bool out_repeats = std::memcmp(o0.data(), o1.data(), n * sizeof(__half)) == 0;
    bool sums_repeat = true;
    double sum_err = 0;
    if (c.pattern == Pattern::ConvStats) {
      const auto s0 = to_host(d.sums0.p, size_t(2 * c.k)), s1 = to_host(d.sums1.p, size_t(2 * c.k));
      const auto r = to_host(d.ref_sums.p, size_t(3 * c.k));
      for (int64_t k = 0; k < c.k; ++k) {  // the sum relative to the sum of |y|; the squares to theirs
        const size_t u = size_t(k), q = size_t(c.k + k);
        sum_err = std::max(sum_err, std::fabs(s0[u] - r[3 * u]) / (r[3 * u + 2] + 1e-30));
        sum_err = std::max(sum_err, std::fabs(s0[q] - r[3 * u + 1]) / (r[3 * u + 1] + 1e-30));
      }
      sums_repeat = std::memcmp(s0.data(), s1.data(), s0.size() * sizeof(float)) == 0;
      state.counters["sum_rel_err"] = sum_err;
      state.counters["sums_repeatable"] = sums_repeat ? 1 : 0;
    }
    state.counters["out_rel_err"] = out_err;
    state.counters["out_repeatable"] = out_repeats ? 1 : 0;
    state.counters["repeatable"] = out_repeats && sums_repeat ? 1 : 0;
    state.counters["scale_bias_f32"] = f32 ? 1 : 0;
    std::printf(
        "[ cudnn fusion ] %s: %lld configs, %zu plans, %d deterministic; best deterministic %.2f us (engine "
        "%lld), best of all %.2f us; output differs from the unfused path by %.3g of its largest value%s; "
        "the output repeats to the bit: %s%s\n",
        name.c_str(), static_cast<long long>(configs), plans.size(), deterministic, best->us,
        static_cast<long long>(best->info.index), best_any, out_err,
        c.pattern == Pattern::ConvStats ? cat(", the statistics by ", sum_err).c_str() : "", out_repeats ? "yes" : "NO",
        c.pattern == Pattern::ConvStats ? (sums_repeat ? ", the statistics: yes" : ", the statistics: NO") : "");
    for (auto _ : state) state.SetIterationTime(1e-6 * time_plan(best->plan, 10));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The cnn's convolutions whose input is a BN + ReLU output, at batch 256 and
// 1024: the first convs of blocks 1-3 (a max pool, then the BN, follow them:
// no statistics in their epilogue) and the blocks' second convs (their BN
// follows directly); each with its filter gradient.
const bool registered = [] {
  for (int64_t b : {256, 1024}) {
    const Case fwd[] = {{b, 28, 32, 64, Pattern::Conv},  {b, 14, 64, 64, Pattern::ConvStats},
                        {b, 14, 64, 128, Pattern::Conv}, {b, 7, 128, 128, Pattern::ConvStats},
                        {b, 7, 128, 256, Pattern::Conv}, {b, 3, 256, 256, Pattern::ConvStats}};
    for (const Case& f : fwd) {
      Case g = f;
      g.pattern = Pattern::Wgrad;
      for (const Case& c : {f, g}) {
        const std::string name = cat("cudnn_fusion/cnn/b", b, "/", c.side, "x", c.side, "x", c.c, "-", c.k, "/",
                                     pattern_name(c.pattern), "/f16");
        benchmark::RegisterBenchmark(name.c_str(), [c, name](benchmark::State& st) { probe(st, name, c); })
            ->UseManualTime()
            ->Iterations(20)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return true;
}();

}  // namespace
}  // namespace tr
#endif  // TR_HAVE_CUDA
