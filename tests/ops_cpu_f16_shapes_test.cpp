// The CPU ops with fp16 storage match fp32 to fp16 rounding, and every shape
// rule gives the documented shapes and rejects bad ones with a UserError.
#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

// ================================ fp16 storage ================================

// An op argument for the F16-vs-F32 comparison: T tensors switch dtype, the
// others (statistics, labels, images) stay as they are.
struct Arg {
  HostTensor t;
  bool is_t = true;
};

// Both runs compute in f32 (or double) on the same values, the inputs being fp16 values; the fp16 run then
// rounds each result once on store: at most 2^-11 = 4.9e-4 of the element, so of max |ref|. The default 1e-3
// leaves 2x; selects (max pooling's forward, ReLU) pass 0.
void expect_f16_matches_f32(const char* name, OpFn fn, const OpRunner& runner, std::vector<Arg> in,
                            std::vector<Arg> out, double tol = 1e-3) {
  SCOPED_TRACE(name);
  for (Arg& a : in)
    if (a.is_t) a.t = a.t.to(F16).to(F32);  // both runs see the same values
  std::vector<HostTensor> in16, out32, out16;
  for (Arg& a : in) in16.push_back(a.is_t ? a.t.to(F16) : a.t);
  for (Arg& a : out) {
    out32.push_back(a.t);
    out16.push_back(a.is_t ? a.t.to(F16) : a.t);
  }
  auto ptrs = [](std::vector<HostTensor>& v) {
    std::vector<HostTensor*> p;
    for (HostTensor& t : v) p.push_back(&t);
    return p;
  };
  std::vector<const HostTensor*> in32p;
  for (Arg& a : in) in32p.push_back(&a.t);
  std::vector<const HostTensor*> in16p(in16.size());
  for (size_t i = 0; i < in16.size(); ++i) in16p[i] = &in16[i];
  OpRunner run = runner;
  run.run(fn, in32p, ptrs(out32));
  run.run(fn, in16p, ptrs(out16));
  for (size_t k = 0; k < out.size(); ++k)
    EXPECT_LE(max_rel_err(out16[k].values(), out32[k].values()), tol) << "output " << k;
}

