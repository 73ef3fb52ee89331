// How many kernels cuDNN's deterministic engines take for each of the cnn's
// convolutions, and at what speed, against the algorithm tr's legacy-API
// plan picks (issue: fused conv / BatchNorm / ReLU, "fewer kernels").
//
// The cnn's step at batch 256 runs 85 kernels; 9-11 of them are cuDNN's
// helpers around its convolutions: workspace clears (memset nodes, which tr
// turns into kernels) before forward and data-gradient convolutions,
// init_device_workspace kernels before filter gradients, and a second
// kernel in some filter gradients. The legacy API picks an algorithm, not an
// engine config, so it cannot ask for an engine without them. This probe
// asks the backend API: for each convolution (forward, data gradient, filter
// gradient) it builds every engine config heuristic mode A and the fallback
// list offer, keeps the deterministic, precompiled ones, captures one
// execution into a CUDA graph to count its kernel and memset nodes, and times
// the graph (20 executions a replay). The legacy plan (ConvPlanCache, the
// deterministic heuristic choice tr ships) is counted and timed the same way.
// One line per engine on stdout; counters per case:
//   legacy_us, legacy_nodes, plans, best_us / best_nodes / best_engine (the
//   fastest deterministic plan), one_us / one_engine (the fastest with a
//   single node; absent where none has one), one_over_legacy.
//   ./tr_experiments --benchmark_filter=cudnn_engine
#include <benchmark/benchmark.h>

#ifdef TR_HAVE_CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "experiments/cudnn_probe_env.h"
#include "framework/core/error.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/conv_plans/conv_engine_cuda.h"
#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"
#include "framework/ops/conv_plans/cudnn_graph_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "tests/bench/device_fill.h"

