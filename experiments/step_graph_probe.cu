// What a graph's shape costs per launch. A full-capture step of the cnn at
// batch 256 is idle about 10 us after its first kernel, at every batch, while
// the gaps between its other dependent kernels are 1-3 us (Note [one graph per
// step], framework/runtime/step_graphs.h). This probe times graphs of the same
// K dependent kernels (chain_kernel: 2 MiB each, programmatic edges, as tr's)
// built in the shapes a step graph has, launched back to back and alternating
// between two instantiations (tr alternates the step graphs of input buffers A
// and B). us_per_graph less that of the plain chain is what the shape costs;
// the chain of 2K kernels gives the cost per kernel, and so the chain's
// intercept: the cost of a launch itself.
//
// BM_StepGraphShape/shape:
//   0 chain       K kernels on one stream
//   1 chain2x     2K kernels on one stream
//   2 host_waits  the chain, with the step loop's event waits around each launch
//   3 children    the chain as six child-graph nodes (how a step graph is spliced)
//   4 fork_join   three more streams forked at the start and joined at the end,
//                 one kernel on a side stream halfway
//   5 event_node  an external event-record node halfway
//   6 memcpy      a 1.5 MiB copy from pinned host memory on a side stream
//   7 low_first   the first kernel on a low-priority stream, the rest on a
//                 high-priority one (ZERO_GRAD on UPDATE, then COMP_1)
//   8 all         3-7 together, with the host waits of 2
//   9 chain_normal   the chain captured on a stream of the default (least)
//                    priority instead of the greatest
//   10 chain_no_node_priority  the chain on the greatest-priority stream,
//                    instantiated without cudaGraphInstantiateFlagUseNodePriority
#include <benchmark/benchmark.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <vector>

namespace {

constexpr int kChain = 60;
constexpr int kLaunches = 20;
constexpr int kElems = 1 << 20;
constexpr size_t kCopyBytes = 3 << 19;

__global__ void probe_chain_kernel(const __half* __restrict__ x, __half* __restrict__ y, int n) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = __hadd(x[i], __float2half(1.f));
}

enum Shape {
  kPlain,
  kDouble,
  kHostWaits,
  kChildren,
  kForkJoin,
  kEventNode,
  kMemcpy,
  kLowFirst,
  kAll,
  kChainNormal,
  kNoNodePriority
};

struct Probe {
  std::array<cudaStream_t, 4> s{};  // s[0] high priority (COMP_1), the others low
  std::array<cudaEvent_t, 4> ev{};
  cudaEvent_t external = nullptr;
  __half* buf[2] = {nullptr, nullptr};
  __half* copy_dst = nullptr;
  void* pinned = nullptr;
  int sms = 0;