TEST(OpsCpuF16, EveryOpMatchesF32) {
  Rng rng(60);
  const Shape xs{2, 6, 5, 8};
  auto rt = [&](Shape s, double lo = -1, double hi = 1) { return random_tensor(F32, s, rng, lo, hi); };
  OpRunner run;
  run.variant = VariantDims{2, 2, 6, 5};
  run.attrs.scale = 0.125f;
  run.attrs.label_smoothing = 0.1f;
  run.scalars.loss_scale = 4.f;

  HostTensor x = rt(xs), w = rt({16, 3, 3, 8}), dy = rt({2, 6, 5, 16});
  OpRunner conv = run;  // 3x3, stride 1, pad 1
  conv.attrs.kernel = 3;
  conv.attrs.pad = 1;
  expect_f16_matches_f32("conv_fwd", conv_fwd_cpu, conv, {{x}, {w}}, {{HostTensor(F32, {2, 6, 5, 16})}});
  expect_f16_matches_f32("conv_bwd_data", conv_bwd_data_cpu, conv, {{dy}, {w}, {x}}, {{HostTensor(F32, xs)}});
  expect_f16_matches_f32("conv_bwd_filter", conv_bwd_filter_cpu, conv, {{x}, {dy}}, {{HostTensor(F32, w.shape())}});
  HostTensor w7 = rt({4, 7, 7, 8}), dy7 = rt({2, 3, 3, 4});  // 7x7, stride 2, pad 3
  conv.attrs.kernel = 7;
  conv.attrs.stride = 2;
  conv.attrs.pad = 3;
  expect_f16_matches_f32("conv_fwd 7x7/2", conv_fwd_cpu, conv, {{x}, {w7}}, {{HostTensor(F32, dy7.shape())}});
  expect_f16_matches_f32("conv_bwd_data 7x7/2", conv_bwd_data_cpu, conv, {{dy7}, {w7}, {x}}, {{HostTensor(F32, xs)}});
  expect_f16_matches_f32("conv_bwd_filter 7x7/2", conv_bwd_filter_cpu, conv, {{x}, {dy7}},
                         {{HostTensor(F32, w7.shape())}});

  const HostTensor xh = x.to(F16).to(F32);  // BN statistics from the values both runs see
  HostTensor sums(F32, {2, 8}), gamma = rt({8}, 0.5, 1.5), beta = rt({8}, -0.5, 0.5), y(F32, xs), batch(F32, {2, 8});
  HostTensor taff(F32, {2, 8});  // the forward's (scale, shift)
  run.run(bn_stats_cpu, {&xh}, {&sums});
  run.run(bn_relu_apply_cpu, {&xh, &sums, &gamma, &beta}, {&y, &batch, &taff});
  HostTensor dsums(F32, {2, 8}), dg(F32, {8}), db(F32, {8});
  const HostTensor dybn = rt(xs).to(F16).to(F32);
  // The backward's ReLU mask comes from x: both runs read the same x (xh).
  run.run(bn_relu_bwd_reduce_cpu, {&dybn, &taff, &xh, &batch}, {&dg, &db, &dsums});
  expect_f16_matches_f32("bn_stats", bn_stats_cpu, run, {{x}}, {{HostTensor(F32, {2, 8}), false}});
  expect_f16_matches_f32("bn_relu_apply", bn_relu_apply_cpu, run, {{x}, {sums, false}, {gamma}, {beta}},
                         {{HostTensor(F32, xs)}, {HostTensor(F32, {2, 8}), false}, {HostTensor(F32, {2, 8}), false}});
  expect_f16_matches_f32("bn_relu_bwd_reduce", bn_relu_bwd_reduce_cpu, run,
                         {{dybn}, {taff, false}, {xh}, {batch, false}},
                         {{HostTensor(F32, {8})}, {HostTensor(F32, {8})}, {HostTensor(F32, {2, 8}), false}});
  expect_f16_matches_f32("bn_relu_bwd_apply", bn_relu_bwd_apply_cpu, run,
                         {{dybn}, {taff, false}, {xh}, {batch, false}, {gamma}, {dsums, false}},
                         {{HostTensor(F32, xs)}});
  HostTensor affine = rt({2, 8});
  expect_f16_matches_f32("bn_relu_infer", bn_relu_infer_cpu, run, {{x}, {affine, false}}, {{HostTensor(F32, xs)}});

  const HostTensor xd = distinct_tensor(F32, xs, rng).to(F16).to(F32);
  HostTensor py(F32, {2, 3, 2, 8}), gy(F32, {2, 8});
  OpRunner pool = run;  // 2x2/s2 windows
  pool.attrs.kernel = 2;
  pool.attrs.stride = 2;
  pool.run(maxpool_fwd_cpu, {&xd}, {&py});
  pool.run(global_maxpool_fwd_cpu, {&xd}, {&gy});
  expect_f16_matches_f32("maxpool_fwd", maxpool_fwd_cpu, pool, {{xd}}, {{HostTensor(F32, py.shape())}}, 0);
  expect_f16_matches_f32("maxpool_bwd", maxpool_bwd_cpu, pool, {{rt(py.shape())}, {xd}, {py}}, {{HostTensor(F32, xs)}});
  expect_f16_matches_f32("global_maxpool_fwd", global_maxpool_fwd_cpu, run, {{xd}}, {{HostTensor(F32, gy.shape())}}, 0);
  expect_f16_matches_f32("global_maxpool_bwd", global_maxpool_bwd_cpu, run, {{rt(gy.shape())}, {xd}, {gy}},
                         {{HostTensor(F32, xs)}});

  HostTensor fx = rt({2, 6, 5, 8}), fw = rt({10, 240}), fb = rt({10}), fdy = rt({2, 10});
  run.attrs.has_bias = true;
  expect_f16_matches_f32("fc_fwd", fc_fwd_cpu, run, {{fx}, {fw}, {fb}}, {{HostTensor(F32, {2, 10})}});
  expect_f16_matches_f32("fc_bwd_data", fc_bwd_data_cpu, run, {{fdy}, {fw}, {fx}}, {{HostTensor(F32, fx.shape())}});
  expect_f16_matches_f32("fc_bwd_weight", fc_bwd_weight_cpu, run, {{fx}, {fdy}},
                         {{HostTensor(F32, {10, 240})}, {HostTensor(F32, {10})}});

  expect_f16_matches_f32("relu_fwd", relu_fwd_cpu, run, {{x}}, {{HostTensor(F32, xs)}}, 0);
  expect_f16_matches_f32("relu_bwd", relu_bwd_cpu, run, {{dy}, {rt(dy.shape())}}, {{HostTensor(F32, dy.shape())}}, 0);

  HostTensor labels(DType::I32, {2});
  labels.set(0, 3);
  labels.set(1, 9);
  expect_f16_matches_f32("softmax_xent", softmax_xent_cpu, run, {{rt({2, 10}, -3, 3)}, {labels, false}},
                         {{HostTensor(F32, {2, 10})}, {HostTensor(F32, {kMetricSlots}), false}});

  HostTensor images(DType::U8, {3, 6, 5, 3}), lsrc(DType::I32, {3});
  for (int64_t i = 0; i < images.numel(); ++i) images.set(i, double(i % 256));
  lsrc.fill(1);
  expect_f16_matches_f32("input_prep", input_prep_cpu, run, {{images, false}, {lsrc, false}},
                         {{HostTensor(F32, {2, 6, 5, 3})}, {HostTensor(DType::I32, {2}), false}});
}

