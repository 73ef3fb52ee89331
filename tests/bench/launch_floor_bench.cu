// The launch floor (issue: what the modes are judged against): N empty kernels
// launched one by one, against the same N kernels captured once and replayed
// with one cudaGraphLaunch. Reports wall time per kernel (host + GPU), measured
// over whole iterations that end in a stream synchronize, so both sides include
// the GPU's own per-kernel scheduling cost.
//
// BM_GraphChain/N/PDL: N dependent kernels that each read the previous one's
// output (1 Mi halves, 2 MiB, over 4 blocks per SM, the size of a small
// BatchNorm pass), in one graph, with and without programmatic dependent launch
// (Note [programmatic dependent launch], framework/ops/kernels/kernel_launch_cuda.h):
// the time per kernel is the launch gap between dependent kernels plus the
// kernel's own memory time. The GPU check's ops part reports the launch floor
// and its schedule part BM_GraphChain, beside the steps they are the floor of.
#include <benchmark/benchmark.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <chrono>

namespace {

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

__global__ void empty_kernel() {}

// y = x + 1 over n halves, the first thing done being the wait for the grid
// before (a no-op without a programmatic dependency).
__global__ void chain_kernel(const __half* __restrict__ x, __half* __restrict__ y, int n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = __hadd(x[i], __float2half(1.f));
}

void BM_LaunchOneByOne(benchmark::State& state) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>();  // warm-up (module load)
  cudaStreamSynchronize(s);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>();
    cudaStreamSynchronize(s);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (cudaGetLastError() != cudaSuccess) state.SkipWithError("launch failed");
  state.counters["us_per_kernel"] =
      benchmark::Counter(1e-6 * n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  cudaStreamDestroy(s);
}

void BM_OneGraphLaunch(benchmark::State& state) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 1, 0, s>>>();
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&exec, g, 0);
  cudaGraphLaunch(exec, s);  // warm-up (upload)
  cudaStreamSynchronize(s);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (cudaGetLastError() != cudaSuccess) state.SkipWithError("graph launch failed");
  state.counters["us_per_kernel"] =
      benchmark::Counter(1e-6 * n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

void BM_GraphChain(benchmark::State& state) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  const bool pdl = state.range(1) != 0;
  constexpr int kElems = 1 << 20;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  __half* buf[2] = {nullptr, nullptr};
  for (__half*& b : buf) cudaMalloc(&b, kElems * sizeof(__half));
  for (__half* b : buf) cudaMemset(b, 0, kElems * sizeof(__half));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(sms * 4));
  cfg.blockDim = dim3(256);
  cfg.stream = s;
  cfg.attrs = pdl ? &attr : nullptr;
  cfg.numAttrs = pdl ? 1 : 0;
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < n; ++i) cudaLaunchKernelEx(&cfg, chain_kernel, buf[i % 2], buf[(i + 1) % 2], kElems);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&exec, g, 0);
  cudaGraphLaunch(exec, s);  // warm-up (upload)
  cudaStreamSynchronize(s);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto _ : state) {
    cudaEventRecord(e0, s);
    cudaGraphLaunch(exec, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    state.SetIterationTime(1e-3 * ms);
  }
  if (cudaGetLastError() != cudaSuccess) state.SkipWithError("graph launch failed");
  state.counters["us_per_kernel"] =
      benchmark::Counter(1e-6 * n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  for (__half* b : buf) cudaFree(b);
}

}  // namespace

BENCHMARK(BM_LaunchOneByOne)->RangeMultiplier(10)->Range(1, 1000)->UseManualTime();
BENCHMARK(BM_OneGraphLaunch)->RangeMultiplier(10)->Range(1, 1000)->UseManualTime();
BENCHMARK(BM_GraphChain)->ArgsProduct({{100}, {0, 1}})->ArgNames({"kernels", "pdl"})->UseManualTime();
