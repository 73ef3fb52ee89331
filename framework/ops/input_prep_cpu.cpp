// InputPrep: shape rule and the CPU reference.
//   x[n,i,j,c] = (images[n, floor(i*H0/h), floor(j*W0/w), c] / 255 - mean[c]) / std[c]
//   labels[n]  = labels_src[n]                          for n < N = variant.batch
// The normalisation goes through a 256-entry table per channel, computed with
// exactly the formula above (in float, or double for F64).
#include "framework/ops/input_prep.h"

#include "framework/ops/cpu_kernel_util.h"

namespace tr {
namespace {

using cpu::acc_t;

template <class S>
void prep_impl(const OpCall& c, int64_t N, int64_t h, int64_t w) {
  using A = acc_t<S>;
  const Shape& is = c.in[0].shape;
  const int64_t H0 = is[1], W0 = is[2], C = is[3];
  S* lut = cpu::scratch<S>(0, size_t(256 * C));
  for (int64_t ch = 0; ch < C; ++ch) {
    const A mean = A(c.attrs->norm_mean[ch]), sd = A(c.attrs->norm_std[ch]);
    for (int v = 0; v < 256; ++v) lut[ch * 256 + v] = cpu::store<S>((A(v) / A(255) - mean) / sd);
  }
  const uint8_t* img = c.in[0].as<uint8_t>();
  S* x = c.out[0].as<S>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < h; ++i) {
      const int64_t si = i * H0 / h;
      for (int64_t j = 0; j < w; ++j) {
        const int64_t sj = j * W0 / w;
        const uint8_t* src = img + ((n * H0 + si) * W0 + sj) * C;
        S* dst = x + ((n * h + i) * w + j) * C;
        for (int64_t ch = 0; ch < C; ++ch) dst[ch] = lut[ch * 256 + src[ch]];
      }
    }
  const int32_t* ls = c.in[1].as<int32_t>();
  int32_t* ld = c.out[1].as<int32_t>();
  for (int64_t n = 0; n < N; ++n) ld[n] = ls[n];
}

}  // namespace

void input_prep_shapes(const ShapeCtx& c, Shape* out, int n_out) {
  const char* op = "input_prep";
  TR_CHECK(c.n_in == 2 && n_out == 2, op, ": arity");
  TR_CHECK(c.variant != nullptr, op, ": needs a variant");
  const Shape &im = c.in[0], &ls = c.in[1];
  TR_USER_CHECK(im.rank == 4, op, ": images must be [B,H,W,C], got ", im.str());
  for (int i = 0; i < 4; ++i) TR_USER_CHECK(im[i] > 0, op, ": images has a non-positive dim: ", im.str());
  TR_USER_CHECK(im[3] <= 4, op, ": images ", im.str(), " have more than 4 channels");
  TR_USER_CHECK(ls.rank == 1 && ls[0] == im[0], op, ": labels must be [", im[0], "], got ", ls.str());
  const VariantDims& v = *c.variant;
  TR_USER_CHECK(v.batch > 0 && v.batch <= im[0], op, ": variant batch ", v.batch, " must be in [1,", im[0],
                "] for images ", im.str());
  TR_USER_CHECK(v.height > 0 && v.height <= im[1] && v.width > 0 && v.width <= im[2], op,
                ": variant resolution ", v.height, "x", v.width, " must be in [1,", im[1], "]x[1,", im[2],
                "] (downsampling only) for images ", im.str());
  for (int ch = 0; ch < im[3]; ++ch)
    TR_USER_CHECK(c.attrs->norm_std[ch] > 0.f, op, ": norm_std[", ch, "] = ", c.attrs->norm_std[ch],
                  " must be positive");
  out[0] = Shape{v.batch, v.height, v.width, im[3]};
  out[1] = Shape{v.batch};
}

void input_prep_cpu(const OpCall& c) {
  const char* op = "input_prep";
  cpu::check_arity(c, op, 2, 2, 2, 2);
  TR_CHECK(c.variant != nullptr, op, ": needs a variant");
  const Shape& im = c.in[0].shape;
  TR_CHECK(im.rank == 4 && im[3] <= 4, op, ": images ", im.str());
  const int64_t N = c.variant->batch, h = c.variant->height, w = c.variant->width;
  TR_CHECK(N >= 0 && N <= im[0] && h > 0 && h <= im[1] && w > 0 && w <= im[2], op, ": variant ", N, "x",
           h, "x", w, " for images ", im.str());
  cpu::check_dtype(c.in[0], DType::U8, op, "images");
  cpu::check_dtype(c.in[1], DType::I32, op, "labels_src");
  cpu::check_dtype(c.out[1], DType::I32, op, "labels");
  TR_CHECK(c.in[1].shape.numel() >= N, op, ": labels_src ", c.in[1].shape.str());
  cpu::check_numel(c.out[0], N * h * w * im[3], op, "x");
  cpu::check_numel(c.out[1], N, op, "labels");
  cpu::dispatch_float(c.out[0].dtype, op, [&](auto tag) { prep_impl<typename decltype(tag)::type>(c, N, h, w); });
}

}  // namespace tr