// ================================ shape rules ================================

// Convolution shape rules: ops_cpu_conv_shapes_test.cpp.

TEST(OpsCpuShapes, BatchNorm) {
  OpRunner r;
  const Shape x{2, 5, 5, 3}, p{2, 3}, v{3};
  EXPECT_EQ(r.shapes(bn_stats_shapes, {x}, 1)[0], p);
  EXPECT_EQ(r.shapes(bn_relu_apply_shapes, {x, p, v, v}, 3), (std::vector<Shape>{x, p, p}));
  EXPECT_EQ(r.shapes(bn_relu_bwd_reduce_shapes, {x, p, x, p}, 3), (std::vector<Shape>{v, v, p}));
  EXPECT_EQ(r.shapes(bn_relu_bwd_apply_shapes, {x, p, x, p, v, p}, 1)[0], x);
  EXPECT_EQ(r.shapes(bn_relu_infer_shapes, {x, p}, 1)[0], x);
  EXPECT_EQ(r.shapes(bn_fold_shapes, {v, v, p}, 1)[0], p);
  EXPECT_THROW(r.shapes(bn_stats_shapes, {{6}}, 1), UserError);
  EXPECT_THROW(r.shapes(bn_relu_apply_shapes, {x, p, {4}, v}, 3), UserError);
  EXPECT_THROW(r.shapes(bn_relu_apply_shapes, {x, {3, 3}, v, v}, 3), UserError);
  EXPECT_THROW(r.shapes(bn_relu_bwd_reduce_shapes, {x, x, x, p}, 3), UserError);  // affine must be [2,C]
  EXPECT_THROW(r.shapes(bn_relu_bwd_reduce_shapes, {{2, 5, 4, 3}, p, x, p}, 3), UserError);
  EXPECT_THROW(r.shapes(bn_relu_bwd_apply_shapes, {x, p, x, p, v, {2, 4}}, 1), UserError);
  EXPECT_THROW(r.shapes(bn_fold_shapes, {v, v, {2, 4}}, 1), UserError);
}

