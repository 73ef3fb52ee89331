// Micro-benchmarks of the CUDA COMPUTE ops at the reference models' shapes
// (Google Benchmark, GPU time from CUDA events via UseManualTime):
//   cnn (width 1, 28x28x1 input) layer shapes at batch 256 and 1024, f16 and f32;
//   mlp 784-1024-512-256-10 fully connected / ReLU / loss shapes at batch 200;
//   ResNet-50 convolutions at batch 32, f16: the 7x7 / stride 2 stem
//   (224x224x3 -> 64) and a 3x3 / stride 2 one (56x56x128 -> 128).
//   resnet50 pooling: the stem max pool (3x3/s2/p1 on 112x112x64, batch 32, f16)
//   and the head's global average pool (7x7x2048, batch 256), forward and backward.
// Each iteration replays a CUDA Graph holding kReps launches of the op between
// two events (as full capture runs ops: no host launch gaps); the time reported
// is per launch. Counters (Note [roofline], harness/lib/bench/roofline.h): bytes (of
// every input and output the op reads or writes, once per launch), flop (GEMMs
// and convolutions), GB/s, TFLOP/s, intensity, and the fractions of the GPU's
// peaks (device_peaks, roofline.h) and of its roofline at the op's intensity. Inputs are filled on the
// GPU (device_fill.cu), uniform in each spec's range.
//   zoo: resnet18 (CIFAR, b512), resnet50 bottleneck (b256) and vgg16bn (b128)
//   convolutions and BatchNorm at their own shapes, f16.
//   ./tr_bench_ops --benchmark_filter=cnn/b1024 --benchmark_format=json
// The shapes are listed in op_bench_specs.cpp. Without a GPU every benchmark
// reports SkipWithError.
#include <benchmark/benchmark.h>

#ifdef TR_HAVE_CUDA
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/rng.h"
#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "harness/lib/bench/nvml.h"
#include "harness/lib/bench/roofline.h"
#include "tests/bench/device_fill.h"
#include "tests/bench/op_bench_spec.h"

