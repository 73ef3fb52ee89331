// BnReluPool on CUDA (semantics: bn_relu_pool.h). Each thread keeps VEC
// channels' (scale, shift) in registers and walks pooled rows r, r + stride,
// ... (r = (n * Ho + oh) * Wo + ow): it loads the window's four x vectors,
// forms each y as BnReluApply stores it (bn_affine_cuda.h, rounded to T), and
// keeps the first strict maximum in scan order, as MaxPoolFwd does. Block row
// 0 writes batch and affine. No workspace, no atomics.
#include "framework/ops/compute/bn_relu_pool.h"
#include "framework/ops/kernels/bn_affine_cuda.h"
#include "framework/ops/kernels/pool_window.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kBlocksPerSm = 8;
constexpr int64_t kMinRowsPerThread = 4;

template <typename T, int VEC>
__global__ void bn_relu_pool_kernel(const T* __restrict__ x, const float* __restrict__ sums,
                                    const T* __restrict__ gamma, const T* __restrict__ beta, T* __restrict__ p,
                                    uint8_t* __restrict__ argmax, float* __restrict__ batch, float* __restrict__ affine,
                                    int64_t H, int64_t W, int64_t rows, int64_t C, double inv_count, float eps,
                                    bool relu) {
  grid_dependency_begin();
  const int64_t g = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t c0 = g * VEC;
  if (c0 >= C) return;
  float sc[VEC], sh[VEC];
  bn_thread_affine<T, VEC>(sums, gamma, beta, C, c0, inv_count, eps, batch, affine, sc, sh);
  const int64_t Ho = H / 2, Wo = W / 2;
  const int64_t offs[4] = {0, C, W * C, W * C + C};  // the window in scan order
  const int64_t stride = int64_t(gridDim.x) * blockDim.y;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; r < rows; r += stride) {
    const int64_t ow = r % Wo, t = r / Wo;
    const int64_t oh = t % Ho, n = t / Ho;
    const T* base = x + ((n * H + 2 * oh) * W + 2 * ow) * C + c0;
    Vec<T, VEC> xv[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) xv[k] = *reinterpret_cast<const Vec<T, VEC>*>(base + offs[k]);
    float m[VEC];
    Vec<uint8_t, VEC> at;
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        const float y = to_f(from_f<T>(bn_relu_value(sc[i], sh[i], to_f(xv[k].v[i]), relu)));
        if (k == 0 || y > m[i]) {
          m[i] = y;
          at.v[i] = uint8_t(k);
        }
      }
    store_vec<T, VEC>(p + r * C + c0, m);
    *reinterpret_cast<Vec<uint8_t, VEC>*>(argmax + r * C + c0) = at;
  }
}

}  // namespace

void bn_relu_pool_cuda(const OpCall& c) {
  const char* op = "BnReluPool";
  check_operands(OpKind::BnReluPool, c);
  const OpAttrs& a = attrs_of(c, op);
  const TensorRef& x = c.in[0];
  TR_CHECK(checked_pool_window(a, x.shape, op, true).is_2x2(), op,
           ": the pool must be 2x2 with stride 2 and no padding");
  const int64_t N = x.shape[0], H = x.shape[1], W = x.shape[2], C = x.shape[3];
  const Shape pooled{N, H / 2, W / 2, C};
  check_bn_train_operands(c.in[1], c.in[2], c.in[3], c.out[2], c.out[3], x.dtype, C, op);
  const TensorRef& p = c.out[0];
  const TensorRef& argmax = c.out[1];
  TR_CHECK(p.dtype == x.dtype && p.shape == pooled, op, ": p is ", dtype_name(p.dtype), p.shape.str(), ", expected ",
           dtype_name(x.dtype), pooled.str());
  TR_CHECK(argmax.dtype == DType::U8 && argmax.shape == pooled, op, ": argmax is ", dtype_name(argmax.dtype),
           argmax.shape.str(), ", expected u8", pooled.str());
  const int64_t rows = pooled.numel() / C;
  if (rows == 0) return;
  const double inv_count = bn_inv_count(c, x, N * H * W, op);
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    constexpr int V = kVec16<T>;
    const bool vec = C % V == 0 && aligned_to(x.data, 16) && aligned_to(p.data, 16) && aligned_to(argmax.data, V);
    auto launch = [&](auto vtag) {
      constexpr int VV = decltype(vtag)::value;
      const ChannelGrid g = channel_grid(rows, C, VV, sm_count(gh), kBlocksPerSm, kMinRowsPerThread);
      launch_kernel(c.env, {g.grid, g.block, 0}, bn_relu_pool_kernel<T, VV>, x.as<T>(), c.in[1].as<float>(),
                    c.in[2].as<T>(), c.in[3].as<T>(), p.as<T>(), static_cast<uint8_t*>(argmax.data),
                    c.out[2].as<float>(), c.out[3].as<float>(), H, W, rows, C, inv_count, a.eps, a.relu);
    };
    if (vec) launch(std::integral_constant<int, V>{});
    else launch(std::integral_constant<int, 1>{});
  });
}

}  // namespace tr
