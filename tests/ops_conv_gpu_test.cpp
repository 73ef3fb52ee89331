// GPU input preparation and 3x3 convolutions (cuDNN and the small-C kernels)
// against the CPU reference; the conv plan cache. Skips without a CUDA device.
#include "tests/ops_gpu_fixture.h"

namespace tr {
namespace {

using namespace gpu_test;

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

TEST_F(OpsGpu, ConvFwdMatchesCpu) {
  Rng rng(2);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = cat(tname("ConvFwd", t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k);
      k.in = {rnd(t, {s.n, s.h, s.w, s.c}, rng), rnd(t, {s.k, 3, 3, s.c}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.n, s.h, s.w, s.k})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::ConvFwd, k);
      check(conv_fwd_cpu, conv_fwd_cuda, k);
    }
}

TEST_F(OpsGpu, ConvBwdDataMatchesCpu) {
  Rng rng(3);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = cat(tname("ConvBwdData", t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k);
      k.in = {rnd(t, {s.n, s.h, s.w, s.k}, rng), rnd(t, {s.k, 3, 3, s.c}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.n, s.h, s.w, s.c})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::ConvBwdData, k);
      check(conv_bwd_data_cpu, conv_bwd_data_cuda, k);
    }
}

TEST_F(OpsGpu, ConvBwdFilterMatchesCpu) {
  Rng rng(4);
  for (DType t : {F32, F16})
    for (const ConvShape& s : kConvShapes) {
      Case k;
      k.name = cat(tname("ConvBwdFilter", t), " x", s.n, "x", s.h, "x", s.w, "x", s.c, " K=", s.k);
      k.in = {rnd(t, {s.n, s.h, s.w, s.c}, rng), rnd(t, {s.n, s.h, s.w, s.k}, rng, -0.3, 0.3)};
      k.out = {HostTensor(t, {s.k, 3, 3, s.c})};
      k.tol = {conv_tol(t)};
      prepare_conv(OpKind::ConvBwdFilter, k);
      check(conv_bwd_filter_cpu, conv_bwd_filter_cuda, k);
    }
}

TEST_F(OpsGpu, ConvPlanCacheLookupNeedsPrepare) {
  const ConvKey key = conv_key(OpKind::ConvFwd, Shape{2, 8, 8, 16}, Shape{32, 3, 3, 16}, F16);
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
  EXPECT_THROW(call(conv_fwd_cuda, {x.ref(), w.ref()}, {y.ref()}, k.attrs, k.variant), Error);
}

TEST_F(OpsGpu, ConvPlanCacheBenchmarkModeAlsoMatches) {
  ConvPlanCache::Options o;
  o.benchmark = true;
  plans_ = std::make_unique<ConvPlanCache>(o);
  gh_.conv_plans = plans_.get();
  Rng rng(6);
  for (DType t : {F32, F16}) {
    Case k;
    k.name = tname("ConvFwd(find)", t);
    k.in = {rnd(t, {8, 14, 14, 32}, rng), rnd(t, {64, 3, 3, 32}, rng, -0.3, 0.3)};
    k.out = {HostTensor(t, {8, 14, 14, 64})};
    k.tol = {conv_tol(t)};
    prepare_conv(OpKind::ConvFwd, k);
    check(conv_fwd_cpu, conv_fwd_cuda, k);
  }
}


}  // namespace
}  // namespace tr