  Probe() {
    int least = 0, greatest = 0;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    for (size_t i = 0; i < s.size(); ++i) {
      cudaStreamCreateWithPriority(&s[i], cudaStreamNonBlocking, i == 0 ? greatest : least);
      cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming);
    }
    cudaEventCreateWithFlags(&external, cudaEventDisableTiming);
    for (__half*& b : buf) cudaMalloc(&b, kElems * sizeof(__half));
    for (__half* b : buf) cudaMemset(b, 0, kElems * sizeof(__half));
    cudaMalloc(&copy_dst, kCopyBytes);
    cudaMallocHost(&pinned, kCopyBytes);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  }
  ~Probe() {
    for (size_t i = 0; i < s.size(); ++i) {
      cudaStreamDestroy(s[i]);
      cudaEventDestroy(ev[i]);
    }
    cudaEventDestroy(external);
    for (__half* b : buf) cudaFree(b);
    cudaFree(copy_dst);
    cudaFreeHost(pinned);
  }

  void wait(int waiter, int on) {
    cudaEventRecord(ev[size_t(on)], s[size_t(on)]);
    cudaStreamWaitEvent(s[size_t(waiter)], ev[size_t(on)], 0);
  }

  int origin = 0;  // the stream a capture starts on (stream 0 in kernels() means it)

  // Kernels [first, first + count) of the chain, each reading the one before.
  void launch_chain(cudaStream_t st, int first, int count) {
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(sms * 4));
    cfg.blockDim = dim3(256);
    cfg.stream = st;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    for (int i = first; i < first + count; ++i)
      cudaLaunchKernelEx(&cfg, probe_chain_kernel, buf[i % 2], buf[(i + 1) % 2], kElems);
  }

  void kernels(int stream, int first, int count) {
    if (stream == 0) stream = origin;
    launch_chain(s[size_t(stream)], first, count);
  }

  // The chain of kernels [first, first + count) on stream 0 as one child node.
  void child(int first, int count) {
    cudaStream_t c = s[3];
    cudaGraph_t g = nullptr;
    cudaStreamBeginCapture(c, cudaStreamCaptureModeThreadLocal);
    launch_chain(c, first, count);
    cudaStreamEndCapture(c, &g);
    cudaStreamCaptureStatus status;
    cudaGraph_t into = nullptr;
    const cudaGraphNode_t* deps = nullptr;
    size_t n = 0;
    cudaStreamGetCaptureInfo(s[0], &status, nullptr, &into, &deps, nullptr, &n);
    cudaGraphNode_t node = nullptr;
    cudaGraphAddChildGraphNode(&node, into, deps, n, g);
    cudaStreamUpdateCaptureDependencies(s[0], &node, nullptr, 1, cudaStreamSetCaptureDependencies);
    cudaGraphDestroy(g);
  }

  cudaGraphExec_t build(Shape shape) {
    const bool all = shape == kAll;
    const int k = shape == kDouble ? 2 * kChain : kChain;
    cudaGraph_t g = nullptr;
    origin = shape == kChainNormal ? 3 : 0;
    cudaStreamBeginCapture(s[size_t(origin)], cudaStreamCaptureModeThreadLocal);
    if (all || shape == kForkJoin || shape == kLowFirst || shape == kMemcpy)
      for (int i = 1; i < 3; ++i) wait(i, 0);
    int done = 0;
    if (all || shape == kLowFirst) {
      kernels(1, 0, 1);
      wait(0, 1);
      done = 1;
    }
    if (all || shape == kChildren) {
      const int per = (k - done) / 6;
      for (int c = 0; c < 6; ++c) {
        const int count = c == 5 ? k - done - 5 * per : per;
        if (all && c == 1) {  // the copy beside the rest, from here
          wait(2, 0);
          cudaMemcpyAsync(copy_dst, pinned, kCopyBytes, cudaMemcpyHostToDevice, s[2]);
        }
        if (all && c == 3) {
          cudaEventRecordWithFlags(external, s[0], cudaEventRecordExternal);
          wait(1, 0);
          kernels(1, 0, 1);
        }
        child(done, count);
        done += count;
      }
    } else {
      const int half = (k - done) / 2, quarter = (k - done) / 4;
      kernels(0, done, quarter);
      if (shape == kMemcpy) {
        wait(2, 0);
        cudaMemcpyAsync(copy_dst, pinned, kCopyBytes, cudaMemcpyHostToDevice, s[2]);
      }
      kernels(0, done + quarter, half - quarter);
      if (shape == kEventNode) cudaEventRecordWithFlags(external, s[0], cudaEventRecordExternal);
      if (shape == kForkJoin) {
        wait(1, 0);
        kernels(1, 0, 1);
      }
      kernels(0, done + half, k - done - half);
    }
    if (all || shape == kForkJoin || shape == kLowFirst || shape == kMemcpy)
      for (int i = 1; i < 3; ++i) wait(0, i);
    cudaStreamEndCapture(s[size_t(origin)], &g);
    cudaGraphExec_t exec = nullptr;
    cudaGraphInstantiate(&exec, g, shape == kNoNodePriority ? 0 : cudaGraphInstantiateFlagUseNodePriority);
    cudaGraphDestroy(g);
    return exec;
  }
};

void BM_StepGraphShape(benchmark::State& state) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    state.SkipWithError("no CUDA device");
    return;
  }
  const auto shape = static_cast<Shape>(state.range(0));
  Probe p;
  std::array<cudaGraphExec_t, 2> exec = {p.build(shape), p.build(shape)};
  if (!exec[0] || !exec[1] || cudaGetLastError() != cudaSuccess) {
    state.SkipWithError("capture or instantiation failed");
    return;
  }
  const bool host_waits = shape == kHostWaits || shape == kAll;
  auto launch = [&](int i) {
    if (host_waits) {
      p.wait(0, 1);
      p.wait(0, 2);
    }
    cudaGraphLaunch(exec[size_t(i % 2)], p.s[0]);
    if (host_waits) {
      p.wait(1, 0);
      p.wait(2, 0);
    }
  };
  for (int i = 0; i < 4; ++i) launch(i);  // upload and warm up
  cudaStreamSynchronize(p.s[0]);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (auto _ : state) {
    cudaEventRecord(e0, p.s[0]);
    for (int i = 0; i < kLaunches; ++i) launch(i);
    cudaEventRecord(e1, p.s[0]);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    state.SetIterationTime(1e-3 * ms);
  }
  if (cudaGetLastError() != cudaSuccess) state.SkipWithError("launch failed");
  state.counters["us_per_graph"] =
      benchmark::Counter(1e-6 * kLaunches, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  for (cudaGraphExec_t e : exec) cudaGraphExecDestroy(e);
}

}  // namespace

BENCHMARK(BM_StepGraphShape)->DenseRange(0, 10)->ArgName("shape")->UseManualTime();
