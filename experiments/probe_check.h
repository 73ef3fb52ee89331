#pragma once
// What the GPU probes share on the host: whether a GPU is there, reading a
// device buffer back, comparing results, and timing a captured chain.
#include <benchmark/benchmark.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "experiments/cudnn_probe_env.h"

namespace tr::probe {

inline bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

template <class T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> h(n);
  cudnn_graph::check_cuda(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return h;
}

// Relative L2 distance of got from ref.
template <class T, class U>
double rel_l2(const std::vector<T>& got, const std::vector<U>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = double(float(ref[i])), d = double(float(got[i])) - r;
    num += d * d;
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline bool same_bits(const std::vector<__half>& a, const std::vector<__half>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(__half)) == 0;
}

// Fixed-point sums [n][lo, hi] (probe_fixed_sums_cuda.h) as doubles.
inline std::vector<double> fixed_values(const std::vector<unsigned long long>& fx) {
  std::vector<double> v(fx.size() / 2);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double(static_cast<long long>(fx[2 * i + 1])) + std::ldexp(double(fx[2 * i]), -64);
  return v;
}

// Relative L2 of a fused kernel's 2*K per-channel sums against ref[2*K]: from
// its partials' finalized sums (fused path 1) or from its fixed-point
// accumulators fx[2*K][lo, hi] (path 4).
inline double fused_sums_error(int fused_path, const float* sums, const unsigned long long* fx, const float* ref,
                               int K) {
  const auto want = download(ref, size_t(2) * K);
  return fused_path == 1 ? rel_l2(download(sums, size_t(2) * K), want)
                         : rel_l2(fixed_values(download(fx, size_t(4) * K)), want);
}

// Captures chain(i) for i < chains on `stream` into one graph, then times
// the graph's launches with the state's iterations: seconds per chain as
// the manual time, and the counter "nodes" (graph nodes per chain).
inline void time_chains(benchmark::State& state, cudaStream_t stream, cudaEvent_t e0, cudaEvent_t e1, int chains,
                        const std::function<void(int)>& chain) {
  using cudnn_graph::check_cuda;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < chains; ++i) chain(i);
  check_cuda(cudaStreamEndCapture(stream, &graph), "capture");
  size_t nodes = 0;
  check_cuda(cudaGraphGetNodes(graph, nullptr, &nodes), "nodes");
  check_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  check_cuda(cudaGraphLaunch(exec, stream), "warm-up");
  check_cuda(cudaStreamSynchronize(stream), "warm-up");
  for (auto _ : state) {
    cudaEventRecord(e0, stream);
    cudaGraphLaunch(exec, stream);
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    state.SetIterationTime(1e-3 * ms / chains);
  }
  const cudaError_t e = cudaGetLastError();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  check_cuda(e, "graph launches");
  state.counters["nodes"] = double(nodes) / chains;
}

}  // namespace tr::probe