namespace tr {
namespace {

using cudnn_graph::check_cuda;
using cudnn_graph::Desc;
using cudnn_graph::DeviceBuf;

constexpr int64_t kMaxConfigs = 24;  // per heuristic mode
constexpr int kMaxExecsPerGraph = 20;
constexpr double kGraphBudgetUs = 4000;              // executions per graph: about this long, at least one
constexpr int64_t kMaxWorkspace = int64_t(1) << 30;  // engines asking for more are left out

// x[N,H,H,C] -> y[N,Ho,Ho,K] through w[K,R,R,C]; Ho from R, stride and padding.
struct Case {
  std::string model;  // the name's prefix: "cnn/b256", ...
  int64_t batch, side, c, k, r = 3, stride = 1, pad = 1;
  ConvDir dir = ConvDir::Fwd;
  int64_t out_side() const { return conv_out_size(side, r, stride, pad); }
};

const char* dir_name(ConvDir d) {
  return d == ConvDir::Fwd ? "fwd" : d == ConvDir::BwdData ? "bwd_data" : "bwd_filter";
}

// Kernel and memset nodes of a captured graph (what a step would launch).
struct NodeCount {
  int kernels = 0, memsets = 0, other = 0;
  int total() const { return kernels + memsets + other; }
};

NodeCount count_nodes(cudaGraph_t g) {
  size_t n = 0;
  check_cuda(cudaGraphGetNodes(g, nullptr, &n), "graph nodes");
  std::vector<cudaGraphNode_t> nodes(n);
  check_cuda(cudaGraphGetNodes(g, nodes.data(), &n), "graph nodes");
  NodeCount c;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    check_cuda(cudaGraphNodeGetType(node, &t), "node type");
    if (t == cudaGraphNodeTypeKernel) ++c.kernels;
    else if (t == cudaGraphNodeTypeMemset) ++c.memsets;
    else if (t != cudaGraphNodeTypeEmpty) ++c.other;
  }
  return c;
}

// Captures `run` (one execution, on `s`) once to count its nodes, then
// `execs` times into a graph that is replayed to time it; us per execution,
// negative where `run` fails.
template <class Run>
double time_captured(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, Run run, NodeCount* nodes, int execs) {
  auto capture = [&](int execs, cudaGraphExec_t* exec, NodeCount* count) {
    cudaGraph_t g = nullptr;
    check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "begin capture");
    bool ok = true;
    for (int i = 0; i < execs && ok; ++i) ok = run();
    check_cuda(cudaStreamEndCapture(s, &g), "end capture");
    if (!ok) {
      cudaGraphDestroy(g);
      return false;
    }
    if (count) *count = count_nodes(g);
    if (exec) check_cuda(cudaGraphInstantiate(exec, g, 0), "instantiate");
    cudaGraphDestroy(g);
    return true;
  };
  if (!capture(1, nullptr, nodes)) return -1;
  cudaGraphExec_t exec = nullptr;
  if (!capture(execs, &exec, nullptr)) return -1;
  for (int i = 0; i < 3; ++i) check_cuda(cudaGraphLaunch(exec, s), "launch");
  std::vector<double> us;
  for (int r = 0; r < 7; ++r) {
    check_cuda(cudaEventRecord(e0, s), "record");
    check_cuda(cudaGraphLaunch(exec, s), "launch");
    check_cuda(cudaEventRecord(e1, s), "record");
    check_cuda(cudaEventSynchronize(e1), "sync");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    us.push_back(1e3 * double(ms) / execs);
  }
  cudaGraphExecDestroy(exec);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// Executions per timing graph for a run that takes `once_us` alone.
int execs_for(double once_us) { return std::clamp(int(kGraphBudgetUs / std::max(once_us, 1.0)), 1, kMaxExecsPerGraph); }

// One execution of `run` on `s`, outside capture: its time in us, negative where it fails.
template <class Run>
double time_once(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, Run run) {
  if (!run() || cudaStreamSynchronize(s) != cudaSuccess) return -1;
  check_cuda(cudaEventRecord(e0, s), "record");
  if (!run()) return -1;
  check_cuda(cudaEventRecord(e1, s), "record");
  if (cudaEventSynchronize(e1) != cudaSuccess) return -1;
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
  return 1e3 * double(ms);
}

struct Plan {
  explicit Plan(Desc c) : cfg(std::move(c)) {}
  Desc cfg;
  Desc plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  cudnn_graph::EngineInfo info;
  int64_t workspace = 0;
  double us = -1;
  NodeCount nodes;
};

void probe(benchmark::State& state, const std::string& name, const Case& c) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  try {
    const cudnn_graph::ProbeEnv env;  // released on every way out, after the buffers and descriptors below
    cudnnHandle_t h = env.h;
    cudaStream_t s = env.stream;
    cudaEvent_t e0 = env.e0, e1 = env.e1;

    const size_t nx = size_t(c.batch * c.side * c.side * c.c), ny = size_t(c.batch * c.out_side() * c.out_side() * c.k),
                 nw = size_t(c.k * c.r * c.r * c.c);
    DeviceBuf<__half> x(nx), y(ny), w(nw);
    if (!bench::device_fill(x.p, DType::F16, int64_t(nx), -1, 1, 11) ||
        !bench::device_fill(y.p, DType::F16, int64_t(ny), -1, 1, 12) ||
        !bench::device_fill(w.p, DType::F16, int64_t(nw), -0.1, 0.1, 13))
      throw Error("device_fill failed");
    check_cuda(cudaDeviceSynchronize(), "fill");

    // The legacy plan tr ships: deterministic heuristic choice, tensor-op math.
    GpuHandles g;
    g.cudnn = h;
    g.deterministic = true;
    ConvKey key;
    key.dir = c.dir;
    key.n = c.batch, key.h = c.side, key.w = c.side, key.c = c.c, key.k = c.k;
    key.r = c.r, key.stride = c.stride, key.pad = c.pad;
    key.dtype = DType::F16;
    ConvPlanCache::Options opt;
    opt.tc_filter = false;  // cuDNN's algorithm where tr's own filter-gradient kernel would run
    ConvPlanCache cache(opt);
    const ConvPlan& lp = cache.prepare(g, key);
    DeviceBuf<char> lws(lp.workspace_bytes);
    auto legacy = [&] { return run_cudnn_plan(h, lp, x.p, w.p, y.p, lws.p) == CUDNN_STATUS_SUCCESS; };
    NodeCount legacy_nodes;
    const double legacy_once = time_once(s, e0, e1, legacy);
    if (legacy_once < 0) throw Error("the legacy plan does not execute");
    const double legacy_us = time_captured(s, e0, e1, legacy, &legacy_nodes, execs_for(legacy_once));
    std::printf("[ cudnn engine ] %s: legacy algo %d, workspace %zu B: %.2f us, %d kernel + %d memset nodes\n",
                name.c_str(), lp.algo, lp.workspace_bytes, legacy_us, legacy_nodes.kernels, legacy_nodes.memsets);
    state.counters["legacy_us"] = legacy_us;
    state.counters["legacy_nodes"] = legacy_nodes.total();

    std::vector<Desc> keep;  // what the graph refers to
    const Desc graph = conv_operation_graph(h, key, keep);
    std::vector<Plan> plans;
    int64_t configs = 0;
    for (cudnnBackendHeurMode_t m : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      for (Desc& cfg : cudnn_graph::engine_configs(graph, m, kMaxConfigs)) {
        ++configs;
        Plan p(std::move(cfg));
        p.info = cudnn_graph::engine_info(p.cfg);
        if (!p.info.deterministic || p.info.runtime_compiled) continue;
        p.plan.desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, p.cfg)
            .set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        if (!p.plan.try_finalize()) continue;
        int64_t n = 0;
        cudnn_graph::check(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                    CUDNN_TYPE_INT64, 1, &n, &p.workspace),
                           "plan workspace");
        if (p.workspace <= kMaxWorkspace) plans.push_back(std::move(p));
      }
    }
    int64_t ws_bytes = 0;
    for (const Plan& p : plans) ws_bytes = std::max(ws_bytes, p.workspace);
    DeviceBuf<char> ws{size_t(ws_bytes)};

    const Plan* best = nullptr;
    const Plan* one = nullptr;  // the fastest single-node plan
    for (Plan& p : plans) {
      // An engine that fails under capture leaves the stream's capture broken; run it outside first.
      auto run = [&] { return run_conv_execution_plan(h, p.plan, x.p, w.p, y.p, ws.p) == CUDNN_STATUS_SUCCESS; };
      const double once = time_once(s, e0, e1, run);
      if (once < 0) {
        std::printf("[ cudnn engine ] %s: engine %lld does not execute\n", name.c_str(),
                    static_cast<long long>(p.info.index));
        continue;
      }
      if (once > 20 * legacy_once) {  // hundreds of times slower engines exist: not worth a graph
        std::printf("[ cudnn engine ] %s: engine %lld, workspace %lld B: %.0f us alone, not timed further\n",
                    name.c_str(), static_cast<long long>(p.info.index), static_cast<long long>(p.workspace), once);
        continue;
      }
      p.us = time_captured(s, e0, e1, run, &p.nodes, execs_for(once));
      std::printf(
          "[ cudnn engine ] %s: engine %lld, workspace %lld B: %.2f us, %d kernel + %d memset + %d other "
          "nodes\n",
          name.c_str(), static_cast<long long>(p.info.index), static_cast<long long>(p.workspace), p.us,
          p.nodes.kernels, p.nodes.memsets, p.nodes.other);
      if (p.us < 0) continue;
      if (!best || p.us < best->us) best = &p;
      if (p.nodes.total() == 1 && (!one || p.us < one->us)) one = &p;
    }
    state.counters["configs"] = double(configs);
    state.counters["plans"] = double(plans.size());
    if (!best) {
      state.SkipWithError("no deterministic engine executes");
      return;
    }
    state.counters["best_us"] = best->us;
    state.counters["best_nodes"] = best->nodes.total();
    state.counters["best_engine"] = double(best->info.index);
    if (one) {
      state.counters["one_us"] = one->us;
      state.counters["one_engine"] = double(one->info.index);
      state.counters["one_over_legacy"] = one->us / legacy_us;
    }
    std::printf(
        "[ cudnn engine ] %s: legacy %.2f us in %d nodes; fastest deterministic engine %lld %.2f us in %d "
        "nodes; fastest in one node: %s\n",
        name.c_str(), legacy_us, legacy_nodes.total(), static_cast<long long>(best->info.index), best->us,
        best->nodes.total(), one ? cat("engine ", one->info.index, " ", one->us, " us").c_str() : "none");
    for (auto _ : state) state.SetIterationTime(1e-6 * legacy_us);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// The convolutions cuDNN runs in the step (the small-C first layers are tr's
