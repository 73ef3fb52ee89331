#pragma once
// ConvPlanCache: cuDNN descriptors and the chosen algorithm for every
// convolution shape (window, stride, padding included) a rank runs, chosen once
// before any capture.
//
// Note [conv plans before capture]
// Algorithm selection (Get*_v7, and in benchmark mode the timing of engine
// configs, which allocates) must not run inside a launch: launches may be under CUDA Graph stream capture. So
// pre_capture (B2) calls prepare() for every conv node of every variant; the
// launchers (conv_cuda.cu) only call lookup(), which throws for a shape that
// was never prepared. The arena reserves max_workspace_bytes() (together with
// the other ops' needs) as GpuHandles::workspace; a launch asserts it fits.
// Each plan owns its descriptors (RAII), so a plan is immutable once made and
// lookups from the launch path share nothing mutable with cuDNN.
//
// Host-only header (cuDNN types, no CUDA kernels): includable from .cpp tests.
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "framework/ops/conv_plans/conv_key.h"
#include "framework/ops/conv_plans/conv_plan_book.h"

namespace tr {

struct GpuHandles;
struct ConvEnginePlan;  // conv_engine_cuda.h

namespace cudnn_raii {
// One owner per descriptor; destructors warn, never throw.
class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};
class FilterDesc {
 public:
  FilterDesc();
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};
class ConvDesc {
 public:
  ConvDesc();
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};
}  // namespace cudnn_raii

// Note [small-C convolutions]
// With very few input channels (the first layer: C = 1 or 3) cuDNN's NHWC
// kernels are slow. Measured on one H200 (tests/bench/ops_gpu_bench.cpp, f16,
// 28x28x1 -> 32, CUDA Graph replay): batch 1024 filter gradient ~300 us with
// cuDNN's heuristic algorithm vs 82 us direct, forward ~40-59 us vs 27 us;
// batch 256 forward ~52 vs 8 us. Forward and filter-gradient convolutions with
// C <= kSmallConvMaxC and a 3x3 window, stride 1, padding 1 (the only geometry
// the kernels know) therefore run direct, deterministic kernels: in f16 with K
// a multiple of 16 up to 64 on the tensor cores (conv_small_tc_cuda.h; filter
// gradient 30.5 us at that batch 1024), otherwise on the CUDA cores
// (conv_cuda.cu). Their plan has impl = SmallC and no cuDNN algorithm. They are
// still prepared and looked up like every other plan. Every other shape, the
// 7x7 / stride 2 ResNet stem with C = 3 included, goes to cuDNN, except the f16
// 3x3 filter gradient of 32 -> 64 channels (ConvImpl::FilterTc below).
constexpr int64_t kSmallConvMaxC = 4;
// FilterTc: the 3x3 filter gradient on the tensor cores, at the shapes where it
// beats cuDNN (conv_filter_tc_cuda.h, Note [3x3 filter gradient on tensor
// cores]), unless Options::tc_filter is false.
// CudnnEngine: a cuDNN engine config that --cudnn-benchmark timed faster than
// the heuristic's legacy plan (Note [timed convolution plans]).
enum class ConvImpl : uint8_t { Cudnn, SmallC, FilterTc, CudnnEngine };
bool uses_small_c_kernel(const ConvKey& key);
// Workspace of the small-C kernel for `key` (uses_small_c_kernel) on a device with
// `sms` SMs (conv_cuda.cu).
size_t small_c_conv_workspace_bytes(const ConvKey& key, int sms);

// Note [timed convolution plans]
// With Options::benchmark (--cudnn-benchmark), prepare() times, for each f16
// or f32 key cuDNN runs, the heuristic's legacy plan against the first
// kEngineCandidates engine configs (Note [engine plans for convolutions],
// conv_engine_cuda.h), on scratch tensors of the key's shapes: kTimedRuns
// executions in a CUDA graph, the median of three replays. A graph, since
// the legacy API spends tens of microseconds of host time a call, which
// timing launches one after another counts against small convolutions (the
// legacy plan of an 8x14x14x32 -> 64 f16 forward measures 35 us so, for an
// 8 us kernel), and since a step replays graphs too. An engine config replaces the legacy plan only
// when it is faster by more than kEngineMargin, so that noise between close
// candidates does not decide; the legacy plan stays otherwise. Whatever is
// kept is deterministic when GpuHandles::deterministic is set. The plan then
// serves every launch that looks the key up in this cache (a rank's
// DeviceContext), eager, partial and full capture alike; another cache or
// process may time differently and keep another plan, which is why the
// report records the flag.
// (Before, benchmark mode asked cudnnFind* for the legacy algorithms; its
// choices made resnet50 at batch 32 slower, 10.9 against 7.3 ms.)
constexpr int kEngineCandidates = 8;
constexpr int kTimedRuns = 10;
constexpr double kEngineMargin = 0.03;

