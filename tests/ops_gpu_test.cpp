// GPU COMPUTE ops against the CPU reference (the X_cpu functions of the same
// headers): every op, forward and backward, f32 and f16, on fresh random data
// with outputs poisoned (NaN) before each call. Error metric:
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
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/ops/batchnorm.h"
#include "framework/ops/conv3x3.h"
#include "framework/ops/conv_plan_cache_cuda.h"
#include "framework/ops/fc.h"
#include "framework/ops/input_prep.h"
#include "framework/ops/pool.h"
#include "framework/ops/relu.h"
#include "framework/ops/softmax_xent.h"
#include "framework/runtime/gpu_handles.h"
#include "tests/op_test_util.h"

namespace tr {
namespace {

using test::HostTensor;
using test::OpRunner;

constexpr DType F32 = DType::F32;
constexpr DType F16 = DType::F16;
constexpr size_t kWorkspaceBytes = size_t(64) << 20;

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

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
double rel_err(const HostTensor& a, const HostTensor& ref) {
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

bool bitwise_equal(const HostTensor& a, const HostTensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

double tol_for(DType t) { return t == F16 ? 1e-3 : 1e-5; }

// One op call: inputs, output templates (dtype + shape), attributes, variant.
struct Case {
  std::string name;
  OpAttrs attrs;
  VariantDims variant{4, 4, 0, 0};
  float loss_scale = 1.f;
  std::vector<HostTensor> in;
  std::vector<HostTensor> out;  // dtype and shape of each output
  std::vector<double> tol;      // per output; empty: tol_for(out dtype)
};

class OpsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
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

  void set_scalars(float loss_scale) {
    TrainScalars s;
    s.loss_scale = loss_scale;
    ASSERT_EQ(cudaMemcpy(scalars_, &s, sizeof s, cudaMemcpyHostToDevice), cudaSuccess);
  }

  // Prepares the conv plan a conv call needs (pre-capture warm-up).
  void prepare_conv(OpKind kind, const Case& k) {
    plans_->prepare(gh_, conv_key(kind, k.in[0].shape(), k.in[1].shape(), k.in[0].dtype()));
  }

  std::vector<HostTensor> run_cpu(OpFn fn, Case& k) {
    OpRunner r;
    r.attrs = k.attrs;
    r.variant = k.variant;
    r.scalars.loss_scale = k.loss_scale;
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
    set_scalars(k.loss_scale);
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
    call(fn, in, out, k.attrs, k.variant);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<HostTensor> res;
    for (auto& d : dout) res.push_back(d->download());
    return res;
  }

  void call(OpFn fn, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out, const OpAttrs& attrs,
            const VariantDims& variant) {
    ExecEnv env;
    env.scalars = scalars_;
    env.stream = stream_;
    env.gpu = &gh_;
    OpCall c;
    c.in = in.data();
    c.n_in = int(in.size());
    c.out = out.data();
    c.n_out = int(out.size());
    c.attrs = &attrs;
    c.variant = &variant;
    c.env = &env;
    fn(c);
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

  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* ws_ = nullptr;
  TrainScalars* scalars_ = nullptr;
  std::unique_ptr<ConvPlanCache> plans_;
  GpuHandles gh_;
};

std::string tname(const char* op, DType t) { return cat(op, "/", dtype_name(t)); }

HostTensor rnd(DType t, Shape s, Rng& rng, double lo = -1, double hi = 1) { return test::random_tensor(t, s, rng, lo, hi); }

// Small integers: many exact ties, for max pooling's "first position" rule.
HostTensor ties(DType t, Shape s, Rng& rng) {
  HostTensor h(t, s);
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, double(int64_t(rng.below(7)) - 3));
  return h;
}

// ================================================================ InputPrep

TEST_F(OpsGpu, InputPrepMatchesCpu) {
  Rng rng(1);
  for (DType t : {F32, F16})
    for (int64_t C : {1, 3})
      for (int64_t hw : {28, 20, 14}) {
        Case k;
        k.name = cat(tname("InputPrep", t), " C=", C, " h=", hw);
        k.variant = {6, 12, hw, hw};
        for (int ch = 0; ch < int(C); ++ch) {
          k.attrs.norm_mean[ch] = 0.2f + 0.1f * ch;
          k.attrs.norm_std[ch] = 0.3f + 0.05f * ch;
        }
        HostTensor img(DType::U8, {8, 28, 28, C});
        for (int64_t i = 0; i < img.numel(); ++i) img.set(i, double(rng.below(256)));
        HostTensor lab(DType::I32, {8});
        for (int64_t i = 0; i < 8; ++i) lab.set(i, double(rng.below(10)));
        k.in = {img, lab};
        k.out = {HostTensor(t, {6, hw, hw, C}), HostTensor(DType::I32, {6})};
        k.tol = {0.0, 0.0};  // same float formula: same bits
        check(input_prep_cpu, input_prep_cuda, k);
      }
}

// ================================================================ conv3x3

struct ConvShape {
  int64_t n, h, w, c, k;
};
// C <= 4 forward and filter gradients run the direct small-C kernels (Note
// [small-C convolutions]); the others cuDNN.
const ConvShape kConvShapes[] = {{4, 8, 8, 16, 32}, {3, 7, 5, 1, 32}, {2, 6, 9, 3, 8},   {2, 14, 14, 64, 64},
                                 {2, 5, 4, 4, 12},  {1, 3, 3, 2, 5},  {64, 28, 28, 1, 32}, {8, 12, 12, 3, 64}};

double conv_tol(DType t) { return t == F16 ? 1e-3 : 1e-4; }

TEST_F(OpsGpu, Conv3x3FwdMatchesCpu) {
  Rng rng(2);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = cat(tname("Conv3x3Fwd", t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k);
      k.in = {rnd(t, {s.n, s.h, s.w, s.c}, rng), rnd(t, {s.k, 3, 3, s.c}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.n, s.h, s.w, s.k})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::Conv3x3Fwd, k);
      check(conv3x3_fwd_cpu, conv3x3_fwd_cuda, k);
    }
}

TEST_F(OpsGpu, Conv3x3BwdDataMatchesCpu) {
  Rng rng(3);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = cat(tname("Conv3x3BwdData", t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k);
      k.in = {rnd(t, {s.n, s.h, s.w, s.k}, rng), rnd(t, {s.k, 3, 3, s.c}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.n, s.h, s.w, s.c})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::Conv3x3BwdData, k);
      check(conv3x3_bwd_data_cpu, conv3x3_bwd_data_cuda, k);
    }
}

TEST_F(OpsGpu, Conv3x3BwdFilterMatchesCpu) {
  Rng rng(4);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = cat(tname("Conv3x3BwdFilter", t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k);
      k.in = {rnd(t, {s.n, s.h, s.w, s.c}, rng), rnd(t, {s.n, s.h, s.w, s.k}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.k, 3, 3, s.c})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::Conv3x3BwdFilter, k);
      check(conv3x3_bwd_filter_cpu, conv3x3_bwd_filter_cuda, k);
    }
}

