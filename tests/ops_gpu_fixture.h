#pragma once
// Shared by the GPU op tests (ops_conv_gpu_test.cpp, ops_layers_gpu_test.cpp):
// the OpsGpu fixture (a stream, cuDNN / cuBLAS handles, workspace, a conv plan
// cache) and the checks. Each op runs on fresh random data with its outputs
// poisoned (NaN) before each call. Error metric:
//   rel = ||gpu - cpu||_2 / ||cpu||_2  <= 1e-5 (f32), 1e-3 (f16)
// except the cuDNN convolutions in f32, which may pick Winograd/FFT-style
// algorithms whose transforms round differently: <= 1e-4 there (FMA math, no
// TF32). Determinism: every op runs twice, with the workspace and outputs
// re-poisoned in between, and the two results must be bitwise equal; one test
// captures a chain of ops into a CUDA Graph and checks replays bitwise against
// eager launches. Skips without a CUDA device.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/launch_tally.h"
#include "framework/ops/compute/batchnorm.h"
#include "framework/ops/compute/conv.h"
#include "framework/ops/compute/fc.h"
#include "framework/ops/compute/input_prep.h"
#include "framework/ops/compute/pool.h"
#include "framework/ops/compute/relu.h"
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/compute/tta_mean.h"
#include "framework/ops/conv_plans/conv_plan_cache_cuda.h"
#include "framework/ops/gpu_handles.h"
#include "tests/gpu_test_util.h"
#include "tests/op_test_util.h"

