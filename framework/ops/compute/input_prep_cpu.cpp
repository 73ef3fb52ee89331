// InputPrep: shape rule and the CPU reference.
//   x[n,i,j,c] = (images[n, floor(i'*H0/h), floor(j'*W0/w), c] / 255 - mean[c]) / std[c]
//   labels[n]  = labels_src[n]                          for n < N = variant.batch
// where (i', j') = (i, j) unless the sample is augmented or mirrored
// (framework/ops/kernels/augment.h gives (i', j'), the padding and the cutout).
// The normalisation goes through a 256-entry table per channel, computed with
// exactly the formula above (in float, or double for F64).
#include "framework/ops/compute/input_prep.h"

#include <algorithm>

#include "framework/core/setting.h"
#include "framework/ops/kernels/augment.h"
#include "framework/ops/kernels/cpu_kernel_util.h"
#include "framework/ops/op_signature.h"

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
  const AugmentParams aug = augment_params(*c.attrs);
  const uint32_t batch = aug.any() ? uint32_t(c.env->scalars->batches) : 0u;
  const int64_t copies = c.attrs->tta_flip ? 2 : 1;
  const uint8_t* img = c.in[0].as<uint8_t>();
  S* x = c.out[0].as<S>();
  for (int64_t m = 0; m < copies * N; ++m) {
    const int64_t n = m % N;
    AugmentChoice ch0;
    if (aug.any()) ch0 = augment_choice(aug, batch, uint32_t(c.env->rank * N + n), int32_t(h), int32_t(w));
    const bool mirror = m >= N;
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        S* dst = x + ((m * h + i) * w + j) * C;
        int64_t si = 0, sj = 0;
        const bool inside = augment_source(ch0, i, mirror ? w - 1 - j : j, h, w, si, sj);
        if (augment_cut(ch0, aug.cutout, i, j)) {
          for (int64_t ch = 0; ch < C; ++ch) dst[ch] = cpu::store<S>(A(0));
        } else if (!inside) {
          for (int64_t ch = 0; ch < C; ++ch) dst[ch] = lut[ch * 256];
        } else {
          const uint8_t* src = img + ((n * H0 + si * H0 / h) * W0 + sj * W0 / w) * C;
          for (int64_t ch = 0; ch < C; ++ch) dst[ch] = lut[ch * 256 + src[ch]];
        }
      }
  }
  const int32_t* ls = c.in[1].as<int32_t>();
  int32_t* ld = c.out[1].as<int32_t>();
  for (int64_t n = 0; n < N; ++n) ld[n] = ls[n];
}

}  // namespace

void input_prep_shapes(const ShapeCtx& c, Shape* out, int) {
  const char* op = "input_prep";
  TR_CHECK(c.variant != nullptr, op, ": needs a variant");
  const Shape &im = c.in[0], &ls = c.in[1];
  TR_USER_CHECK(im.rank == 4, op, ": images must be [B,H,W,C], got ", im.str());
  for (int i = 0; i < 4; ++i) TR_USER_CHECK(im[i] > 0, op, ": images has a non-positive dim: ", im.str());
  TR_USER_CHECK(im[3] <= 4, op, ": images ", im.str(), " have more than 4 channels");
  TR_USER_CHECK(ls.rank == 1 && ls[0] == im[0], op, ": labels must be [", im[0], "], got ", ls.str());
  const VariantDims& v = *c.variant;
  TR_USER_CHECK(v.batch > 0 && v.batch <= im[0], op, ": variant batch ", v.batch, " must be in [1,", im[0],
                "] for images ", im.str());
  TR_USER_CHECK(v.height > 0 && v.height <= im[1] && v.width > 0 && v.width <= im[2], op, ": variant resolution ",
                v.height, "x", v.width, " must be in [1,", im[1], "]x[1,", im[2], "] (downsampling only) for images ",
                im.str());
  for (int ch = 0; ch < im[3]; ++ch)
    TR_USER_CHECK(c.attrs->norm_std[ch] > 0.f, op, ": norm_std[", ch, "] = ", c.attrs->norm_std[ch],
                  " must be positive");
  const OpAttrs& a = *c.attrs;
  const int64_t side = std::min(v.height, v.width);
  TR_USER_CHECK(a.aug_translate >= 0 && a.aug_translate < side, op, ": ", setting("translate"), " ", a.aug_translate,
                " must be in [0, ", side, ") for ", v.height, "x", v.width, " images");
  TR_USER_CHECK(a.aug_cutout >= 0 && a.aug_cutout <= side, op, ": ", setting("cutout"), " ", a.aug_cutout,
                " must be in [0, ", side, "] for ", v.height, "x", v.width, " images");
  out[0] = Shape{a.tta_flip ? 2 * v.batch : v.batch, v.height, v.width, im[3]};
  out[1] = Shape{v.batch};
}

void input_prep_cpu(const OpCall& c) {
  const char* op = "input_prep";
  check_operands(OpKind::InputPrep, c);
  TR_CHECK(c.variant != nullptr, op, ": needs a variant");
  const Shape& im = c.in[0].shape;
  TR_CHECK(im.rank == 4 && im[3] <= 4, op, ": images ", im.str());
  const int64_t N = c.variant->batch, h = c.variant->height, w = c.variant->width;
  TR_CHECK(N >= 0 && N <= im[0] && h > 0 && h <= im[1] && w > 0 && w <= im[2], op, ": variant ", N, "x", h, "x", w,
           " for images ", im.str());
  cpu::check_dtype(c.in[0], DType::U8, op, "images");
  cpu::check_dtype(c.in[1], DType::I32, op, "labels_src");
  cpu::check_dtype(c.out[1], DType::I32, op, "labels");
  TR_CHECK(c.in[1].shape.numel() >= N, op, ": labels_src ", c.in[1].shape.str());
  cpu::check_numel(c.out[0], (c.attrs->tta_flip ? 2 : 1) * N * h * w * im[3], op, "x");
  cpu::check_numel(c.out[1], N, op, "labels");
  TR_CHECK(!augment_params(*c.attrs).any() || (c.env && c.env->scalars), op, ": augmentation needs the scalars");
  if (N == 0) return;
  cpu::dispatch_float(c.out[0].dtype, op, [&](auto tag) { prep_impl<typename decltype(tag)::type>(c, N, h, w); });
}

}  // namespace tr