TEST_F(OpsGpu, ConvPlanCacheLookupNeedsPrepare) {
  const ConvKey key = conv_key(OpKind::Conv3x3Fwd, Shape{2, 8, 8, 16}, Shape{32, 3, 3, 16}, F16);
  EXPECT_FALSE(plans_->contains(key));
  EXPECT_THROW(plans_->lookup(key), Error);
  EXPECT_EQ(plans_->max_workspace_bytes(), 0u);
  const ConvPlan& p = plans_->prepare(gh_, key);
  EXPECT_EQ(&plans_->prepare(gh_, key), &p);  // idempotent
  EXPECT_EQ(&plans_->lookup(key), &p);
  EXPECT_EQ(plans_->size(), 1u);
  EXPECT_GE(plans_->max_workspace_bytes(), p.workspace_bytes);
  std::printf("  %s\n", p.describe().c_str());
  // A conv launch with an unprepared shape throws instead of selecting an algorithm.
  Rng rng(5);
  Case k;
  k.in = {rnd(F32, {2, 8, 8, 16}, rng), rnd(F32, {32, 3, 3, 16}, rng)};
  k.out = {HostTensor(F32, {2, 8, 8, 32})};
  DevTensor x(k.in[0]), w(k.in[1]), y(k.out[0]);
  EXPECT_THROW(call(conv3x3_fwd_cuda, {x.ref(), w.ref()}, {y.ref()}, k.attrs, k.variant), Error);
}

