// The convolution shape rules: the documented output shapes for every window,
// stride and padding, and a one-line UserError naming the op and the shapes for
// every bad combination.
#include <string>

#include "tests/ops_cpu_test_util.h"

namespace tr::test {
namespace {

OpRunner with(int kernel, int stride, int pad) {
  OpRunner r;
  r.attrs.kernel = kernel;
  r.attrs.stride = stride;
  r.attrs.pad = pad;
  return r;
}

TEST(OpsCpuConvShapes, OutputShapes) {
  struct Row {
    int kernel, stride, pad;
    Shape x, w, y;
  };
  const Row rows[] = {
      {3, 1, 1, {2, 5, 4, 3}, {4, 3, 3, 3}, {2, 5, 4, 4}},              // the cnn's
      {7, 2, 3, {2, 224, 224, 3}, {64, 7, 7, 3}, {2, 112, 112, 64}},    // ResNet-50 stem
      {1, 2, 0, {2, 56, 56, 256}, {512, 1, 1, 256}, {2, 28, 28, 512}},  // projection shortcut
      {1, 2, 0, {2, 7, 7, 8}, {16, 1, 1, 8}, {2, 4, 4, 16}},            // odd side: ceil
      {3, 2, 1, {2, 7, 8, 3}, {4, 3, 3, 3}, {2, 4, 4, 4}},              // odd and even sides agree
      {7, 2, 0, {2, 7, 8, 8}, {4, 7, 7, 8}, {2, 1, 1, 4}},              // the window just fits
      {3, 1, 2, {1, 1, 1, 2}, {3, 3, 3, 2}, {1, 3, 3, 3}},              // padding makes room
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(cat("x", r.x.str(), " w", r.w.str(), " stride ", r.stride, " pad ", r.pad));
    OpRunner run = with(r.kernel, r.stride, r.pad);
    EXPECT_EQ(run.shapes(conv_fwd_shapes, {r.x, r.w}, 1)[0], r.y);
    EXPECT_EQ(run.shapes(conv_bwd_data_shapes, {r.y, r.w, r.x}, 1)[0], r.x);
    EXPECT_EQ(run.shapes(conv_bwd_filter_shapes, {r.x, r.y}, 1)[0], r.w);
  }
}

TEST(OpsCpuConvShapes, BadAttributesAreUserErrors) {
  const Shape x{2, 8, 8, 3}, w{4, 3, 3, 3}, y{2, 8, 8, 4};
  for (OpRunner r : {with(0, 1, 0), with(3, 0, 1), with(3, -1, 1), with(3, 1, -1), with(3, 1, 3), with(1, 1, 1)}) {
    SCOPED_TRACE(cat("kernel ", r.attrs.kernel, " stride ", r.attrs.stride, " pad ", r.attrs.pad));
    EXPECT_THROW(r.shapes(conv_fwd_shapes, {x, w}, 1), UserError);
    EXPECT_THROW(r.shapes(conv_bwd_data_shapes, {y, w, x}, 1), UserError);
    EXPECT_THROW(r.shapes(conv_bwd_filter_shapes, {x, y}, 1), UserError);
  }
  EXPECT_EQ(user_error([] {
              with(3, 1, 3).shapes(conv_fwd_shapes, {{2, 8, 8, 3}, {4, 3, 3, 3}}, 1);
            }),
            "conv_fwd: padding must be in [0, kernel) for a 3x3 window, got 3");
}

TEST(OpsCpuConvShapes, BadFiltersAreUserErrors) {
  OpRunner r = with(3, 1, 1);
  const Shape x{2, 5, 4, 3};
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {x, {4, 3, 3, 2}}, 1), UserError);  // channels differ
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {x, {4, 5, 5, 3}}, 1), UserError);  // R != kernel
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {x, {4, 3, 5, 3}}, 1), UserError);  // not square
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {x, {4, 3, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {{5, 4, 3}, {4, 3, 3, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {{2, 0, 4, 3}, {4, 3, 3, 3}}, 1), UserError);
  EXPECT_THROW(r.shapes(conv_bwd_data_shapes, {{2, 5, 4, 4}, {4, 3, 3, 2}, x}, 1), UserError);  // w vs x
  EXPECT_THROW(r.shapes(conv_bwd_data_shapes, {{2, 5, 4, 4}, {4, 5, 5, 3}, x}, 1), UserError);  // R
  EXPECT_THROW(r.shapes(conv_bwd_data_shapes, {{2, 5, 4, 5}, {4, 3, 3, 3}, x}, 1), UserError);  // w vs dy
  EXPECT_EQ(user_error([&] {
              r.shapes(conv_fwd_shapes, {x, {4, 5, 5, 3}}, 1);
            }),
            "conv_fwd: w must be [K,3,3,C] for kernel 3, got [4,5,5,3]");
}

TEST(OpsCpuConvShapes, InputSmallerThanTheWindowIsAUserError) {
  const OpRunner r = with(7, 2, 0);
  const Shape x{2, 3, 3, 8}, w{4, 7, 7, 8};
  EXPECT_EQ(user_error([&] {
              r.shapes(conv_fwd_shapes, {x, w}, 1);
            }),
            "conv_fwd: x [2,3,3,8] is too small for a 7x7 window with stride 2 and padding 0");
  EXPECT_THROW(r.shapes(conv_bwd_data_shapes, {{2, 1, 1, 4}, w, x}, 1), UserError);
  EXPECT_THROW(r.shapes(conv_bwd_filter_shapes, {x, {2, 1, 1, 4}}, 1), UserError);
  // Only one side too small is enough; padding can make room.
  EXPECT_THROW(r.shapes(conv_fwd_shapes, {{2, 9, 6, 8}, w}, 1), UserError);
  EXPECT_EQ(with(7, 2, 1).shapes(conv_fwd_shapes, {{2, 9, 6, 8}, w}, 1)[0], (Shape{2, 3, 1, 4}));
}

// dy must be exactly the forward output of x: with stride 2, x of side 7 and 8
// both give side 4, so BwdData takes x to know which.
TEST(OpsCpuConvShapes, GradientMustMatchTheForwardOutput) {
  const OpRunner r = with(3, 2, 1);
  const Shape w{4, 3, 3, 3};
  for (const Shape& x : {Shape{2, 7, 7, 3}, Shape{2, 8, 8, 3}}) {
    EXPECT_EQ(r.shapes(conv_bwd_data_shapes, {{2, 4, 4, 4}, w, x}, 1)[0], x);
    EXPECT_EQ(r.shapes(conv_bwd_filter_shapes, {x, {2, 4, 4, 4}}, 1)[0], w);
  }
  const Shape x{2, 8, 8, 3};
  for (const Shape& dy : {Shape{2, 3, 4, 4}, Shape{2, 8, 8, 4}, Shape{1, 4, 4, 4}, Shape{2, 4, 4}}) {
    SCOPED_TRACE(dy.str());
    EXPECT_THROW(r.shapes(conv_bwd_data_shapes, {dy, w, x}, 1), UserError);
    EXPECT_THROW(r.shapes(conv_bwd_filter_shapes, {x, dy}, 1), UserError);
  }
  EXPECT_EQ(user_error([&] {
              r.shapes(conv_bwd_filter_shapes, {x, {2, 8, 8, 4}}, 1);
            }),
            "conv_bwd_filter: dy [2,8,8,4] must be [2,4,4,4], the output of x [2,8,8,3] for a 3x3 window with "
            "stride 2 and padding 1");
}

}  // namespace
}  // namespace tr::test
