// ConvPlanCache: see Note [conv plans before capture] in conv_plan_cache_cuda.h.
#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "framework/core/gpu_check_cuda.h"
#include "framework/core/log.h"
#include "framework/core/setting.h"
#include "framework/ops/conv_plans/conv_engine_cuda.h"
#include "framework/ops/conv_plans/conv_filter_tc_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"

namespace tr {

// ---------------------------------------------------------------- descriptors

namespace cudnn_raii {
TensorDesc::TensorDesc() { TR_GPU_CHECK(cudnnCreateTensorDescriptor(&d_)); }
TensorDesc::~TensorDesc() {
  if (d_) TR_GPU_WARN(cudnnDestroyTensorDescriptor(d_));
}
FilterDesc::FilterDesc() { TR_GPU_CHECK(cudnnCreateFilterDescriptor(&d_)); }
FilterDesc::~FilterDesc() {
  if (d_) TR_GPU_WARN(cudnnDestroyFilterDescriptor(d_));
}
ConvDesc::ConvDesc() { TR_GPU_CHECK(cudnnCreateConvolutionDescriptor(&d_)); }
ConvDesc::~ConvDesc() {
  if (d_) TR_GPU_WARN(cudnnDestroyConvolutionDescriptor(d_));
}
}  // namespace cudnn_raii

// Note [small-C convolutions]: the kernels know 3x3 / stride 1 / pad 1 only.
bool uses_small_c_kernel(const ConvKey& key) {
  return key.c <= kSmallConvMaxC && key.r == 3 && key.stride == 1 && key.pad == 1 &&
         (key.dir == ConvDir::Fwd || key.dir == ConvDir::BwdFilter);
}

std::string ConvPlan::describe() const {
  if (impl == ConvImpl::SmallC) return cat(key.str(), ": direct small-C kernel, workspace ", workspace_bytes, " B");
  if (impl == ConvImpl::FilterTc)
    return cat(key.str(), ": direct tensor-core filter-gradient kernel, workspace ", workspace_bytes, " B");
  const std::string timed = time_ms >= 0 ? cat(", ", time_ms, " ms (legacy plan ", legacy_ms, " ms)") : "";
  if (impl == ConvImpl::CudnnEngine)
    return cat(key.str(), ": cuDNN engine ", engine ? engine->engine : -1, ", workspace ", workspace_bytes, " B",
               timed);
  return cat(key.str(), ": algo ", algo, ", workspace ", workspace_bytes, " B, math ", int(math), timed);
}

cudnnStatus_t run_cudnn_plan(cudnnHandle_t h, const ConvPlan& p, void* x, void* w, void* y, void* ws) {
  if (p.impl == ConvImpl::CudnnEngine) return run_conv_execution_plan(h, p.engine->plan, x, w, y, ws);
  TR_CHECK(p.impl == ConvImpl::Cudnn, "run_cudnn_plan: ", p.describe(), " is not a cuDNN plan");
  const float alpha = 1.f, beta = 0.f;
  switch (p.key.dir) {
    case ConvDir::Fwd:
      return cudnnConvolutionForward(h, &alpha, p.x.get(), x, p.w.get(), w, p.conv.get(),
                                     cudnnConvolutionFwdAlgo_t(p.algo), ws, p.workspace_bytes, &beta, p.y.get(), y);
    case ConvDir::BwdData:
      return cudnnConvolutionBackwardData(h, &alpha, p.w.get(), w, p.y.get(), y, p.conv.get(),
                                          cudnnConvolutionBwdDataAlgo_t(p.algo), ws, p.workspace_bytes, &beta,
                                          p.x.get(), x);
    case ConvDir::BwdFilter: break;
  }
  return cudnnConvolutionBackwardFilter(h, &alpha, p.x.get(), x, p.y.get(), y, p.conv.get(),
                                        cudnnConvolutionBwdFilterAlgo_t(p.algo), ws, p.workspace_bytes, &beta,
                                        p.w.get(), w);
}

// ---------------------------------------------------------------- selection

namespace {

// Picks the first acceptable candidate (cuDNN returns them fastest / most
// preferred first). f32 plans refuse tensor-op math (TF32) outright.
template <typename Perf>
const Perf* pick(const Perf* perf, int n, bool deterministic, size_t limit, bool f32) {
  for (int i = 0; i < n; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.memory > limit) continue;
    if (f32 && (p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) continue;
    return &p;
  }
  return nullptr;
}

std::string candidates(const auto* perf, int n) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += cat(i ? "; " : "", "algo ", int(perf[i].algo), " status ", int(perf[i].status), " det ",
             int(perf[i].determinism), " mem ", perf[i].memory, " math ", int(perf[i].mathType));
  return s;
}

template <typename Perf>
void apply_pick(ConvPlan& p, const Perf* perf, int n, bool deterministic, size_t limit) {
  const bool f32 = p.key.dtype == DType::F32;
  const Perf* best = pick(perf, n, deterministic, limit, f32);
  if (best == nullptr) {
    // Only the workspace stands in the way: the shapes are too large, which the
    // user can change.
    if (pick(perf, n, deterministic, SIZE_MAX, f32) != nullptr)
      throw UserError(cat("a convolution needs more than ", limit, " bytes of cuDNN workspace at this batch: ",
                          p.key.str(), "; use a smaller ", setting("batch")));
    throw Error(cat("ConvPlanCache: no usable cuDNN algorithm for ", p.key.str(), " (deterministic=", deterministic,
                    ", workspace limit ", limit, " B); candidates: ", candidates(perf, n)));
  }
  p.algo = int(best->algo);
  p.workspace_bytes = best->memory;
  if (!f32) p.math = best->mathType;  // f32 keeps CUDNN_FMA_MATH
  TR_GPU_CHECK(cudnnSetConvolutionMathType(p.conv.get(), p.math));
}

// Scratch tensors of a key's shapes and a workspace, to time plans on
// (Note [timed convolution plans]); filled with a finite value. Works on a
// stream of its own, which it lends the handle until it goes.
class PlanTimer {
 public:
  PlanTimer(cudnnHandle_t h, const ConvKey& key, size_t workspace_bytes) : h_(h) {
    TR_GPU_CHECK(cudnnGetStream(h, &lent_from_));
    try {
      TR_GPU_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      TR_GPU_CHECK(cudnnSetStream(h, stream_));
      const size_t es = dtype_size(key.dtype);
      const size_t bytes[4] = {size_t(key.n * key.h * key.w * key.c) * es, size_t(key.k * key.r * key.r * key.c) * es,
                               size_t(key.n * key.ho() * key.wo() * key.k) * es, std::max<size_t>(workspace_bytes, 1)};
      for (int i = 0; i < 4; ++i) {
        TR_GPU_ALLOC(cudaMalloc(&buf_[i], bytes[i]), bytes[i]);
        TR_GPU_CHECK(cudaMemsetAsync(buf_[i], 0x3C, bytes[i], stream_));  // f16 1.06, f32 0.0115
      }
      TR_GPU_CHECK(cudaEventCreate(&e0_));
      TR_GPU_CHECK(cudaEventCreate(&e1_));
    } catch (...) {
      release();
      throw;
    }
  }
  ~PlanTimer() { release(); }
  PlanTimer(const PlanTimer&) = delete;
  PlanTimer& operator=(const PlanTimer&) = delete;

