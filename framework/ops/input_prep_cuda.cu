// InputPrep CUDA kernel. Semantics: framework/ops/input_prep.h.
//   x[n,i,j,c] = (images[n, i*H0/h, j*W0/w, c] / 255 - mean[c]) / std[c]   (in float,
//   the CPU reference's formula: same bits), labels[n] = labels_src[n].
// One thread per output element; the first N threads also copy the labels.
// No workspace.
#include "framework/ops/cuda_kernel_util_cuda.h"
#include "framework/ops/input_prep.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;

struct Norm {
  float mean[4];
  float std[4];
};

template <typename T>
__global__ void input_prep_kernel(const uint8_t* __restrict__ img, const int32_t* __restrict__ labels_src,
                                  T* __restrict__ x, int32_t* __restrict__ labels, int64_t N, int64_t H0, int64_t W0,
                                  int64_t h, int64_t w, int64_t C, Norm norm) {
  const int64_t total = N * h * w * C;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < total; i += stride) {
    const int64_t ch = i % C;
    int64_t t = i / C;
    const int64_t j = t % w;
    t /= w;
    const int64_t r = t % h;
    const int64_t n = t / h;
    const int64_t si = r * H0 / h, sj = j * W0 / w;
    const float u = float(img[((n * H0 + si) * W0 + sj) * C + ch]);
    x[i] = from_f<T>((u / 255.f - norm.mean[ch]) / norm.std[ch]);
  }
  for (int64_t n = tid; n < N; n += stride) labels[n] = labels_src[n];
}

}  // namespace

void input_prep_cuda(const OpCall& c) {
  const char* op = "InputPrep";
  check_arity(c, 2, 2, op);
  const TensorRef& images = c.in[0];
  const TensorRef& labels_src = c.in[1];
  const TensorRef& x = c.out[0];
  const TensorRef& labels = c.out[1];
  TR_CHECK(c.variant != nullptr, op, ": needs a variant");
  const Shape& im = images.shape;
  TR_CHECK(im.rank == 4 && im[3] >= 1 && im[3] <= 4, op, ": images must be [B,H,W,C<=4], got ", im.str());
  const int64_t N = c.variant->batch, h = c.variant->height, w = c.variant->width;
  TR_CHECK(N >= 0 && N <= im[0] && h > 0 && h <= im[1] && w > 0 && w <= im[2], op, ": variant ", N, "x", h, "x",
           w, " for images ", im.str());
  check_dtype(images, DType::U8, op, "images");
  check_dtype(labels_src, DType::I32, op, "labels_src");
  check_dtype(labels, DType::I32, op, "labels");
  TR_CHECK(labels_src.shape.numel() >= N, op, ": labels_src ", labels_src.shape.str());
  check_numel(x, N * h * w * im[3], op, "x");
  check_numel(labels, N, op, "labels");
  if (N == 0) return;
  const OpAttrs& a = attrs_of(c, op);
  Norm norm{};
  for (int i = 0; i < 4; ++i) {
    norm.mean[i] = a.norm_mean[i];
    norm.std[i] = a.norm_std[i];
  }
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = N * h * w * im[3];
    int64_t blocks = ceil_div(total, kThreads);
    const int64_t cap = int64_t(sm_count(gh)) * 8;
    if (blocks > cap) blocks = cap;
    input_prep_kernel<T><<<unsigned(blocks), kThreads, 0, stream_of(c)>>>(
        images.as<uint8_t>(), labels_src.as<int32_t>(), x.as<T>(), labels.as<int32_t>(), N, im[1], im[2], h, w,
        im[3], norm);
    TR_LAUNCH_CHECK();
  });
}

}  // namespace tr