namespace tr::gpu_test {

using test::call_op;
using test::HostTensor;
using test::OpRunner;

constexpr DType F32 = DType::F32;
constexpr DType F16 = DType::F16;
constexpr size_t kWorkspaceBytes = size_t(64) << 20;

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// A device copy of a HostTensor (same dtype, shape and bytes).
class DevTensor {
 public:
  explicit DevTensor(const HostTensor& h) : dtype_(h.dtype()), shape_(h.shape()), bytes_(h.bytes()) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(bytes_, 16)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p_, h.data(), bytes_, cudaMemcpyHostToDevice), cudaSuccess);
  }
  DevTensor(const DevTensor&) = delete;
  DevTensor& operator=(const DevTensor&) = delete;
  ~DevTensor() { cudaFree(p_); }
  // 0xFF bytes: NaN in f16 and f32.
  void poison() { EXPECT_EQ(cudaMemset(p_, 0xff, bytes_), cudaSuccess); }
  HostTensor download() const {
    HostTensor h(dtype_, shape_);
    EXPECT_EQ(cudaMemcpy(h.data(), p_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  TensorRef ref() const { return TensorRef{p_, dtype_, shape_}; }
  TensorRef ref_as(Shape s) const { return TensorRef{p_, dtype_, s}; }

 private:
  void* p_ = nullptr;
  DType dtype_;
  Shape shape_;
  size_t bytes_;
};

// ||a - ref|| / ||ref||, +inf when a holds a NaN/Inf that ref does not.
inline double rel_err(const HostTensor& a, const HostTensor& ref) {
  EXPECT_EQ(a.numel(), ref.numel());
  double num = 0, den = 0;
  for (int64_t i = 0; i < std::min(a.numel(), ref.numel()); ++i) {
    const double x = a.get(i), r = ref.get(i);
    if (!std::isfinite(x)) return INFINITY;
    num += (x - r) * (x - r);
    den += r * r;
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// f32: GPU and CPU sum in other orders; measured at most 1.2e-6 (FcBwdWeight's 4097-sample sums, H200) and
// below 1e-6 elsewhere: 1e-5 leaves 8x. f16: both round f32 results to fp16, and an element near a rounding
// point lands an fp16 ulp (9.8e-4) away; measured below 1e-4 (check() prints any error above tol / 10).
// 1e-3 would hold even one more fp16 rounding of every element (rms about 2e-4); fp16 sums of hundreds of
// terms are off by about 1e-2.
inline double tol_for(DType t) { return t == F16 ? 1e-3 : 1e-5; }

// One op call: inputs, output templates (dtype + shape), attributes, variant.
struct Case {
  std::string name;
  OpAttrs attrs;
  VariantDims variant{4, 4, 0, 0};
  float loss_scale = 1.f;
  int32_t batches = 0;  // TrainScalars::batches (InputPrep's augmentation counter)
  int rank = 0;
  std::vector<HostTensor> in;
  std::vector<HostTensor> out;  // dtype and shape of each output
  std::vector<double> tol;      // per output; empty: tol_for(out dtype)
};

class OpsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_EQ(cudnnCreate(&cudnn_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cublasCreate(&cublas_), CUBLAS_STATUS_SUCCESS);
    ASSERT_EQ(cublasLtCreate(&lt_), CUBLAS_STATUS_SUCCESS);
    CUDA_OK(cudaMalloc(&ws_, kWorkspaceBytes));
    CUDA_OK(cudaMalloc(&scalars_, sizeof(TrainScalars)));
    plans_ = std::make_unique<ConvPlanCache>();
    gh_.device = 0;
    gh_.cudnn = cudnn_;
    gh_.cublas = cublas_;
    gh_.cublaslt = lt_;
    gh_.workspace = ws_;
    gh_.workspace_bytes = kWorkspaceBytes;
    gh_.conv_plans = plans_.get();
    gh_.deterministic = true;
    gh_.sm_count = query_sm_count(0);
  }
  void TearDown() override {
    plans_.reset();
    if (scalars_) cudaFree(scalars_);
    if (ws_) cudaFree(ws_);
    if (lt_) cublasLtDestroy(lt_);
    if (cublas_) cublasDestroy(cublas_);
    if (cudnn_) cudnnDestroy(cudnn_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void set_scalars(float loss_scale, int32_t batches = 0) {
    TrainScalars s;
    s.loss_scale = loss_scale;
    s.batches = batches;
    ASSERT_EQ(cudaMemcpy(scalars_, &s, sizeof s, cudaMemcpyHostToDevice), cudaSuccess);
  }

  // Prepares the conv plan a conv call needs (pre-capture warm-up): the key
  // comes from every input's shape and the case's kernel / stride / pad.
  void prepare_conv(OpKind kind, const Case& k) {
    std::vector<Shape> in;
    for (const HostTensor& t : k.in) in.push_back(t.shape());
    plans_->prepare(gh_, conv_key(kind, in.data(), int(in.size()), k.attrs, k.in[0].dtype()));
  }

  std::vector<HostTensor> run_cpu(OpFn fn, Case& k) {
    OpRunner r;
    r.attrs = k.attrs;
    r.variant = k.variant;
    r.scalars.loss_scale = k.loss_scale;
    r.scalars.batches = k.batches;
    r.rank = k.rank;
    r.ranks = k.rank + 1;
    std::vector<const HostTensor*> in;
    for (const HostTensor& t : k.in) in.push_back(&t);
    std::vector<HostTensor> out;
    for (const HostTensor& t : k.out) out.emplace_back(t.dtype(), t.shape());
    std::vector<HostTensor*> outp;
    for (HostTensor& t : out) outp.push_back(&t);
    r.run(fn, in, outp);
    return out;
  }

  // Uploads the inputs, poisons the outputs and the workspace, runs, downloads.
  std::vector<HostTensor> run_gpu(OpFn fn, Case& k) {
    set_scalars(k.loss_scale, k.batches);
    std::vector<std::unique_ptr<DevTensor>> din, dout;
    std::vector<TensorRef> in, out;
    for (const HostTensor& t : k.in) {
      din.push_back(std::make_unique<DevTensor>(t));
      in.push_back(din.back()->ref());
    }
    for (const HostTensor& t : k.out) {
      dout.push_back(std::make_unique<DevTensor>(HostTensor(t.dtype(), t.shape())));
      dout.back()->poison();
      out.push_back(dout.back()->ref());
    }
    EXPECT_EQ(cudaMemset(ws_, 0xff, kWorkspaceBytes), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    call(fn, in, out, k.attrs, k.variant, k.rank);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<HostTensor> res;
    for (auto& d : dout) res.push_back(d->download());
    return res;
  }

  void call(OpFn fn, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out, const OpAttrs& attrs,
            const VariantDims& variant, int rank = 0) {
    ExecEnv env;
    env.scalars = scalars_;
    env.rank = rank;
    env.ranks = rank + 1;
    env.stream = stream_;
    env.gpu = &gh_;
    call_op(fn, in, out, attrs, variant, env);
  }

  // run_gpu's outputs with the kernels the call launched (Note [launch accounting]).
  struct CountedRun {
    std::vector<HostTensor> out;
    int64_t kernels = 0;
  };
  CountedRun run_counted(OpFn fn, Case& k) {
    const int64_t before = launch_tally().kernels;
    CountedRun r;
    r.out = run_gpu(fn, k);
    r.kernels = launch_tally().kernels - before;
    return r;
  }

  // GPU vs CPU within tolerance, and two GPU runs bitwise equal.
  void check(OpFn cpu, OpFn gpu, Case& k) {
    SCOPED_TRACE(k.name);
    const std::vector<HostTensor> ref = run_cpu(cpu, k);
    const std::vector<HostTensor> a = run_gpu(gpu, k);
    const std::vector<HostTensor> b = run_gpu(gpu, k);
    for (size_t i = 0; i < ref.size(); ++i) {
      const double tol = i < k.tol.size() ? k.tol[i] : tol_for(k.out[i].dtype());
      const double e = rel_err(a[i], ref[i]);
      EXPECT_LE(e, tol) << k.name << " output " << i << " " << ref[i].shape().str();
      EXPECT_TRUE(bitwise_equal(a[i], b[i])) << k.name << " output " << i << " differs between two runs";
      if (e > tol / 10) std::printf("  %s output %zu: rel err %.3g (tol %.0e)\n", k.name.c_str(), i, e, tol);
    }
  }

  // Runs `chain` eagerly, then captures it into a CUDA Graph and replays it
  // three times: every output (poisoned before each run) must come out
  // finite and bit-identical to the eager run.
  void expect_replays_like_eager(const std::function<void()>& chain, const std::vector<DevTensor*>& outs) {
    auto snapshot = [&] {
      std::vector<HostTensor> r;
      for (DevTensor* d : outs) r.push_back(d->download());
      return r;
    };
    auto poison_all = [&] {
      for (DevTensor* d : outs) d->poison();
      EXPECT_EQ(cudaMemset(ws_, 0xff, kWorkspaceBytes), cudaSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    };
    poison_all();
    chain();
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    const std::vector<HostTensor> eager = snapshot();
    for (size_t i = 0; i < eager.size(); ++i) EXPECT_LT(eager[i].first_non_finite(), 0) << "eager output " << i;

    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    try {
      chain();
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int rep = 0; rep < 3; ++rep) {
      poison_all();
      EXPECT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
      const std::vector<HostTensor> replay = snapshot();
      for (size_t i = 0; i < eager.size(); ++i)
        EXPECT_TRUE(bitwise_equal(replay[i], eager[i])) << "output " << i << " differs in replay " << rep;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }

  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* ws_ = nullptr;
  TrainScalars* scalars_ = nullptr;
  std::unique_ptr<ConvPlanCache> plans_;
  GpuHandles gh_;
};

inline std::string tname(const char* op, DType t) { return cat(op, "/", dtype_name(t)); }

inline HostTensor rnd(DType t, Shape s, Rng& rng, double lo = -1, double hi = 1) {
  return test::random_tensor(t, s, rng, lo, hi);
}

// Small integers: many exact ties, for max pooling's "first position" rule.
inline HostTensor ties(DType t, Shape s, Rng& rng) {
  HostTensor h(t, s);
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, double(int64_t(rng.below(7)) - 3));
  return h;
}

}  // namespace tr::gpu_test