TEST_F(OpsGpu, ConvPlanCacheBenchmarkModeAlsoMatches) {
  ConvPlanCache::Options o;
  o.benchmark = true;
  plans_ = std::make_unique<ConvPlanCache>(o);
  gh_.conv_plans = plans_.get();
  Rng rng(6);
  for (DType t : {F32, F16}) {
    Case k;
    k.name = tname("Conv3x3Fwd(find)", t);
    k.in = {rnd(t, {8, 14, 14, 32}, rng), rnd(t, {64, 3, 3, 32}, rng, -0.3, 0.3)};
    k.out = {HostTensor(t, {8, 14, 14, 64})};
    k.tol = {conv_tol(t)};
    prepare_conv(OpKind::Conv3x3Fwd, k);
    check(conv3x3_fwd_cpu, conv3x3_fwd_cuda, k);
  }
}

// ================================================================ BatchNorm

struct BnShape {
  Shape x;
  int64_t global_batch;
};
const BnShape kBnShapes[] = {{{4, 6, 5, 16}, 8}, {{8, 7, 7, 32}, 8}, {{3, 5, 5, 7}, 3}, {{64, 14, 14, 64}, 256},
                             {{2, 3, 3, 256}, 2}, {{16, 40}, 16}};

// Consistent inputs for the BN phases, made with the CPU reference.
struct BnData {
  HostTensor x, gamma, beta, sums, y, batch, dy, dsums;
};

class OpsGpuBn : public OpsGpu {
 protected:
  BnData make(DType t, const BnShape& s, Rng& rng, bool relu) {
    const int64_t C = s.x[s.x.rank - 1];
    BnData d;
    d.x = rnd(t, s.x, rng, -1.5, 2.5);
    d.gamma = rnd(t, {C}, rng, 0.5, 1.5);
    d.beta = rnd(t, {C}, rng, -0.5, 0.5);
    d.dy = rnd(t, s.x, rng);
    OpRunner r;
    r.variant = {s.x[0], s.global_batch, 0, 0};
    r.attrs.relu = relu;
    d.sums = HostTensor(F32, {2, C});
    r.run(bn_stats_cpu, {&d.x}, {&d.sums});
    // Pretend the other ranks hold similar data: scale the local sums up.
    for (int64_t i = 0; i < 2 * C; ++i) d.sums.set(i, d.sums.get(i) * double(s.global_batch) / double(s.x[0]));
    d.y = HostTensor(t, s.x);
    d.batch = HostTensor(F32, {2, C});
    r.run(bn_relu_apply_cpu, {&d.x, &d.sums, &d.gamma, &d.beta}, {&d.y, &d.batch});
    HostTensor dg(t, {C}), db(t, {C});
    d.dsums = HostTensor(F32, {2, C});
    r.run(bn_relu_bwd_reduce_cpu, {&d.dy, &d.y, &d.x, &d.batch}, {&dg, &db, &d.dsums});
    return d;
  }
};

TEST_F(OpsGpuBn, AllPhasesMatchCpu) {
  Rng rng(7);
  for (DType t : {F32, F16})
    for (bool relu : {true, false})
      for (const BnShape& s : kBnShapes) {
        const int64_t C = s.x[s.x.rank - 1];
        const BnData d = make(t, s, rng, relu);
        const std::string tag = cat(tname("", t), " x", s.x.str(), relu ? " relu" : "");
        Case base;
        base.variant = {s.x[0], s.global_batch, 0, 0};
        base.attrs.relu = relu;
        base.attrs.eps = 1e-5f;

        Case st = base;
        st.name = cat("BnStats", tag);
        st.in = {d.x};
        st.out = {HostTensor(F32, {2, C})};
        st.tol = {1e-5};
        check(bn_stats_cpu, bn_stats_cuda, st);

        Case ap = base;
        ap.name = cat("BnReluApply", tag);
        ap.in = {d.x, d.sums, d.gamma, d.beta};
        ap.out = {HostTensor(t, s.x), HostTensor(F32, {2, C})};
        ap.tol = {tol_for(t), 1e-6};
        check(bn_relu_apply_cpu, bn_relu_apply_cuda, ap);

        Case br = base;
        br.name = cat("BnReluBwdReduce", tag);
        br.in = {d.dy, d.y, d.x, d.batch};
        br.out = {HostTensor(t, {C}), HostTensor(t, {C}), HostTensor(F32, {2, C})};
        br.tol = {tol_for(t), tol_for(t), 1e-5};
        check(bn_relu_bwd_reduce_cpu, bn_relu_bwd_reduce_cuda, br);

        Case ba = base;
        ba.name = cat("BnReluBwdApply", tag);
        ba.in = {d.dy, d.y, d.x, d.batch, d.gamma, d.dsums};
        ba.out = {HostTensor(t, s.x)};
        check(bn_relu_bwd_apply_cpu, bn_relu_bwd_apply_cuda, ba);

        Case in = base;
        in.name = cat("BnReluInfer", tag);
        HostTensor affine = rnd(F32, {2, C}, rng);
        in.in = {d.x, affine};
        in.out = {HostTensor(t, s.x)};
        check(bn_relu_infer_cpu, bn_relu_infer_cuda, in);
      }
}

