// Whether cuDNN's runtime fusion can take the cnn's BatchNorm work into its
// convolutions, and at what speed (issue: fused conv / BatchNorm / ReLU):
//   x[N,H,W,C] f16 -> relu(x * scale[C] + bias[C]) -> conv3x3 (W[K,3,3,C] f16)
//   -> y[N,H,W,K] f16, and (with --genstats shapes) sum[K], sqsum[K] f32 of y.
// This is the forward of a conv whose input is the previous BN + ReLU (the
// prologue) and whose output feeds a BN (the statistics epilogue). Built with
// the backend graph API; the first engine configs the heuristics offer (mode
// A, then the fallback list; kMaxConfigs of each) are tried, timed, and marked deterministic or not
// (CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC). tr keeps the modes bit-identical,
// so only a deterministic engine could be used; the fastest one is then
// checked against the unfused path (our reference kernels + cuDNN's legacy
// convolution) and run twice to see that it repeats to the bit.
// Counters: configs, plans, deterministic_plans, best_det_us, best_any_us,
// y_rel_err, sum_rel_err, repeatable. Compare best_det_us with the sum of the
// unfused cases at the same shape (cnn/bB/conv_fwd + bn_relu_apply + bn_stats).
//   ./tr_bench_ops --benchmark_filter=cudnn_fusion
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

#include "framework/core/error.h"
#include "framework/core/rng.h"

namespace tr {
namespace {

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error(cat(what, ": ", cudnnGetErrorString(s)));
}
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(cat(what, ": ", cudaGetErrorString(e)));
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t t) { check_cudnn(cudnnBackendCreateDescriptor(t, &d_), "create"); }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  Desc& set(cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, int64_t n, const void* v) {
    check_cudnn(cudnnBackendSetAttribute(d_, a, t, n, v), "set attribute");
    return *this;
  }
  Desc& desc(cudnnBackendAttributeName_t a, const Desc& v) {
    const cudnnBackendDescriptor_t p = v.get();
    return set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p);
  }
  // False where cuDNN refuses (an engine that does not take this graph).
  bool try_finalize() { return cudnnBackendFinalize(d_) == CUDNN_STATUS_SUCCESS; }
  Desc& finalize() {
    check_cudnn(cudnnBackendFinalize(d_), "finalize");
    return *this;
  }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// A 4-d tensor in cuDNN's logical NCHW order with NHWC strides ("n,c,h,w").
Desc tensor(int64_t uid, int64_t n, int64_t c, int64_t h, int64_t w, cudnnDataType_t t, bool is_virtual) {
  const int64_t dims[4] = {n, c, h, w}, strides[4] = {h * w * c, 1, w * c, c}, align = 16;
  Desc d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  return std::move(d.finalize());
}

Desc pointwise_mode(cudnnPointwiseMode_t mode) {
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  Desc d(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  d.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f);
  return std::move(d.finalize());
}

// y = op(x[, b]).
Desc pointwise_op(const Desc& mode, const Desc& x, const Desc* b, const Desc& y) {
  Desc d(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  d.desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, mode).desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) d.desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  d.desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  return std::move(d.finalize());
}

enum Uid : int64_t { kX = 1, kScale, kBias, kW, kY, kSum, kSqSum, kAfterScale, kAfterBias, kAfterRelu };

struct Shape {
  int64_t batch, side, c, k;
  bool genstats;
};

// The operation graph of one shape; scale and bias of type `sb`.
struct FusedGraph {
  std::vector<Desc> keep;  // tensors, modes and ops the graph refers to
  Desc graph{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};

