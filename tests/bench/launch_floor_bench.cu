// The launch floor (issue: what the modes are judged against): N empty kernels
// launched one by one, against the same N kernels captured once and replayed
// with one cudaGraphLaunch. Reports wall time per kernel (host + GPU), measured
// over whole iterations that end in a stream synchronize, so both sides include
// the GPU's own per-kernel scheduling cost.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>

namespace {

__global__ void empty_kernel() {}

bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
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
  state.counters["us_per_kernel"] = benchmark::Counter(1e-6 * n, benchmark::Counter::kIsIterationInvariantRate |
                                                                    benchmark::Counter::kInvert);
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
  state.counters["us_per_kernel"] = benchmark::Counter(1e-6 * n, benchmark::Counter::kIsIterationInvariantRate |
                                                                    benchmark::Counter::kInvert);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

}  // namespace

BENCHMARK(BM_LaunchOneByOne)->RangeMultiplier(10)->Range(1, 1000)->UseManualTime();
BENCHMARK(BM_OneGraphLaunch)->RangeMultiplier(10)->Range(1, 1000)->UseManualTime();