TEST_F(OpsGpu, BnFoldMatchesCpu) {
  Rng rng(8);
  for (int64_t C : {1, 32, 257}) {
    Case k;
    k.name = cat("BnFold C=", C);
    HostTensor running = rnd(F32, {2, C}, rng);
    for (int64_t i = C; i < 2 * C; ++i) running.set(i, 0.1 + std::fabs(running.get(i)));  // variances > 0
    k.in = {rnd(F32, {C}, rng, 0.5, 1.5), rnd(F32, {C}, rng), running};
    k.out = {HostTensor(F32, {2, C})};
    k.tol = {1e-6};
    check(bn_fold_cpu, bn_fold_cuda, k);
  }
}

// ================================================================ pooling

const Shape kPoolShapes[] = {{3, 8, 8, 16}, {2, 7, 9, 16}, {2, 5, 6, 5}, {4, 28, 28, 64}, {2, 3, 3, 256}};

TEST_F(OpsGpu, MaxPool2MatchesCpu) {
  Rng rng(9);
  for (DType t : {F32, F16})
    for (const Shape& s : kPoolShapes) {
      const Shape ys{s[0], s[1] / 2, s[2] / 2, s[3]};
      const HostTensor x = ties(t, s, rng);
      Case f;
      f.name = cat(tname("MaxPool2Fwd", t), " x", s.str());
      f.in = {x};
      f.out = {HostTensor(t, ys)};
      f.tol = {0.0};
      check(maxpool2_fwd_cpu, maxpool2_fwd_cuda, f);
      const HostTensor y = run_cpu(maxpool2_fwd_cpu, f)[0];
      Case b;
      b.name = cat(tname("MaxPool2Bwd", t), " x", s.str());
      b.in = {rnd(t, ys, rng), x, y};
      b.out = {HostTensor(t, s)};
      b.tol = {0.0};
      check(maxpool2_bwd_cpu, maxpool2_bwd_cuda, b);
    }
}

TEST_F(OpsGpu, GlobalMaxPoolMatchesCpu) {
  Rng rng(10);
  for (DType t : {F32, F16})
    for (const Shape& s : kPoolShapes) {
      const Shape ys{s[0], s[3]};
      const HostTensor x = ties(t, s, rng);
      Case f;
      f.name = cat(tname("GlobalMaxPoolFwd", t), " x", s.str());
      f.in = {x};
      f.out = {HostTensor(t, ys)};
      f.tol = {0.0};
      check(global_maxpool_fwd_cpu, global_maxpool_fwd_cuda, f);
      const HostTensor y = run_cpu(global_maxpool_fwd_cpu, f)[0];
      Case b;
      b.name = cat(tname("GlobalMaxPoolBwd", t), " x", s.str());
      b.in = {rnd(t, ys, rng), x, y};
      b.out = {HostTensor(t, s)};
      b.tol = {0.0};
      check(global_maxpool_bwd_cpu, global_maxpool_bwd_cuda, b);
    }
}

// ================================================================ fully connected

struct FcShape {
  Shape x;
  int64_t m;
};
const FcShape kFcShapes[] = {{{37, 50}, 20}, {{200, 784}, 1024}, {{200, 256}, 10}, {{16, 3, 3, 8}, 10},
                             {{64, 256}, 10}, {{5, 7}, 3}};