  FusedGraph(cudnnHandle_t h, const Shape& s, cudnnDataType_t sb) {
    keep.reserve(32);  // references into it stay valid
    const int64_t N = s.batch, H = s.side, C = s.c, K = s.k;
    const cudnnDataType_t f16 = CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
    auto& x = keep.emplace_back(tensor(kX, N, C, H, H, f16, false));
    auto& scale = keep.emplace_back(tensor(kScale, 1, C, 1, 1, sb, false));
    auto& bias = keep.emplace_back(tensor(kBias, 1, C, 1, 1, sb, false));
    auto& a = keep.emplace_back(tensor(kAfterScale, N, C, H, H, f32, true));
    auto& b = keep.emplace_back(tensor(kAfterBias, N, C, H, H, f32, true));
    auto& r = keep.emplace_back(tensor(kAfterRelu, N, C, H, H, f32, true));
    auto& w = keep.emplace_back(tensor(kW, K, C, 3, 3, f16, false));
    auto& y = keep.emplace_back(tensor(kY, N, K, H, H, f16, false));
    auto& mul = keep.emplace_back(pointwise_mode(CUDNN_POINTWISE_MUL));
    auto& add = keep.emplace_back(pointwise_mode(CUDNN_POINTWISE_ADD));
    auto& relu = keep.emplace_back(pointwise_mode(CUDNN_POINTWISE_RELU_FWD));
    std::vector<cudnnBackendDescriptor_t> ops;
    ops.push_back(keep.emplace_back(pointwise_op(mul, x, &scale, a)).get());
    ops.push_back(keep.emplace_back(pointwise_op(add, a, &bias, b)).get());
    ops.push_back(keep.emplace_back(pointwise_op(relu, b, nullptr, r)).get());

    const int64_t two = 2, ones[2] = {1, 1}, pads[2] = {1, 1};
    const cudnnConvolutionMode_t cross = CUDNN_CROSS_CORRELATION;
    auto& conv = keep.emplace_back(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32)
        .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &cross)
        .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two)
        .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones)
        .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones)
        .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads)
        .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads)
        .finalize();
    const float alpha = 1.f, beta = 0.f;
    auto& fwd = keep.emplace_back(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    fwd.desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, r)
        .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w)
        .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y)
        .desc(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv)
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha)
        .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta)
        .finalize();
    ops.push_back(fwd.get());

    if (s.genstats) {
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
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(ops.size()), ops.data())
        .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
        .finalize();
  }
};

// The first engine configs the heuristics of `mode` offer for the graph, at
// most kMaxConfigs (runtime-compiled engines take a compilation each).
constexpr int64_t kMaxConfigs = 6;
std::vector<Desc> engine_configs(const Desc& graph, cudnnBackendHeurMode_t mode) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph).set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (!heur.try_finalize()) return {};
  int64_t n = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                               nullptr) != CUDNN_STATUS_SUCCESS)
    return {};
  n = std::min(n, kMaxConfigs);
  std::vector<Desc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < n; ++i) raw.push_back(cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
  int64_t got = 0;
  check_cudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                       &got, raw.data()),
              "heuristics results");
  while (int64_t(cfgs.size()) > got) cfgs.pop_back();
  return cfgs;
}

struct EngineInfo {
  int64_t index = -1;
  bool deterministic = true, runtime_compiled = false;
};

EngineInfo engine_info(const Desc& cfg) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  EngineInfo info;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) !=
      CUDNN_STATUS_SUCCESS)
    return info;
  cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &info.index);
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n; ++i) info.deterministic &= notes[i] != CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
  cudnnBackendBehaviorNote_t behav[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, behav) == CUDNN_STATUS_SUCCESS)
    for (int64_t i = 0; i < n; ++i) info.runtime_compiled |= behav[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  return info;
}

// The unfused reference: r = relu(x * scale + bias) rounded to f16 (what our
// bn_relu_apply stores), [rows, C] NHWC.
__global__ void scale_bias_relu_kernel(const __half* x, const float* scale, const float* bias, __half* r, int64_t n,
                                       int C) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % C);
    r[i] = __float2half_rn(fmaxf(0.f, __half2float(x[i]) * scale[c] + bias[c]));
  }
}

