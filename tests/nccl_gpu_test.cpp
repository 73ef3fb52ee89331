// NCCL alone, over every visible GPU, with nothing of the trainer around it:
// one thread per GPU, an all-reduce run eagerly and then captured into one CUDA
// graph per GPU and launched several times. When a data-parallel run stops,
// these say whether the communicator itself works on the machine.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "framework/comm/comm_factory.h"
#include "framework/core/gpu_check_cuda.h"
#include "tests/gpu_test_util.h"

namespace tr {
namespace {

constexpr int64_t kElems = 1 << 20;  // 4 MB of f32 per GPU, the size of a gradient bucket

// Per GPU: a stream and a buffer holding rank+1 in every element.
struct RankBuffers {
  cudaStream_t stream = nullptr;
  float* data = nullptr;
};

void on_every_gpu(int gpus, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < gpus; ++r)
    threads.emplace_back([&, r] {
      TR_GPU_CHECK(cudaSetDevice(r));
      fn(r);
    });
  for (auto& t : threads) t.join();
}

void fill(RankBuffers& b, int rank) {
  std::vector<float> host(kElems, static_cast<float>(rank + 1));
  TR_GPU_CHECK(cudaMemcpyAsync(b.data, host.data(), kElems * sizeof(float), cudaMemcpyHostToDevice, b.stream));
  TR_GPU_CHECK(cudaStreamSynchronize(b.stream));
}

// Every element of every GPU's buffer must be sum(rank+1) * 2^(passes-1) after
// `passes` all-reduces of the buffer onto itself.
void expect_sums(RankBuffers& b, int gpus, int passes, int rank) {
  std::vector<float> host(kElems);
  TR_GPU_CHECK(cudaMemcpyAsync(host.data(), b.data, kElems * sizeof(float), cudaMemcpyDeviceToHost, b.stream));
  TR_GPU_CHECK(cudaStreamSynchronize(b.stream));
  float want = gpus * (gpus + 1) / 2.0f;
  for (int p = 1; p < passes; ++p) want *= gpus;
  int wrong = 0;
  for (float v : host) wrong += v != want;
  EXPECT_EQ(0, wrong) << "gpu " << rank << ": elements differing from " << want << ", e.g. " << host[0];
}

TEST(NcclGpu, AllReduceSumsOverEveryGpuEagerlyAndCaptured) {
  SKIP_WITHOUT_GPU();
  const int gpus = cuda_device_count();
  auto comm = make_nccl_communicator(gpus, nullptr, 0, std::chrono::milliseconds(60000));
  std::vector<RankBuffers> bufs(static_cast<size_t>(gpus));
  on_every_gpu(gpus, [&](int r) {
    RankBuffers& b = bufs[static_cast<size_t>(r)];
    TR_GPU_CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    TR_GPU_CHECK(cudaMalloc(&b.data, kElems * sizeof(float)));
    fill(b, r);
  });
  on_every_gpu(gpus, [&](int r) {
    RankBuffers& b = bufs[static_cast<size_t>(r)];
    comm->allreduce(r, b.data, kElems, DType::F32, ReduceOp::Sum, b.stream);
    expect_sums(b, gpus, 1, r);
  });
  std::printf("[ nccl ] %d GPU(s): eager all-reduce of %lld floats summed\n", gpus, static_cast<long long>(kElems));
  // Captured: each thread captures its own all-reduce (capture mode is
  // thread-local), then launches its graph three times.
  constexpr int kLaunches = 3;
  on_every_gpu(gpus, [&](int r) {
    RankBuffers& b = bufs[static_cast<size_t>(r)];
    fill(b, r);
    cudaGraph_t graph = nullptr;
    TR_GPU_CHECK(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeThreadLocal));
    comm->allreduce(r, b.data, kElems, DType::F32, ReduceOp::Sum, b.stream);
    TR_GPU_CHECK(cudaStreamEndCapture(b.stream, &graph));
    cudaGraphExec_t exec = nullptr;
    TR_GPU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < kLaunches; ++i) TR_GPU_CHECK(cudaGraphLaunch(exec, b.stream));
    expect_sums(b, gpus, kLaunches, r);
    TR_GPU_CHECK(cudaGraphExecDestroy(exec));
    TR_GPU_CHECK(cudaGraphDestroy(graph));
  });
  std::printf("[ nccl ] %d GPU(s): captured all-reduce launched %d times, sums right\n", gpus, kLaunches);
  on_every_gpu(gpus, [&](int r) {
    RankBuffers& b = bufs[static_cast<size_t>(r)];
    TR_GPU_CHECK(cudaFree(b.data));
    TR_GPU_CHECK(cudaStreamDestroy(b.stream));
  });
}

}  // namespace
}  // namespace tr