TEST_F(OpsGpu, FcMatchesCpu) {
  Rng rng(11);
  for (DType t : {F32, F16})
    for (bool bias : {true, false})
      for (const FcShape& s : kFcShapes) {
        const int64_t N = s.x[0], K = s.x.inner(), M = s.m;
        const std::string tag = cat(tname("", t), " x", s.x.str(), " M=", M, bias ? " bias" : "");
        const float scale = bias ? 1.f : 0.125f;
        const HostTensor x = rnd(t, s.x, rng), w = rnd(t, {M, K}, rng, -0.1, 0.1), b = rnd(t, {M}, rng);
        const HostTensor dy = rnd(t, {N, M}, rng);

        Case f;
        f.name = cat("FcFwd", tag);
        f.attrs.scale = scale;
        f.attrs.has_bias = bias;
        f.in = {x, w};
        if (bias) f.in.push_back(b);
        f.out = {HostTensor(t, {N, M})};
        check(fc_fwd_cpu, fc_fwd_cuda, f);

        Case d;
        d.name = cat("FcBwdData", tag);
        d.attrs.scale = scale;
        d.in = {dy, w};
        d.out = {HostTensor(t, s.x)};
        check(fc_bwd_data_cpu, fc_bwd_data_cuda, d);

        Case g;
        g.name = cat("FcBwdWeight", tag);
        g.attrs.scale = scale;
        g.attrs.has_bias = bias;
        g.in = {x, dy};
        g.out = {HostTensor(t, {M, K})};
        if (bias) g.out.emplace_back(t, Shape{M});
        check(fc_bwd_weight_cpu, fc_bwd_weight_cuda, g);
      }
}

// ================================================================ ReLU

TEST_F(OpsGpu, ReluMatchesCpu) {
  Rng rng(12);
  for (DType t : {F32, F16})
    for (const Shape& s : {Shape{4, 8, 8, 16}, Shape{3, 5, 7, 3}, Shape{1001}, Shape{200, 1024}}) {
      HostTensor x = rnd(t, s, rng);
      for (int64_t i = 0; i < x.numel(); i += 13) x.set(i, 0.0);
      Case f;
      f.name = cat(tname("ReluFwd", t), " ", s.str());
      f.in = {x};
      f.out = {HostTensor(t, s)};
      f.tol = {0.0};
      check(relu_fwd_cpu, relu_fwd_cuda, f);
      const HostTensor y = run_cpu(relu_fwd_cpu, f)[0];
      Case b;
      b.name = cat(tname("ReluBwd", t), " ", s.str());
      b.in = {rnd(t, s, rng), y};
      b.out = {HostTensor(t, s)};
      b.tol = {0.0};
      check(relu_bwd_cpu, relu_bwd_cuda, b);
    }
}

TEST_F(OpsGpu, F64IsRefusedOnCuda) {
  Rng rng(13);
  const HostTensor x = rnd(DType::F64, {4, 4}, rng);
  DevTensor dx(x), dy(x);
  OpAttrs a;
  VariantDims v;
  EXPECT_THROW(call(relu_fwd_cuda, {dx.ref()}, {dy.ref()}, a, v), Error);
}

// ================================================================ softmax cross-entropy

TEST_F(OpsGpu, SoftmaxXentMatchesCpu) {
  Rng rng(14);
  for (DType t : {F32, F16})
    for (bool grad : {true, false})
      for (int64_t M : {10, 100})
        for (int64_t N : {200, 7, 64}) {
          Case k;
          k.name = cat(tname("SoftmaxXent", t), " N=", N, " M=", M, grad ? " grad" : "");
          k.attrs.label_smoothing = 0.1f;
          k.attrs.with_grad = grad;
          k.variant = {N, 2 * N, 0, 0};
          k.loss_scale = 1024.f;
          HostTensor lab(DType::I32, {N});
          for (int64_t i = 0; i < N; ++i) lab.set(i, double(rng.below(uint64_t(M))));
          HostTensor z = rnd(t, {N, M}, rng, -4, 4);
          // A few rows with a tie for the maximum (the first index wins).
          for (int64_t n = 0; n < N; n += 5) {
            z.set(n * M + 1, 6.0);
            z.set(n * M + 3, 6.0);
          }
          k.in = {z, lab};
          if (grad) k.out.emplace_back(t, Shape{N, M});
          k.out.emplace_back(F32, Shape{kMetricSlots});
          check(softmax_xent_cpu, softmax_xent_cuda, k);
        }
}

// ================================================================ capture