// Per-channel sum, sum of squares and sum of |y| over [rows, K], in f64 (a
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
struct DeviceBuf {
  T* p = nullptr;
  explicit DeviceBuf(size_t n) { check_cuda(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  ~DeviceBuf() { cudaFree(p); }
  DeviceBuf(const DeviceBuf&) = delete;
  DeviceBuf& operator=(const DeviceBuf&) = delete;
};

std::vector<__half> random_half(size_t n, float lo, float hi, uint64_t seed) {
  Rng rng(seed);
  std::vector<__half> v(n);
  for (auto& e : v) e = __float2half_rn(rng.uniform(lo, hi));
  return v;
}
std::vector<float> random_float(size_t n, float lo, float hi, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& e : v) e = rng.uniform(lo, hi);
  return v;
}

struct Plan {
  explicit Plan(Desc c) : cfg(std::move(c)) {}
  Desc cfg;  // kept alive with the plan, as the graph it came from
  Desc plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  EngineInfo info;
  int64_t workspace = 0;
  double us = 0;
};

// The whole probe of one shape: tries every engine config, keeps timings,
// checks the fastest deterministic plan; then times it in the benchmark loop.
void probe(benchmark::State& state, const std::string& name, Shape s) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  try {
    cudnnHandle_t h;
    check_cudnn(cudnnCreate(&h), "cudnnCreate");
    cudaStream_t stream;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
    check_cudnn(cudnnSetStream(h, stream), "cudnnSetStream");
    struct Release {  // on every way out, after the buffers and descriptors below
      cudnnHandle_t h;
      cudaStream_t s;
      ~Release() {
        cudaStreamSynchronize(s);
        cudnnDestroy(h);
        cudaStreamDestroy(s);
      }
    } release{h, stream};
    const int64_t N = s.batch, H = s.side, C = s.c, K = s.k, rows = N * H * H;
    DeviceBuf<__half> x(size_t(rows * C)), r(size_t(rows * C)), w(size_t(K * 9 * C)), y(size_t(rows * K)),
        y2(size_t(rows * K)), yref(size_t(rows * K)), sb_half(size_t(2 * C));
    DeviceBuf<float> sb(size_t(2 * C)), sums(size_t(2 * K)), sums2(size_t(2 * K));
    DeviceBuf<double> ref_sums(size_t(3 * K));
    const auto hx = random_half(size_t(rows * C), -1.f, 1.f, 11);
    const auto hw = random_half(size_t(K * 9 * C), -0.1f, 0.1f, 12);
    auto hsb = random_float(size_t(C), 0.5f, 1.5f, 13);
    const auto hb = random_float(size_t(C), -0.5f, 0.5f, 14);
    hsb.insert(hsb.end(), hb.begin(), hb.end());
    check_cuda(cudaMemcpy(x.p, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice), "copy x");
    check_cuda(cudaMemcpy(w.p, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice), "copy w");
    check_cuda(cudaMemcpy(sb.p, hsb.data(), hsb.size() * 4, cudaMemcpyHostToDevice), "copy scale, bias");
    float_to_half_kernel<<<int((2 * C + 255) / 256), 256, 0, stream>>>(sb.p, sb_half.p, int(2 * C));

    // Every config of both heuristics, f32 scale and bias first, then f16.
    std::vector<std::unique_ptr<FusedGraph>> graphs;  // outlive the plans built from them
    std::vector<Plan> plans;
    int64_t configs = 0;
    cudnnDataType_t sb_type = CUDNN_DATA_FLOAT;
    for (cudnnDataType_t t : {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF}) {
      try {
        graphs.push_back(std::make_unique<FusedGraph>(h, s, t));
      } catch (const Error& e) {
        std::printf("[ cudnn fusion ] %s: the graph with %s scale and bias: %s\n", name.c_str(),
                    t == CUDNN_DATA_FLOAT ? "f32" : "f16", e.what());
        continue;
      }
      const FusedGraph& g = *graphs.back();
      for (cudnnBackendHeurMode_t m : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
        for (Desc& cfg : engine_configs(g.graph, m)) {
          ++configs;
          Plan p(std::move(cfg));
          p.info = engine_info(p.cfg);
          p.plan.desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, p.cfg).set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                                           CUDNN_TYPE_HANDLE, 1, &h);
          if (!p.plan.try_finalize()) continue;
          int64_t n = 0;
          cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                   &p.workspace);
          const bool seen = std::any_of(plans.begin(), plans.end(),
                                        [&](const Plan& q) { return q.info.index == p.info.index; });
          if (!seen) plans.push_back(std::move(p));
        }
      }
      if (!plans.empty()) {
        sb_type = t;
        break;
      }
    }
    state.counters["configs"] = double(configs);
    state.counters["plans"] = double(plans.size());
    if (plans.empty()) {
      std::printf("[ cudnn fusion ] %s: %lld configs, no plan builds\n", name.c_str(),
                  static_cast<long long>(configs));
      state.SkipWithError("no engine takes the fused graph");
      return;
    }
    int64_t ws_bytes = 0;
    for (const Plan& p : plans) ws_bytes = std::max(ws_bytes, p.workspace);
    DeviceBuf<char> ws{size_t(ws_bytes)};
    const bool f32 = sb_type == CUDNN_DATA_FLOAT;
    void* scale = f32 ? static_cast<void*>(sb.p) : static_cast<void*>(sb_half.p);
    void* bias = f32 ? static_cast<void*>(sb.p + C) : static_cast<void*>(sb_half.p + C);
    auto pack_for = [&](__half* yout, float* sout) {
      Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      std::vector<void*> ptrs = {x.p, scale, bias, w.p, yout};
      std::vector<int64_t> uids = {kX, kScale, kBias, kW, kY};
      if (s.genstats) {
        ptrs.push_back(sout);
        ptrs.push_back(sout + K);
        uids.push_back(kSum);
        uids.push_back(kSqSum);
      }
      void* wsp = ws.p;
      pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(ptrs.size()), ptrs.data())
          .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, int64_t(uids.size()), uids.data())
          .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp)
          .finalize();
      return pack;
    };
    const Desc pack = pack_for(y.p, sums.p);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    // Microseconds per execution, or a negative value where the plan does not execute.
    auto time_plan = [&](const Desc& plan, int reps) {
      for (int i = 0; i < 3; ++i)
        if (cudnnBackendExecute(h, plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) return -1.0;
      cudaEventRecord(e0, stream);
      for (int i = 0; i < reps; ++i)
        if (cudnnBackendExecute(h, plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) return -1.0;
      cudaEventRecord(e1, stream);
      check_cuda(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      return 1e3 * double(ms) / reps;
    };
    const Plan* best_det = nullptr;
    double best_any = 1e30;
    int deterministic = 0;
    for (Plan& p : plans) {
      p.us = time_plan(p.plan, 20);
      if (p.us < 0) continue;
      best_any = std::min(best_any, p.us);
      if (!p.info.deterministic) continue;
      ++deterministic;  // that executes
      if (!best_det || p.us < best_det->us) best_det = &p;
    }
    state.counters["deterministic_plans"] = deterministic;
    if (best_any < 1e29) state.counters["best_any_us"] = best_any;
    for (const Plan& p : plans)
      std::printf("[ cudnn fusion ] %s: engine %lld%s%s, workspace %lld B: %s\n", name.c_str(),
                  static_cast<long long>(p.info.index), p.info.deterministic ? "" : " (non-deterministic)",
                  p.info.runtime_compiled ? " (runtime compiled)" : "", static_cast<long long>(p.workspace),
                  p.us < 0 ? "does not execute" : cat(p.us, " us").c_str());
    if (!best_det) {
      state.SkipWithError("no deterministic engine");
      return;
    }
    state.counters["best_det_us"] = best_det->us;

    // The unfused path on the same data: our reference prologue, cuDNN's
    // legacy convolution, the statistics in f64.
    scale_bias_relu_kernel<<<1024, 256, 0, stream>>>(x.p, sb.p, sb.p + C, r.p, rows * C, int(C));
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    check_cudnn(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, int(N), int(C), int(H), int(H)), "x");
    check_cudnn(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, int(N), int(K), int(H), int(H)), "y");
    check_cudnn(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, int(K), int(C), 3, 3), "w");
    check_cudnn(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), "cd");
    check_cudnn(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH), "math");
    // The first deterministic algorithm that runs (cuDNN's own order).
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    check_cudnn(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                       perf),
                "legacy algorithms");
    const auto* pick = std::find_if(perf, perf + returned, [](const cudnnConvolutionFwdAlgoPerf_t& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC;
    });
    if (pick == perf + returned) throw Error("no deterministic legacy convolution for the reference");
    const cudnnConvolutionFwdAlgo_t algo = pick->algo;
    size_t legacy_ws = 0;
    check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo, &legacy_ws), "legacy workspace");
    DeviceBuf<char> lws(legacy_ws);
    const float one = 1.f, zero = 0.f;
    check_cudnn(cudnnConvolutionForward(h, &one, xd, r.p, wd, w.p, cd, algo, lws.p, legacy_ws, &zero, yd, yref.p),
                "legacy conv");
    channel_sums_kernel<<<int((K + 63) / 64), 64, 0, stream>>>(yref.p, rows, int(K), ref_sums.p);
    // The best deterministic plan, twice, into two outputs.
    const Desc pack2 = pack_for(y2.p, sums2.p);
    check_cudnn(cudnnBackendExecute(h, best_det->plan.get(), pack.get()), "execute");
    check_cudnn(cudnnBackendExecute(h, best_det->plan.get(), pack2.get()), "execute");
    check_cuda(cudaStreamSynchronize(stream), "sync");
    std::vector<__half> hy(size_t(rows * K)), hy2(hy.size()), href(hy.size());
    std::vector<float> hs(size_t(2 * K)), hs2(hs.size());
    std::vector<double> hr(size_t(3 * K));
    cudaMemcpy(hy.data(), y.p, hy.size() * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(hy2.data(), y2.p, hy.size() * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(href.data(), yref.p, hy.size() * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(hs.data(), sums.p, hs.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(hs2.data(), sums2.p, hs.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(hr.data(), ref_sums.p, hr.size() * 8, cudaMemcpyDeviceToHost);
    double ymax = 0, yerr = 0;
    for (size_t i = 0; i < hy.size(); ++i) {
      const double a = __half2float(hy[i]), b = __half2float(href[i]);
      ymax = std::max(ymax, std::fabs(b));
      yerr = std::max(yerr, std::fabs(a - b));
    }
    double serr = 0;
    if (s.genstats)
      for (int64_t k = 0; k < K; ++k) {  // relative to the sum of |y| (of y^2 for the squares)
        serr = std::max(serr, std::fabs(hs[size_t(k)] - hr[size_t(3 * k)]) / (hr[size_t(3 * k + 2)] + 1e-30));
        serr = std::max(serr, std::fabs(hs[size_t(K + k)] - hr[size_t(3 * k + 1)]) / (hr[size_t(3 * k + 1)] + 1e-30));
      }
    const bool repeatable = std::memcmp(hy.data(), hy2.data(), hy.size() * 2) == 0 &&
                            (!s.genstats || std::memcmp(hs.data(), hs2.data(), hs.size() * 4) == 0);
    state.counters["y_rel_err"] = yerr / (ymax + 1e-30);
    state.counters["sum_rel_err"] = serr;
    state.counters["repeatable"] = repeatable ? 1 : 0;
    state.counters["scale_bias_f32"] = sb_type == CUDNN_DATA_FLOAT ? 1 : 0;
    std::printf("[ cudnn fusion ] %s: %lld configs, %zu plans, %d deterministic; best deterministic %.2f us (engine "
                "%lld), best any %.2f us; y differs from the unfused path by %.3g of max |y|, sums by %.3g; "
                "repeats to the bit: %s\n",
                name.c_str(), static_cast<long long>(configs), plans.size(), deterministic, best_det->us,
                static_cast<long long>(best_det->info.index), best_any, yerr / (ymax + 1e-30), serr,
                repeatable ? "yes" : "NO");
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    for (auto _ : state) state.SetIterationTime(1e-6 * time_plan(best_det->plan, 10));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The cnn's convolutions that follow a BN + ReLU: the blocks' second convs
// (their BN statistics in the epilogue too) and the first convs of blocks
// 1-3 (the previous BN + ReLU in the prologue only: a max pool sits between
// them and their BN), at batch 256 and 1024.
const bool registered = [] {
  for (int64_t b : {256, 1024}) {
    const Shape shapes[] = {{b, 28, 32, 64, false}, {b, 14, 64, 64, true},   {b, 14, 64, 128, false},
                            {b, 7, 128, 128, true}, {b, 7, 128, 256, false}, {b, 3, 256, 256, true}};
    for (const Shape& s : shapes) {
      const std::string name = cat("cudnn_fusion/cnn/b", b, "/", s.side, "x", s.side, "x", s.c, "-", s.k,
                                   s.genstats ? "/scale_bias_relu_conv_genstats" : "/scale_bias_relu_conv", "/f16");
      benchmark::RegisterBenchmark(name.c_str(), [s, name](benchmark::State& st) { probe(st, name, s); })
          ->UseManualTime()
          ->Iterations(20)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace tr
#endif  // TR_HAVE_CUDA