// Pooling shape rules: ops_cpu_pool_test.cpp (OpsCpuPoolShapes).

TEST(OpsCpuShapes, Fc) {
  OpRunner r;
  const Shape x{3, 2, 2, 3}, w{5, 12}, dy{3, 5};
  EXPECT_EQ(r.shapes(fc_fwd_shapes, {x, w}, 1)[0], dy);
  EXPECT_EQ(r.shapes(fc_bwd_data_shapes, {dy, w, Shape{3, 12}}, 1)[0], (Shape{3, 12}));
  EXPECT_EQ(r.shapes(fc_bwd_weight_shapes, {x, dy}, 1)[0], w);
  EXPECT_THROW(r.shapes(fc_fwd_shapes, {x, {5, 11}}, 1), UserError);
  EXPECT_THROW(r.shapes(fc_bwd_data_shapes, {{3, 6}, w, Shape{3, 12}}, 1), UserError);
  EXPECT_THROW(r.shapes(fc_bwd_weight_shapes, {x, {4, 5}}, 1), UserError);
  r.attrs.has_bias = true;
  EXPECT_EQ(r.shapes(fc_fwd_shapes, {x, w, {5}}, 1)[0], dy);
  EXPECT_EQ(r.shapes(fc_bwd_weight_shapes, {x, dy}, 2), (std::vector<Shape>{w, {5}}));
  EXPECT_THROW(r.shapes(fc_fwd_shapes, {x, w, {4}}, 1), UserError);
}

TEST(OpsCpuShapes, ReluAndSoftmaxXent) {
  OpRunner r;
  EXPECT_EQ(r.shapes(relu_fwd_shapes, {{2, 3, 4}}, 1)[0], (Shape{2, 3, 4}));
  EXPECT_EQ(r.shapes(relu_bwd_shapes, {{2, 3}, {2, 3}}, 1)[0], (Shape{2, 3}));
  EXPECT_THROW(r.shapes(relu_bwd_shapes, {{2, 4}, {2, 3}}, 1), UserError);
  EXPECT_EQ(r.shapes(softmax_xent_shapes, {{3, 5}, {3}}, 2), (std::vector<Shape>{{3, 5}, {kMetricSlots}}));
  EXPECT_THROW(r.shapes(softmax_xent_shapes, {{3, 5}, {4}}, 2), UserError);
  EXPECT_THROW(r.shapes(softmax_xent_shapes, {{3, 5, 1}, {3}}, 2), UserError);
  r.attrs.with_grad = false;
  EXPECT_EQ(r.shapes(softmax_xent_shapes, {{3, 5}, {3}}, 1), (std::vector<Shape>{{kMetricSlots}}));
  r.attrs.label_smoothing = 1.5f;
  EXPECT_THROW(r.shapes(softmax_xent_shapes, {{3, 5}, {3}}, 1), UserError);
}

TEST(OpsCpuShapes, InputPrep) {
  OpRunner r;
  r.variant = VariantDims{2, 2, 4, 3};
  const Shape im{3, 6, 5, 2}, ls{3};
  EXPECT_EQ(r.shapes(input_prep_shapes, {im, ls}, 2), (std::vector<Shape>{{2, 4, 3, 2}, {2}}));
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, {2}}, 2), UserError);
  EXPECT_THROW(r.shapes(input_prep_shapes, {{3, 6, 5, 5}, ls}, 2), UserError);
  r.attrs.norm_std[1] = 0.f;
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
  r.attrs.norm_std[1] = 1.f;
  r.variant = VariantDims{4, 4, 4, 3};  // batch larger than the staging buffer
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
  r.variant = VariantDims{2, 2, 7, 3};  // upsampling
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
  r.variant = VariantDims{2, 2, 0, 0};  // resolution unset
  EXPECT_THROW(r.shapes(input_prep_shapes, {im, ls}, 2), UserError);
}

}  // namespace
}  // namespace tr::test