  // ms per execution of p on the GPU: one execution outside capture (which
  // also shows whether cuDNN runs it at all), then kTimedRuns executions
  // captured in a graph, replayed once to warm up and three times timed; the
  // median. A graph, because the legacy API's host work per call (tens of
  // microseconds) would otherwise be timed in place of small kernels, and a
  // step replays graphs. Negative where cuDNN refuses p.
  float time(const ConvPlan& p) {
    auto run = [&] { return run_cudnn_plan(h_, p, buf_[0], buf_[1], buf_[2], buf_[3]) == CUDNN_STATUS_SUCCESS; };
    if (!run() || cudaStreamSynchronize(stream_) != cudaSuccess) return -1.f;
    cudaGraph_t graph = nullptr;
    TR_GPU_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    bool ok = true;
    for (int i = 0; i < kTimedRuns && ok; ++i) ok = run();
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    cudaGraphExec_t exec = nullptr;
    if (ok && ended == cudaSuccess) ok = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph) TR_GPU_WARN(cudaGraphDestroy(graph));
    if (!ok || ended != cudaSuccess) {
      (void)cudaGetLastError();  // a refused capture is this candidate's failure, not the process's
      return -1.f;
    }
    struct ExecOwner {  // on every way out
      cudaGraphExec_t e;
      ~ExecOwner() { TR_GPU_WARN(cudaGraphExecDestroy(e)); }
    } owner{exec};
    std::vector<float> ms;
    TR_GPU_CHECK(cudaGraphLaunch(exec, stream_));
    for (int r = 0; r < 3; ++r) {
      TR_GPU_CHECK(cudaEventRecord(e0_, stream_));
      TR_GPU_CHECK(cudaGraphLaunch(exec, stream_));
      TR_GPU_CHECK(cudaEventRecord(e1_, stream_));
      TR_GPU_CHECK(cudaEventSynchronize(e1_));
      float t = 0;
      TR_GPU_CHECK(cudaEventElapsedTime(&t, e0_, e1_));
      ms.push_back(t / kTimedRuns);
    }
    std::sort(ms.begin(), ms.end());
    return ms[1];
  }