// own), each in the three directions: the cnn at batch 256 (its 28x28
// 32 -> 64 filter gradient runs on tr's own kernel in the step but is probed
// all the same), every distinct ResNet-50 convolution at 256 (the stem's data
// gradient is never needed), and vgg16bn's at 128.
std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](const std::string& model, int64_t b, int64_t side, int64_t c, int64_t k, int64_t r = 3,
                 int64_t stride = 1, int64_t pad = 1, bool data_grad = true) {
    for (ConvDir d : {ConvDir::Fwd, ConvDir::BwdData, ConvDir::BwdFilter}) {
      const Case n{model, b, side, c, k, r, stride, pad, d};
      const bool seen = std::any_of(v.begin(), v.end(), [&](const Case& o) {
        return std::tie(o.model, o.side, o.c, o.k, o.r, o.stride, o.dir) ==
               std::tie(n.model, n.side, n.c, n.k, n.r, n.stride, n.dir);
      });
      if (!seen && (d != ConvDir::BwdData || data_grad)) v.push_back(n);
    }
  };
  for (auto [side, c, k] :
       {std::tuple{28, 32, 64}, {14, 64, 64}, {14, 64, 128}, {7, 128, 128}, {7, 128, 256}, {3, 256, 256}})
    add("cnn/b256", 256, side, c, k);
  const std::string r50 = "resnet50/b256";
  add(r50, 256, 224, 3, 64, 7, 2, 3, false);  // the stem
  // Each stage: the first block's 1x1 in (from the previous width, at the
  // previous side), its 3x3 (stride 2 from stage 2 on), 1x1 out, the
  // downsample (1x1, stride 2 from stage 2 on); the other blocks' 1x1 in.
  const int64_t sides[4] = {56, 28, 14, 7}, mids[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    const int64_t mid = mids[s], out = 4 * mid, in = s == 0 ? 64 : 2 * mid, side = sides[s];
    const int64_t in_side = s == 0 ? side : 2 * side, stride = s == 0 ? 1 : 2;
    add(r50, 256, in_side, in, mid, 1, 1, 0);
    add(r50, 256, in_side, mid, mid, 3, stride, 1);
    if (stride != 1) add(r50, 256, side, mid, mid, 3, 1, 1);
    add(r50, 256, side, mid, out, 1, 1, 0);
    add(r50, 256, in_side, in, out, 1, stride, 0);
    add(r50, 256, side, out, mid, 1, 1, 0);
  }
  for (auto [side, c, k] : {std::tuple{224, 64, 64},
                            {112, 64, 128},
                            {112, 128, 128},
                            {56, 128, 256},
                            {56, 256, 256},
                            {28, 256, 512},
                            {28, 512, 512},
                            {14, 512, 512}})
    add("vgg16bn/b128", 128, side, c, k);
  return v;
}

const bool registered = [] {
  for (const Case& c : cases()) {
    const std::string name = cat("cudnn_engine/", c.model, "/", c.side, "x", c.side, "x", c.c, "-", c.k, "/r", c.r, "s",
                                 c.stride, "/", dir_name(c.dir), "/f16");
    benchmark::RegisterBenchmark(name.c_str(), [c, name](benchmark::State& st) { probe(st, name, c); })
        ->UseManualTime()
        ->Iterations(1)
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
}  // namespace tr
#endif  // TR_HAVE_CUDA