// Everything a launch needs for one key. Immutable after prepare().
struct ConvPlan {
  ConvKey key;
  ConvImpl impl = ConvImpl::Cudnn;
  cudnn_raii::TensorDesc x;   // [N,H,W,C] NHWC
  cudnn_raii::TensorDesc y;   // [N,Ho,Wo,K] NHWC
  cudnn_raii::FilterDesc w;   // [K,R,R,C] (cuDNN NHWC filter = KRSC)
  cudnn_raii::ConvDesc conv;  // key's pad and stride, no dilation, cross-correlation, fp32 compute, math type set
  int algo = -1;              // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t of key.dir (-1: our kernel)
  size_t workspace_bytes = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  // Benchmark mode (Note [timed convolution plans]): the kept plan's time and
  // the legacy plan's, ms per execution; -1 otherwise.
  float time_ms = -1.f, legacy_ms = -1.f;
  std::shared_ptr<const ConvEnginePlan> engine;  // CudnnEngine: the engine config that runs
  std::string describe() const;
};

// Runs a cuDNN plan (impl Cudnn or CudnnEngine) on h's stream over x[N,H,W,C],
// w[K,R,R,C], y[N,Ho,Wo,K]: the key's direction writes y, x or w and reads the
// other two. ws: at least p.workspace_bytes.
cudnnStatus_t run_cudnn_plan(cudnnHandle_t h, const ConvPlan& p, void* x, void* w, void* y, void* ws);

class ConvPlanCache {
 public:
  struct Options {
    // Largest workspace an algorithm may ask for. The arena then reserves
    // max_workspace_bytes() (never more than this). Deterministic f32 filter
    // and data gradients at batch 1024 already ask for ~300 MB; at resnet50's
    // batch 2048 in f32 the one deterministic data gradient of a 1x1 stride-2
    // convolution asks for 2.5 GB.
    size_t workspace_limit = size_t(8) << 30;
    // false (default): cudnnGet*_v7 heuristics, the same choice in every process,
    // so runs are reproducible bit for bit across processes too.
    // true: the heuristic's plan is timed against cuDNN's engine configs
    // (Note [timed convolution plans]); faster where one wins, but the choice
    // can differ between processes.
    bool benchmark = false;
    // >= 0: every key cuDNN runs takes its engine candidate of this rank
    // (Note [engine plans for convolutions]) untimed, where it has one; the
    // heuristic's plan where not. For tests of each candidate, and to rerun a
    // timed choice. -1 (default): benchmark decides.
    int engine_candidate = -1;
    // true (default): f16 3x3 filter gradients where filter_tc_beats_cudnn run our
    // tensor-core kernel; false: cuDNN's algorithm (what the kernel is measured against).
    bool tc_filter = true;
    // The choices this cache shares with the process's other caches, and with
    // a plan file (Note [convolution plan books], conv_plan_book.h); null: none.
    // A Record book needs benchmark set; a Replay book times nothing.
    std::shared_ptr<ConvPlanBook> book;
  };

  ConvPlanCache();
  explicit ConvPlanCache(Options opt);
  ~ConvPlanCache();
  ConvPlanCache(const ConvPlanCache&) = delete;
  ConvPlanCache& operator=(const ConvPlanCache&) = delete;

  // Chooses and stores the plan for `key` if it is not there yet; idempotent.
  // Uses g.cudnn on its current stream and g.deterministic (only
  // CUDNN_DETERMINISTIC algorithms when set). Never call under stream capture.
  // f32 keys use CUDNN_FMA_MATH (no TF32: f32 stays f32-accurate); f16 keys use
  // tensor cores (CUDNN_TENSOR_OP_MATH) with fp32 accumulation.
  const ConvPlan& prepare(const GpuHandles& g, const ConvKey& key);

  // The plan for `key`; throws tr::Error naming the key when it was not prepared.
  const ConvPlan& lookup(const ConvKey& key) const;
  bool contains(const ConvKey& key) const;

  // Largest workspace any prepared plan needs (0 when empty): what the arena reserves.
  size_t max_workspace_bytes() const;
  size_t size() const;
  const Options& options() const { return opt_; }

 private:
  // Where this cache's plans hold (the book binds to it); made at the first
  // cuDNN key, with mu_ held.
  const ConvPlanPlace& place(const GpuHandles& g);
  // After the legacy pick: an engine candidate, the plan book's choice or a
  // timed one (Note [convolution plan books], Note [timed convolution plans]).
  void choose_timed_plan(const GpuHandles& g, ConvPlan& p);

  Options opt_;
  mutable std::mutex mu_;
  std::optional<ConvPlanPlace> place_;
  std::map<ConvKey, std::unique_ptr<ConvPlan>> plans_;
};

}  // namespace tr