 private:
  // The handle gets its stream back; what was made is freed.
  void release() {
    if (stream_) TR_GPU_WARN(cudaStreamSynchronize(stream_));
    TR_GPU_WARN(cudnnSetStream(h_, lent_from_));
    for (void* b : buf_)
      if (b) TR_GPU_WARN(cudaFree(b));
    if (e0_) TR_GPU_WARN(cudaEventDestroy(e0_));
    if (e1_) TR_GPU_WARN(cudaEventDestroy(e1_));
    if (stream_) TR_GPU_WARN(cudaStreamDestroy(stream_));
  }

  cudnnHandle_t h_;
  cudaStream_t lent_from_ = nullptr;  // the handle's stream before
  cudaStream_t stream_ = nullptr;
  void* buf_[4] = {nullptr, nullptr, nullptr, nullptr};  // x, w, y, workspace
  cudaEvent_t e0_ = nullptr, e1_ = nullptr;
};

// Note [timed convolution plans]: p holds the heuristic's legacy plan; an
// engine config that beats it by more than kEngineMargin takes its place.
void time_against_engines(cudnnHandle_t h, ConvPlan& p, bool deterministic, size_t limit) {
  std::vector<std::shared_ptr<const ConvEnginePlan>> engines =
      conv_engine_plans(h, p.key, deterministic, limit, kEngineCandidates);
  size_t ws = p.workspace_bytes;
  for (const auto& e : engines) ws = std::max(ws, e->workspace_bytes);
  PlanTimer timer(h, p.key, ws);
  p.legacy_ms = p.time_ms = timer.time(p);
  TR_CHECK(p.legacy_ms >= 0, "ConvPlanCache: the heuristic's plan does not run: ", p.describe());
  ConvPlan trial;  // an engine config as a plan, to time it
  trial.key = p.key;
  trial.impl = ConvImpl::CudnnEngine;
  std::shared_ptr<const ConvEnginePlan> best;
  float best_ms = -1.f;
  for (const auto& e : engines) {
    trial.engine = e;
    trial.workspace_bytes = e->workspace_bytes;
    const float ms = timer.time(trial);
    if (ms >= 0 && (best_ms < 0 || ms < best_ms)) {
      best_ms = ms;
      best = e;
    }
  }
  if (best && best_ms < p.legacy_ms * float(1 - kEngineMargin)) {
    p.impl = ConvImpl::CudnnEngine;
    p.engine = best;
    p.workspace_bytes = best->workspace_bytes;
    p.time_ms = best_ms;
  }
}

// What a book records for p (Note [convolution plan books]).
ConvPlanChoice choice_of(const ConvPlan& p) {
  ConvPlanChoice c;
  c.legacy_algo = p.algo;
  if (p.impl == ConvImpl::CudnnEngine && p.engine) {
    c.candidate = p.engine->candidate;
    c.engine = p.engine->engine;
  }
  c.time_ms = p.time_ms;
  c.legacy_ms = p.legacy_ms;
  return c;
}

// A recorded choice in place of timing; p holds the heuristic's legacy plan.
// A choice that does not fit this cuDNN (another heuristic algorithm, another
// engine at the candidate's place) is the file's fault, not an internal error.
void take_choice(cudnnHandle_t h, ConvPlan& p, const ConvPlanChoice& c, bool deterministic, size_t limit,
                 const std::string& source) {
  TR_USER_CHECK(c.legacy_algo == p.algo, source, ": ", p.key.str(), " was recorded with the heuristic's algorithm ",
                c.legacy_algo, ", but here the heuristic chooses ", p.algo,
                ": the plans come from another setup; time them again");
  p.time_ms = c.time_ms;
  p.legacy_ms = c.legacy_ms;
  if (c.candidate < 0) return;
  std::vector<std::shared_ptr<const ConvEnginePlan>> engines =
      conv_engine_plans(h, p.key, deterministic, limit, c.candidate + 1);
  const bool there = int(engines.size()) > c.candidate;
  TR_USER_CHECK(there && engines[size_t(c.candidate)]->engine == c.engine, source, ": ", p.key.str(),
                " was recorded with engine candidate ", c.candidate, " (cuDNN engine ", c.engine, "), but here ",
                there ? cat("that candidate is cuDNN engine ", engines[size_t(c.candidate)]->engine)
                      : cat("the key has ", engines.size(), " candidate(s)"),
                ": the plans come from another setup; time them again");
  p.impl = ConvImpl::CudnnEngine;
  p.engine = engines[size_t(c.candidate)];
  p.workspace_bytes = p.engine->workspace_bytes;
}

}  // namespace