namespace tr {
namespace {

using bench::Spec;
using bench::TSpec;

constexpr int kReps = 10;
constexpr size_t kWorkspaceBytes = size_t(1) << 30;  // deterministic f32 convs at b1024 need ~300 MB

// Handles, stream and scratch for the whole benchmark binary (created once,
// on first use, when a GPU is present).
class BenchGpu {
 public:
  static BenchGpu* get() {
    static std::unique_ptr<BenchGpu> inst = [] {
      int n = 0;
      if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return std::unique_ptr<BenchGpu>();
      return std::make_unique<BenchGpu>();
    }();
    return inst.get();
  }
  BenchGpu() {
    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudnnCreate(&cudnn);
    cublasCreate(&cublas);
    cublasLtCreate(&lt);
    cudaMalloc(&ws, kWorkspaceBytes);
    cudaMalloc(&scalars, sizeof(TrainScalars));
    TrainScalars s;
    s.loss_scale = 1024.f;
    cudaMemcpy(scalars, &s, sizeof s, cudaMemcpyHostToDevice);
    plans = std::make_unique<ConvPlanCache>();
    ConvPlanCache::Options cudnn_only;
    cudnn_only.tc_filter = false;
    cudnn_plans = std::make_unique<ConvPlanCache>(cudnn_only);
    gh.device = 0;
    gh.cudnn = cudnn;
    gh.cublas = cublas;
    gh.cublaslt = lt;
    gh.workspace = ws;
    gh.workspace_bytes = kWorkspaceBytes;
    gh.conv_plans = plans.get();
    gh.deterministic = true;
    gh.sm_count = query_sm_count(0);
    gh_cudnn = gh;
    gh_cudnn.conv_plans = cudnn_plans.get();
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) device_name = prop.name;
    cudaEventCreate(&ev0);
    cudaEventCreate(&ev1);
  }
  ~BenchGpu() {
    plans.reset();
    cudnn_plans.reset();
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    cudaFree(scalars);
    cudaFree(ws);
    cublasLtDestroy(lt);
    cublasDestroy(cublas);
    cudnnDestroy(cudnn);
    cudaStreamDestroy(stream);
  }
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* ws = nullptr;
  TrainScalars* scalars = nullptr;
  std::unique_ptr<ConvPlanCache> plans;
  std::unique_ptr<ConvPlanCache> cudnn_plans;  // Spec::cudnn_conv
  GpuHandles gh;
  GpuHandles gh_cudnn;  // gh with cudnn_plans
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  std::string device_name;  // the roofline's peaks are this GPU's (device_peaks)
};

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(size_t bytes) { cudaMalloc(&p, bytes < 16 ? 16 : bytes); }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

void run_spec(benchmark::State& state, const Spec& sp) {
  BenchGpu* g = BenchGpu::get();
  if (g == nullptr) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Rng rng(42);
  std::vector<std::unique_ptr<DevBuf>> bufs;
  std::vector<TensorRef> in, out;
  double bytes = 0;
  for (const TSpec& t : sp.in) {
    const size_t b = size_t(t.s.numel()) * dtype_size(t.dt);
    bufs.push_back(std::make_unique<DevBuf>(t.shape_only ? 0 : b));
    if (!t.shape_only && !bench::device_fill(bufs.back()->p, t.dt, t.s.numel(), t.lo, t.hi, rng.next_u64())) {
      state.SkipWithError(cat("could not fill a ", dtype_name(t.dt), t.s.str(), " input").c_str());
      return;
    }
    in.push_back(TensorRef{bufs.back()->p, t.dt, t.s});
    if (!t.shape_only && !t.unread) bytes += double(b);
  }
  for (const TSpec& t : sp.out) {
    const size_t b = size_t(t.s.numel()) * dtype_size(t.dt);
    bufs.push_back(std::make_unique<DevBuf>(b));
    out.push_back(TensorRef{bufs.back()->p, t.dt, t.s});
    bytes += double(b);
  }
  ExecEnv env;
  env.scalars = g->scalars;
  env.stream = g->stream;
  const GpuHandles& gh = sp.cudnn_conv ? g->gh_cudnn : g->gh;
  env.gpu = &gh;
  OpCall c;
  c.in = in.data();
  c.n_in = int(in.size());
  c.out = out.data();
  c.n_out = int(out.size());
  c.attrs = &sp.attrs;
  c.variant = &sp.variant;
  c.env = &env;
  try {
    if (sp.derive != nullptr) {
      OpCall d = c;
      std::vector<TensorRef> derived;
      for (int k : sp.derive_to) derived.push_back(in[size_t(k)]);
      d.in = &in[size_t(sp.derive_from)];
      d.n_in = 1;
      d.out = derived.data();
      d.n_out = int(derived.size());
      sp.derive(d);
    }
    if (sp.conv != OpKind::Count) {
      std::vector<Shape> shapes;
      for (const TensorRef& t : in) shapes.push_back(t.shape);
      gh.conv_plans->prepare(gh, conv_key(sp.conv, shapes.data(), int(shapes.size()), sp.attrs, in[0].dtype));
    }
    for (int i = 0; i < 3; ++i) sp.fn(c);  // warm-up
    if (cudaStreamSynchronize(g->stream) != cudaSuccess) throw Error("warm-up failed");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  // kReps launches captured once into a CUDA Graph (as the full-capture mode
  // runs them): the timing is GPU time without host launch gaps.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    state.SkipWithError("cudaStreamBeginCapture failed");
    return;
  }
  try {
    for (int r = 0; r < kReps; ++r) sp.fn(c);
  } catch (const std::exception& e) {
    cudaStreamEndCapture(g->stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    state.SkipWithError(e.what());
    return;
  }
  if (cudaStreamEndCapture(g->stream, &graph) != cudaSuccess || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    state.SkipWithError("capture failed");
    return;
  }
  double total_s = 0;
  for (auto _ : state) {
    cudaEventRecord(g->ev0, g->stream);
    cudaGraphLaunch(exec, g->stream);
    cudaEventRecord(g->ev1, g->stream);
    cudaEventSynchronize(g->ev1);
    float ms = 0;
    cudaEventElapsedTime(&ms, g->ev0, g->ev1);
    const double s = double(ms) / 1e3 / kReps;
    total_s += s;
    state.SetIterationTime(s);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  // Note [roofline] (harness/lib/bench/roofline.h): the op against this GPU's limit; none for a GPU the
  // peak table does not know.
  const double iters = double(state.iterations());
  const DType compute = sp.in.empty() ? DType::F32 : sp.in[0].dt;
  const auto peaks = bench::device_peaks(g->device_name, compute);
  if (total_s > 0 && bytes > 0 && peaks) {
    const bench::Roofline r = bench::roofline(sp.flops, bytes, total_s / iters, *peaks);
    for (const auto& [k, v] : bench::roofline_counters(sp.flops, bytes, r)) state.counters[k] = v;
  }
}

void register_all() {
  for (const bench::Spec& s : bench::op_bench_specs())
    benchmark::RegisterBenchmark(s.name.c_str(), [s](benchmark::State& st) { run_spec(st, s); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace tr
#endif  // TR_HAVE_CUDA

int main(int argc, char** argv) {
#ifdef TR_HAVE_CUDA
  tr::register_all();
  // Note [machine state]: the GPU's clocks, limits and modes in the report's context, flat as Google
  // Benchmark's context allows (gpu_state.driver, gpu_state.uuid, ...).
  if (tr::BenchGpu* g = tr::BenchGpu::get()) {
    benchmark::AddCustomContext("device_name", g->device_name);
    for (const auto& [key, value] : tr::bench::Nvml::get().state(tr::bench::cuda_pci_bus_id(0)))
      benchmark::AddCustomContext("gpu_state." + key, value);
  }
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