// A forward/backward chain launched eagerly, then captured into one CUDA Graph
// and replayed: every replay must equal the eager results bit for bit.
TEST_F(OpsGpu, CapturedChainReplaysBitwiseLikeEager) {
  Rng rng(15);
  const DType t = F16;
  const int64_t N = 32, H = 8, W = 8, C = 16, K = 32, M = 10;
  VariantDims v{N, N, H, W};
  OpAttrs a;
  a.label_smoothing = 0.1f;
  a.scale = 0.125f;
  const HostTensor hx = rnd(t, {N, H, W, C}, rng), hw = rnd(t, {K, 3, 3, C}, rng, -0.3, 0.3);
  const HostTensor hg = rnd(t, {K}, rng, 0.5, 1.5), hb = rnd(t, {K}, rng, -0.5, 0.5);
  const HostTensor hfc = rnd(t, {M, K}, rng, -0.3, 0.3);
  HostTensor hl(DType::I32, {N});
  for (int64_t i = 0; i < N; ++i) hl.set(i, double(rng.below(M)));
  DevTensor x(hx), w(hw), gamma(hg), beta(hb), fcw(hfc), labels(hl);
  DevTensor y(HostTensor(t, {N, H, W, K})), sums(HostTensor(F32, {2, K})), z(HostTensor(t, {N, H, W, K}));
  DevTensor batch(HostTensor(F32, {2, K})), pool(HostTensor(t, {N, H / 2, W / 2, K})), g(HostTensor(t, {N, K}));
  DevTensor logits(HostTensor(t, {N, M})), dlogits(HostTensor(t, {N, M})), metrics(HostTensor(F32, {4}));
  DevTensor dfc(HostTensor(t, {M, K})), dg(HostTensor(t, {N, K})), dwc(HostTensor(t, {K, 3, 3, C}));
  DevTensor dpool(HostTensor(t, {N, H / 2, W / 2, K})), dz(HostTensor(t, {N, H, W, K}));
  plans_->prepare(gh_, conv_key(OpKind::Conv3x3Fwd, hx.shape(), hw.shape(), t));
  plans_->prepare(gh_, conv_key(OpKind::Conv3x3BwdFilter, hx.shape(), Shape{N, H, W, K}, t));
  set_scalars(256.f);

  auto chain = [&] {
    call(conv3x3_fwd_cuda, {x.ref(), w.ref()}, {y.ref()}, a, v);
    call(bn_stats_cuda, {y.ref()}, {sums.ref()}, a, v);
    call(bn_relu_apply_cuda, {y.ref(), sums.ref(), gamma.ref(), beta.ref()}, {z.ref(), batch.ref()}, a, v);
    call(maxpool2_fwd_cuda, {z.ref()}, {pool.ref()}, a, v);
    call(global_maxpool_fwd_cuda, {pool.ref()}, {g.ref()}, a, v);
    call(fc_fwd_cuda, {g.ref(), fcw.ref()}, {logits.ref()}, a, v);
    call(softmax_xent_cuda, {logits.ref(), labels.ref()}, {dlogits.ref(), metrics.ref()}, a, v);
    call(fc_bwd_weight_cuda, {g.ref(), dlogits.ref()}, {dfc.ref()}, a, v);
    call(fc_bwd_data_cuda, {dlogits.ref(), fcw.ref()}, {dg.ref()}, a, v);
    call(global_maxpool_bwd_cuda, {dg.ref(), pool.ref(), g.ref()}, {dpool.ref()}, a, v);
    call(maxpool2_bwd_cuda, {dpool.ref(), z.ref(), pool.ref()}, {dz.ref()}, a, v);
    call(conv3x3_bwd_filter_cuda, {x.ref(), dz.ref()}, {dwc.ref()}, a, v);
  };
  std::vector<DevTensor*> outs{&y, &sums, &z, &batch, &pool, &g, &logits, &dlogits, &metrics, &dfc, &dg, &dpool,
                               &dz, &dwc};
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
  CUDA_OK(cudaStreamSynchronize(stream_));
  const std::vector<HostTensor> eager = snapshot();
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_LT(eager[i].first_non_finite(), 0) << "eager output " << i;

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    chain();
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  CUDA_OK(cudaStreamEndCapture(stream_, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int rep = 0; rep < 3; ++rep) {
    poison_all();
    CUDA_OK(cudaGraphLaunch(exec, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    const std::vector<HostTensor> replay = snapshot();
    for (size_t i = 0; i < eager.size(); ++i)
      EXPECT_TRUE(bitwise_equal(replay[i], eager[i])) << "output " << i << " differs in replay " << rep;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace tr
