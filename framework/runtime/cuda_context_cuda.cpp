#include "framework/runtime/cuda_context_cuda.h"

#include <dlfcn.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "framework/core/gpu_check_cuda.h"
#include "framework/core/setting.h"
#include "framework/graph/shape_inference.h"
#include "framework/runtime/context_factory.h"

namespace tr {
namespace {

ConvPlanCache::Options plan_options(const AlgoChoice& a) {
  ConvPlanCache::Options o;
  o.benchmark = a.benchmark;
  o.tc_filter = a.tc_filter;
  o.book = a.conv_plans;
  return o;
}

}  // namespace

CudaContext::CudaContext(int rank, int ranks, int device, AlgoChoice algos, Communicator* comm)
    : DeviceContext(rank, ranks, device), conv_plans_(plan_options(algos)), comm_(comm) {
  const bool deterministic = algos.deterministic;
  int count = 0;
  TR_GPU_CHECK(cudaGetDeviceCount(&count));
  TR_USER_CHECK(device >= 0 && device < count, "rank ", rank, " needs CUDA device ", device, " but ", count,
                " are visible");
  spec_.deterministic = deterministic;
  memset_kernels_ = algos.memset_kernels;
  make_current();
  // Note [stream priorities]: COMP_1 carries the step's critical path (the
  // forward and the data-gradient chain); the weight gradients beside it
  // (COMP_2, Note [streams inside a graph]) and the updates can wait. COMP_1
  // gets the device's greatest priority, so when both have blocks ready the
  // chain's go first. Captured kernels keep their stream's priority, and
  // CudaGraphExec instantiates with cudaGraphInstantiateFlagUseNodePriority.
  // Priorities order scheduling only; no result depends on them.
  int least_priority = 0, greatest_priority = 0;
  TR_GPU_CHECK(cudaDeviceGetStreamPriorityRange(&least_priority, &greatest_priority));
  for (size_t i = 0; i < streams_.size(); ++i) {
    const bool critical = static_cast<StreamKind>(i) == StreamKind::COMP_1;
    TR_GPU_CHECK(cudaStreamCreateWithPriority(&streams_[i], cudaStreamNonBlocking,
                                              critical ? greatest_priority : least_priority));
    TR_GPU_CHECK(cudaEventCreateWithFlags(&stream_events_[i], cudaEventDisableTiming));
  }
  for (auto& e : transfer_done_) TR_GPU_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (auto& e : time_marks_) TR_GPU_CHECK(cudaEventCreate(&e));
  for (size_t i = 0; i < handles_.size(); ++i) {
    cudnnHandle_t dnn = nullptr;
    TR_GPU_CHECK(cudnnCreate(&dnn));
    cudnn_[i] = dnn;
    TR_GPU_CHECK(cudnnSetStream(dnn, streams_[i]));
    cublasHandle_t blas = nullptr;
    TR_GPU_CHECK(cublasCreate(&blas));
    cublas_[i] = blas;
    cublasLtHandle_t lt = nullptr;
    TR_GPU_CHECK(cublasLtCreate(&lt));
    cublaslt_[i] = lt;
    GpuHandles& h = handles_[i];
    h.device = device;
    h.cudnn = cudnn_[i];
    h.cublas = cublas_[i];
    h.cublaslt = cublaslt_[i];
    h.conv_plans = &conv_plans_;
    h.deterministic = deterministic;
    h.programmatic_launch = algos.programmatic_launch;
    h.grid_sync_sums = algos.grid_sync;
    h.sm_count = query_sm_count(device);
  }
}

CudaContext::~CudaContext() {
  TR_GPU_WARN(cudaSetDevice(spec_.device));
  for (auto s : streams_)
    if (s) TR_GPU_WARN(cudaStreamSynchronize(s));
  for (auto p : pinned_)
    if (p) TR_GPU_WARN(cudaFreeHost(p));
  if (base_) TR_GPU_WARN(cudaFree(base_));
  for (auto h : cublaslt_)
    if (h) TR_GPU_WARN(cublasLtDestroy(static_cast<cublasLtHandle_t>(h)));
  for (auto h : cublas_)
    if (h) TR_GPU_WARN(cublasDestroy(static_cast<cublasHandle_t>(h)));
  for (auto h : cudnn_)
    if (h) TR_GPU_WARN(cudnnDestroy(static_cast<cudnnHandle_t>(h)));
  for (auto e : transfer_done_)
    if (e) TR_GPU_WARN(cudaEventDestroy(e));
  for (auto e : time_marks_)
    if (e) TR_GPU_WARN(cudaEventDestroy(e));
  for (auto e : stream_events_)
    if (e) TR_GPU_WARN(cudaEventDestroy(e));
  for (auto s : streams_)
    if (s) TR_GPU_WARN(cudaStreamDestroy(s));
}

void CudaContext::make_current() const { TR_GPU_CHECK(cudaSetDevice(spec_.device)); }

// Note [conv plans before capture]: every convolution shape of every variant is
// prepared here, before the arena exists and long before any capture.
int64_t CudaContext::prepare_workspace(const CompiledModel& m, const std::array<VariantDims, kVariantCount>& dims) {
  make_current();
  const GpuHandles& h = handles_[static_cast<size_t>(StreamKind::COMP_1)];
  for (Variant v : kAllVariants) {
    const VariantDims& d = dims[static_cast<size_t>(vidx(v))];
    if (d.batch == 0) continue;
    const auto shapes = infer_shapes(m.cg, v, d);
    for (GraphId g : graphs_of(m.cg, v)) {
      for (const Node& n : m.cg.nodes(g)) {
        if (n.kind != Node::Kind::Compute) continue;
        if (n.op != OpKind::ConvFwd && n.op != OpKind::ConvBwdData && n.op != OpKind::ConvBwdFilter) continue;
        std::vector<Shape> in;
        for (TensorId t : n.in) in.push_back(shapes[size_t(t)]);
        conv_plans_.prepare(h, conv_key(n.op, in.data(), int(in.size()), n.attrs, m.compute_dtype));
      }
    }
  }
  big_slice_ = std::max<int64_t>(int64_t(conv_plans_.max_workspace_bytes()), kCublasBytes);
  big_slice_ = (big_slice_ + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  // COMP_1 and COMP_2 (weight gradients, Note [streams inside a graph]) run
  // convolutions and GEMMs: both get the large slice.
  return 2 * big_slice_ + (kStreamKindCount - 2) * kSmallSlice;
}

void CudaContext::allocate(const ContextSpec& spec) {
  TR_CHECK(!base_, "arena allocated twice");
  TR_CHECK(spec.workspace_bytes >= 2 * big_slice_ + (kStreamKindCount - 2) * kSmallSlice,
           "workspace smaller than prepared");
  const bool det = spec_.deterministic;
  spec_ = spec;
  spec_.deterministic = det;  // fixed at construction (the conv plans were chosen with it)
  make_current();
  // A batch the device cannot hold is the user's to change: say so in one line
  // with the bytes wanted and free, before cudaMalloc's bare "out of memory".
  size_t free_bytes = 0, total_bytes = 0;
  TR_GPU_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double gib = 1024.0 * 1024.0 * 1024.0;
  TR_USER_CHECK(size_t(spec.arena_bytes) <= free_bytes, "rank ", spec.rank, " (device ", spec_.device,
                "): this model and batch need ", spec.arena_bytes, " bytes (", double(spec.arena_bytes) / gib,
                " GiB) of device memory but ", free_bytes, " bytes (", double(free_bytes) / gib, " GiB) of ",
                double(total_bytes) / gib, " GiB are free; use a smaller ", setting("batch"));
  void* p = nullptr;
  TR_GPU_ALLOC(cudaMalloc(&p, static_cast<size_t>(spec.arena_bytes)), static_cast<size_t>(spec.arena_bytes));
  ++allocations_;
  base_ = static_cast<std::byte*>(p);
  // Zero once: region padding must read as zero forever.
  TR_GPU_CHECK(cudaMemset(base_, 0, static_cast<size_t>(spec.arena_bytes)));
  for (int s = 0; s < 2; ++s) {
    const size_t img = static_cast<size_t>(spec.staging_image_bytes);
    const size_t lab = static_cast<size_t>(spec.staging_label_count) * sizeof(int32_t);
    TR_GPU_HOST_ALLOC(cudaMallocHost(&pinned_[s], img + lab + 256), img + lab + 256);
    ++allocations_;
    staging_images_[s] = static_cast<uint8_t*>(pinned_[s]);
    staging_labels_[s] = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(pinned_[s]) + (img + 255) / 256 * 256);
    staging_[s] = HostBatch{staging_images_[s], staging_labels_[s]};
  }
  int64_t off = spec.workspace_offset;
  for (int i = 0; i < kStreamKindCount; ++i) {
    const StreamKind k = static_cast<StreamKind>(i);
    const int64_t bytes = (k == StreamKind::COMP_1 || k == StreamKind::COMP_2) ? big_slice_ : kSmallSlice;
    GpuHandles& h = handles_[size_t(i)];
    h.workspace = base_ + off;
    h.workspace_bytes = static_cast<size_t>(bytes);
    off += bytes;
    ExecEnv& e = envs_[size_t(i)];
    e.scalars = scalars();
    e.stream = streams_[size_t(i)];
    e.gpu = &h;
    e.comm = comm_;
    e.staging = staging_.data();
    e.rank = spec.rank;
    e.ranks = spec.ranks;
  }
}

void CudaContext::upload(int64_t offset, const void* src, size_t bytes) {
  TR_CHECK(offset >= 0 && offset + int64_t(bytes) <= spec_.arena_bytes, "upload out of the arena");
  make_current();
  synchronize();
  TR_GPU_CHECK(cudaMemcpy(base_ + offset, src, bytes, cudaMemcpyHostToDevice));
}

void CudaContext::download(int64_t offset, void* dst, size_t bytes) const {
  TR_CHECK(offset >= 0 && offset + int64_t(bytes) <= spec_.arena_bytes, "download out of the arena");
  make_current();
  for (auto s : streams_) TR_GPU_CHECK(cudaStreamSynchronize(s));
  TR_GPU_CHECK(cudaMemcpy(dst, base_ + offset, bytes, cudaMemcpyDeviceToHost));
}

void CudaContext::stream_wait(StreamKind waiter, StreamKind on) {
  if (waiter == on) return;
  cudaEvent_t e = stream_events_[static_cast<size_t>(on)];
  TR_GPU_CHECK(cudaEventRecord(e, stream(on)));
  TR_GPU_CHECK(cudaStreamWaitEvent(stream(waiter), e, 0));
  launch_tally().event_ops += 2;
}

void CudaContext::record_transfer_done(int slot) {
  cudaStream_t s = stream(StreamKind::TRANS);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  TR_GPU_CHECK(cudaStreamIsCapturing(s, &status));
  // Inside a step graph the record becomes an event-record node that fires at
  // every launch, so the host's wait_transfer_done still sees each copy finish.
  const unsigned flags = status == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : cudaEventRecordDefault;
  TR_GPU_CHECK(cudaEventRecordWithFlags(transfer_done_[static_cast<size_t>(slot)], s, flags));
  ++launch_tally().event_ops;
}

void CudaContext::wait_or_throw(cudaEvent_t e, const char* what) const {
  const auto t0 = std::chrono::steady_clock::now();
  const auto limit = std::chrono::milliseconds(spec_.watchdog_ms);
  for (int spins = 0;; ++spins) {
    const cudaError_t st = cudaEventQuery(e);
    if (st == cudaSuccess) return;
    if (st != cudaErrorNotReady) TR_GPU_CHECK(st);
    const auto waited = std::chrono::steady_clock::now() - t0;
    if (waited > limit)
      throw Error(cat("watchdog: rank ", spec_.rank, " (device ", spec_.device, "): ", what, " did not finish within ",
                      spec_.watchdog_ms, " ms"));
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void CudaContext::wait_transfer_done(int slot) {
  wait_or_throw(transfer_done_[static_cast<size_t>(slot)], "an input transfer");
}

void CudaContext::mark_time(StreamKind s, int slot) {
  TR_CHECK(slot >= 0 && slot < kTimeSlots, "time slot ", slot, " out of range");
  TR_GPU_CHECK(cudaEventRecord(time_marks_[static_cast<size_t>(slot)], stream(s)));
}

double CudaContext::elapsed_ms(int from, int to) const {
  TR_CHECK(from >= 0 && from < kTimeSlots && to >= 0 && to < kTimeSlots, "time slots out of range");
  float ms = 0;
  TR_GPU_CHECK(cudaEventElapsedTime(&ms, time_marks_[static_cast<size_t>(from)], time_marks_[static_cast<size_t>(to)]));
  return ms;
}

void CudaContext::synchronize() {
  make_current();  // also called from threads that drive several ranks
  for (size_t i = 0; i < streams_.size(); ++i) {
    TR_GPU_CHECK(cudaEventRecord(stream_events_[i], streams_[i]));
    wait_or_throw(stream_events_[i], "the work on a stream");
  }
}

std::unique_ptr<DeviceContext> make_cuda_context(int rank, int ranks, int device, AlgoChoice algos,
                                                 Communicator* comm) {
  return std::make_unique<CudaContext>(rank, ranks, device, algos, comm);
}

namespace {

// Whether the NVIDIA driver's library is on this machine at all: without it
// the runtime says cudaErrorInsufficientDriver, as it does for a driver too
// old for it.
bool nvidia_driver_present() {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return false;
  dlclose(lib);
  return true;
}

}  // namespace

int cuda_device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaSuccess) return n;
  cudaGetLastError();  // clear the sticky error
  if (e == cudaErrorNoDevice) return 0;
  if (e == cudaErrorInsufficientDriver && !nvidia_driver_present()) return 0;
  throw Error(cat("cannot count the CUDA GPUs: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

}  // namespace tr