// ---------------------------------------------------------------- cache

ConvPlanCache::ConvPlanCache() : ConvPlanCache(Options{}) {}
ConvPlanCache::ConvPlanCache(Options opt) : opt_(opt) {}
ConvPlanCache::~ConvPlanCache() = default;

namespace {

// The key's tensor, filter and convolution descriptors, checked against our
// output size (conv_out_size, the CPU's), and the math type.
void describe_for_cudnn(ConvPlan& p) {
  const ConvKey& key = p.key;
  const cudnnDataType_t dt = cudnn_graph::data_type(key.dtype);
  const int n = int(key.n), hh = int(key.h), ww = int(key.w), c = int(key.c), k = int(key.k);
  const int r = int(key.r), st = int(key.stride), pd = int(key.pad), ho = int(key.ho()), wo = int(key.wo());
  TR_GPU_CHECK(cudnnSetTensor4dDescriptor(p.x.get(), CUDNN_TENSOR_NHWC, dt, n, c, hh, ww));
  TR_GPU_CHECK(cudnnSetTensor4dDescriptor(p.y.get(), CUDNN_TENSOR_NHWC, dt, n, k, ho, wo));
  TR_GPU_CHECK(cudnnSetFilter4dDescriptor(p.w.get(), dt, CUDNN_TENSOR_NHWC, k, c, r, r));
  TR_GPU_CHECK(
      cudnnSetConvolution2dDescriptor(p.conv.get(), pd, pd, st, st, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  int on = 0, oc = 0, oh = 0, ow = 0;
  TR_GPU_CHECK(cudnnGetConvolution2dForwardOutputDim(p.conv.get(), p.x.get(), p.w.get(), &on, &oc, &oh, &ow));
  TR_CHECK(on == n && oc == k && oh == ho && ow == wo, "ConvPlanCache: cuDNN's output [", on, ",", oh, ",", ow, ",", oc,
           "] differs from ", key.str());
  p.math = is_half(key.dtype) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  TR_GPU_CHECK(cudnnSetConvolutionMathType(p.conv.get(), p.math));
}

// cuDNN's legacy heuristics' pick for the key's direction, and its workspace.
void pick_legacy_algo(cudnnHandle_t h, ConvPlan& p, bool det, size_t limit) {
  int got = 0;
  size_t ws = 0;
  switch (p.key.dir) {
    case ConvDir::Fwd: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      TR_GPU_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
      apply_pick(p, perf, got, det, limit);
      TR_GPU_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
                                                           cudnnConvolutionFwdAlgo_t(p.algo), &ws));
      break;
    }
    case ConvDir::BwdData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      TR_GPU_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf));
      apply_pick(p, perf, got, det, limit);
      TR_GPU_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
                                                                cudnnConvolutionBwdDataAlgo_t(p.algo), &ws));
      break;
    }
    case ConvDir::BwdFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      TR_GPU_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
                                                                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf));
      apply_pick(p, perf, got, det, limit);
      TR_GPU_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
                                                                  cudnnConvolutionBwdFilterAlgo_t(p.algo), &ws));
      break;
    }
  }
  if (ws > p.workspace_bytes) p.workspace_bytes = ws;
  TR_CHECK(p.workspace_bytes <= limit, "ConvPlanCache: ", p.describe(), " exceeds the workspace limit ", limit);
}

}  // namespace

