// InputPrep CUDA kernel. Semantics: framework/ops/compute/input_prep.h.
//   x[m,i,j,c] = (images[n, i'*H0/h, j'*W0/w, c] / 255 - mean[c]) / std[c]   (in float,
//   the CPU reference's formula: same bits), labels[n] = labels_src[n];
//   n = m mod N, (i', j') from framework/ops/kernels/augment.h (identity unless the
//   sample is augmented or, for m >= N under flip-TTA, mirrored).
// One thread per output pixel (its C <= 4 channels), so the index arithmetic is
// done once per pixel; the first N threads also copy the labels.
// Augmenting threads read the batch counter from the scalars in device memory,
// so a captured graph draws new decisions on every replay. No workspace.
#include "framework/ops/compute/input_prep.h"
#include "framework/ops/kernels/augment.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;

struct Norm {
  float mean[4];
  float std[4];
};

// The shapes: Nout = N or 2N samples out, each h x w x C, read from H0 x W0.
struct PrepDims {
  int64_t N, Nout, H0, W0, h, w, C;
  int32_t rank;
};

template <typename T, bool AUG>
__global__ void input_prep_kernel(const uint8_t* __restrict__ img, const int32_t* __restrict__ labels_src,
                                  T* __restrict__ x, int32_t* __restrict__ labels, PrepDims d, Norm norm,
                                  AugmentParams aug, const TrainScalars* __restrict__ scalars) {
  grid_dependency_begin();
  const int64_t plane = d.h * d.w;
  const int64_t pixels = d.Nout * plane;
  const bool full_res = d.h == d.H0 && d.w == d.W0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint32_t batch = AUG ? uint32_t(scalars->batches) : 0u;
  for (int64_t p = tid; p < pixels; p += stride) {
    const int64_t m = p / plane;
    const int32_t ij = int32_t(p - m * plane), w = int32_t(d.w);  // plane < 2^31 (checked by the launcher)
    const int64_t i = ij / w, j = ij % w;
    const int64_t n = m < d.N ? m : m - d.N;  // m mod N (m < 2N)
    AugmentChoice choice;
    if (AUG) choice = augment_choice(aug, batch, uint32_t(d.rank * d.N + n), int32_t(d.h), int32_t(d.w));
    int64_t si = 0, sj = 0;
    const bool inside = augment_source(choice, i, m >= d.N ? d.w - 1 - j : j, d.h, d.w, si, sj);
    const bool cut = AUG && augment_cut(choice, aug.cutout, i, j);
    const uint8_t* src = nullptr;
    if (inside && !cut)
      src = img + ((n * d.H0 + (full_res ? si : si * d.H0 / d.h)) * d.W0 + (full_res ? sj : sj * d.W0 / d.w)) * d.C;
    T* dst = x + p * d.C;
    for (int64_t ch = 0; ch < d.C; ++ch) {
      float v;
      if (cut) {
        v = 0.f;
      } else {
        const float u = src != nullptr ? float(src[ch]) : 0.f;
        v = (u / 255.f - norm.mean[ch]) / norm.std[ch];
      }
      dst[ch] = from_f<T>(v);
    }
  }
  for (int64_t n = tid; n < d.N; n += stride) labels[n] = labels_src[n];
}

}  // namespace

void input_prep_cuda(const OpCall& c) {
  const char* op = "InputPrep";
  check_operands(OpKind::InputPrep, c);
  const TensorRef& images = c.in[0];
  const TensorRef& labels_src = c.in[1];
  const TensorRef& x = c.out[0];
  const TensorRef& labels = c.out[1];
  TR_CHECK(c.variant != nullptr, op, ": needs a variant");
  const Shape& im = images.shape;
  TR_CHECK(im.rank == 4 && im[3] >= 1 && im[3] <= 4, op, ": images must be [B,H,W,C<=4], got ", im.str());
  const int64_t N = c.variant->batch, h = c.variant->height, w = c.variant->width;
  TR_CHECK(N >= 0 && N <= im[0] && h > 0 && h <= im[1] && w > 0 && w <= im[2], op, ": variant ", N, "x", h, "x", w,
           " for images ", im.str());
  check_dtype(images, DType::U8, op, "images");
  check_dtype(labels_src, DType::I32, op, "labels_src");
  check_dtype(labels, DType::I32, op, "labels");
  TR_CHECK(labels_src.shape.numel() >= N, op, ": labels_src ", labels_src.shape.str());
  const OpAttrs& a = attrs_of(c, op);
  const int64_t Nout = a.tta_flip ? 2 * N : N;
  check_numel(x, Nout * h * w * im[3], op, "x");
  check_numel(labels, N, op, "labels");
  if (N == 0) return;
  const AugmentParams aug = augment_params(a);
  TR_CHECK(!aug.any() || (c.env && c.env->scalars), op, ": augmentation needs the scalars");
  Norm norm{};
  for (int i = 0; i < 4; ++i) {
    norm.mean[i] = a.norm_mean[i];
    norm.std[i] = a.norm_std[i];
  }
  TR_CHECK(h * w < (int64_t(1) << 31), op, ": a ", h, "x", w, " image is too large");
  const PrepDims d{N, Nout, im[1], im[2], h, w, im[3], int32_t(c.env ? c.env->rank : 0)};
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = Nout * h * w;
    int64_t blocks = ceil_div(total, kThreads);
    const int64_t cap = int64_t(sm_count(gh)) * 8;
    if (blocks > cap) blocks = cap;
    const TrainScalars* s = aug.any() ? c.env->scalars : nullptr;
    if (aug.any())
      launch_kernel(c.env, {unsigned(blocks), kThreads, 0}, input_prep_kernel<T, true>, images.as<uint8_t>(),
                    labels_src.as<int32_t>(), x.as<T>(), labels.as<int32_t>(), d, norm, aug, s);
    else
      launch_kernel(c.env, {unsigned(blocks), kThreads, 0}, input_prep_kernel<T, false>, images.as<uint8_t>(),
                    labels_src.as<int32_t>(), x.as<T>(), labels.as<int32_t>(), d, norm, aug, s);
  });
}

}  // namespace tr