const ConvPlan& ConvPlanCache::prepare(const GpuHandles& g, const ConvKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;

  TR_CHECK(g.cudnn != nullptr, "ConvPlanCache::prepare: no cuDNN handle");
  TR_CHECK(key.dtype == DType::F32 || is_half(key.dtype), "ConvPlanCache: ", key.str(),
           ": only f32, f16 and bf16 run on CUDA");
  for (int64_t v : {key.n, key.h, key.w, key.c, key.k, key.r, key.stride, key.ho(), key.wo()})
    TR_CHECK(v > 0 && v <= INT_MAX, "ConvPlanCache: bad dimension in ", key.str());
  TR_CHECK(key.pad >= 0 && key.pad < key.r, "ConvPlanCache: bad padding in ", key.str());
  // cuDNN's tensor descriptors count elements in 32 bits: a batch that makes
  // one activation larger is the user's to shrink, not an internal error.
  const int64_t biggest = std::max(key.n * key.h * key.w * key.c, key.n * key.ho() * key.wo() * key.k);
  TR_USER_CHECK(biggest < (int64_t(1) << 31), "a convolution's activation of ", biggest,
                " elements is more than cuDNN takes in one tensor (2^31): ", key.str(), "; use a smaller ",
                setting("batch"));
  auto p = std::make_unique<ConvPlan>();
  p->key = key;
  // tr's own kernels first; cuDNN takes every other shape.
  if (uses_small_c_kernel(key)) {  // Note [small-C convolutions]
    p->impl = ConvImpl::SmallC;
    p->workspace_bytes = small_c_conv_workspace_bytes(key, cuda::sm_count(g));
  } else if (opt_.tc_filter && filter_tc_beats_cudnn(key)) {  // Note [3x3 filter gradient on tensor cores]
    prepare_filter_tc_device();
    p->impl = ConvImpl::FilterTc;
    p->workspace_bytes = filter_tc_workspace_bytes(key, cuda::sm_count(g));
  } else {
    describe_for_cudnn(*p);
    pick_legacy_algo(static_cast<cudnnHandle_t>(g.cudnn), *p, g.deterministic, opt_.workspace_limit);
    choose_timed_plan(g, *p);
  }
  const ConvPlan& ref = *p;
  plans_.emplace(key, std::move(p));
  return ref;
}

void ConvPlanCache::choose_timed_plan(const GpuHandles& g, ConvPlan& p) {
  cudnnHandle_t h = static_cast<cudnnHandle_t>(g.cudnn);
  const bool det = g.deterministic;
  const size_t limit = opt_.workspace_limit;
  const ConvKey& key = p.key;
  if (opt_.engine_candidate >= 0) {
    std::vector<std::shared_ptr<const ConvEnginePlan>> engines =
        conv_engine_plans(h, key, det, limit, opt_.engine_candidate + 1);
    if (int(engines.size()) > opt_.engine_candidate) {
      p.impl = ConvImpl::CudnnEngine;
      p.engine = engines[size_t(opt_.engine_candidate)];
      p.workspace_bytes = p.engine->workspace_bytes;
    }
  } else if (ConvPlanBook* book = opt_.book.get(); book && book->decides()) {
    // Note [convolution plan books]: the book's choice, else a timed one it records.
    book->bind(place(g));
    const std::string source = book->source().empty() ? std::string("the plan book") : book->source();
    if (std::optional<ConvPlanChoice> got = book->find(key)) {
      take_choice(h, p, *got, det, limit, source);
      trace("recorded plan: ", p.describe());  // TR_TRACE=1
    } else {
      TR_USER_CHECK(opt_.benchmark, source, " has no plan for ", key.str(), "; time it and add it with ",
                    setting("conv_plans"), " ", source);
      const size_t legacy_workspace = p.workspace_bytes;
      time_against_engines(h, p, det, limit);
      const ConvPlanChoice mine = choice_of(p);
      const ConvPlanChoice kept = book->record(key, mine);
      if (!kept.same_plan(mine)) {  // another rank was first: back to the legacy plan, then its choice
        p.impl = ConvImpl::Cudnn;
        p.engine.reset();
        p.workspace_bytes = legacy_workspace;
        take_choice(h, p, kept, det, limit, source);
      }
      trace("timed plan: ", p.describe());
    }
  } else if (opt_.benchmark) {
    time_against_engines(h, p, det, limit);  // Note [timed convolution plans]
    trace("timed plan: ", p.describe());     // TR_TRACE=1
  }
  if (ConvPlanBook* book = opt_.book.get(); book && !book->decides()) {
    book->bind(place(g));
    book->record(key, choice_of(p));
  }
}

const ConvPlanPlace& ConvPlanCache::place(const GpuHandles& g) {
  if (!place_) {
    cudaDeviceProp prop{};
    TR_GPU_CHECK(cudaGetDeviceProperties(&prop, g.device));
    place_ = ConvPlanPlace{prop.name, prop.major, prop.minor, int64_t(cudnnGetVersion()), g.deterministic};
  }
  return *place_;
}

const ConvPlan& ConvPlanCache::lookup(const ConvKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it == plans_.end())
    throw Error(cat("ConvPlanCache: ", key.str(),
                    " was not prepared (Note [conv plans before capture]: call prepare() for every conv shape "
                    "before launching)"));
  return *it->second;
}

bool ConvPlanCache::contains(const ConvKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.count(key) != 0;
}

size_t ConvPlanCache::max_workspace_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t m = 0;
  for (const auto& [k, p] : plans_)
    if (p->workspace_bytes > m) m = p->workspace_bytes;
  return m;
}

size_t ConvPlanCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plans_.size();
}

}  // namespace tr
