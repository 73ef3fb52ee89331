// ClassifierHead on the GPU (semantics: classifier_head.h). Each block takes S
// samples at once (S = 1 to 8: more when the batch would leave the SMs several
// blocks each, so that the chain of dependent steps below is paid once for S
// samples), 8 warps; a grid-stride loop over groups of S samples:
//   1. the global max pool, a thread per (sample, channel vector), positions
//      in order -> p;
//   2. the logits, a warp per (sample, class) (small_fc_dot) -> z in shared
//      memory;
//   3. each sample's loss row and its gradient, a warp per sample (xent_row)
//      -> dlogits, the row's (loss, correct) in the workspace;
//   4. the feature gradient, a thread per (sample, channel vector)
//      (small_fc_dgrad), rounded to T, routed to the first position equal to
//      p -> dx.
// Then the metrics kernel adds the rows (launch_xent_metrics). Steps 2-4 call
// the device functions of the unfused fc and loss kernels (Note [small fc],
// softmax_xent_row_cuda.h); steps 1 and 4 repeat the comparisons of
// global_maxpool_{fwd,bwd}_kernel (pool_cuda.cu), which are exact. Each step
// rounds where the unfused op stores, so the bits are theirs.
//   workspace: 8 * N bytes.
#include "framework/ops/compute/classifier_head.h"
#include "framework/ops/kernels/bn_affine_cuda.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/fc_small_cuda.h"
#include "framework/ops/kernels/softmax_xent_row_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kMaxSamplesPerBlock = 8;
constexpr size_t kMaxHeadBnSmem = 32 * 1024;  // with z, under the 48 KB a kernel gets without opting in

// Samples per block: as many (up to 8, a power of two) as leave at least two
// blocks per SM.
int samples_per_block(int64_t N, int sms) {
  int s = 1;
  while (s < kMaxSamplesPerBlock && N / (int64_t(2) * s) >= int64_t(2) * sms) s *= 2;
  return s;
}

// The BatchNorm + ReLU in front of the head (classifier_head.h), or none
// (sums == null): its inputs, and where block 0 writes batch and affine.
template <typename T>
struct HeadBn {
  const float* sums = nullptr;
  const T* gamma = nullptr;
  const T* beta = nullptr;
  float* batch = nullptr;
  float* affine = nullptr;
  double inv_count = 0.0;
  float eps = 0.f;
  bool relu = true;
};

// The head's input at VEC channels from c0: x itself, or with the BatchNorm
// in front its y, rounded to T as BnReluApply stores it. aff: (scale, shift)
// per channel in shared memory, or null.
template <typename T, int VEC>
__device__ __forceinline__ void load_head_input(const T* xq, const float* aff, int64_t C, int64_t c0, bool relu,
                                                float (&v)[VEC]) {
  load_vec<T, VEC>(xq, v);
  if (aff == nullptr) return;
#pragma unroll
  for (int j = 0; j < VEC; ++j) v[j] = to_f(from_f<T>(bn_relu_value(aff[c0 + j], aff[C + c0 + j], v[j], relu)));
}

// p and dlogits are written and read back by the same block (after a barrier),
// so they are not __restrict__. VEC channels per thread in steps 1 and 4
// (16-byte loads where C and the pointers allow, as the pool's own kernels).
// With the BatchNorm in front, every block first forms the (scale, shift) of
// every channel in shared memory (2*C floats of dynamic shared memory).
template <typename T, int VEC>
__global__ void classifier_head_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                       const int32_t* __restrict__ labels, T* p, T* dlogits, T* __restrict__ dx,
                                       const TrainScalars* __restrict__ scalars, float2* __restrict__ rows, int64_t N,
                                       int64_t P, int64_t C, int64_t M, int S, float fc_scale, float smoothing,
                                       float inv_global_batch, HeadBn<T> bn) {
  grid_dependency_begin();
  __shared__ T z[kMaxSamplesPerBlock * kSmallFcMaxOutputs];
  extern __shared__ float aff_smem[];  // [2][C]: scale, shift
  const float* aff = nullptr;
  if (bn.sums != nullptr) {
    for (int64_t ch = threadIdx.x; ch < C; ch += blockDim.x)
      bn_train_affine(bn.sums, bn.gamma, bn.beta, C, ch, bn.inv_count, bn.eps, aff_smem[ch], aff_smem[C + ch],
                      blockIdx.x == 0 ? bn.batch : nullptr, bn.affine);
    __syncthreads();
    aff = aff_smem;
  }
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) / 32, warps = int(blockDim.x) / 32;
  const float grad_scale = scalars->loss_scale * inv_global_batch;
  const int64_t G = C / VEC;  // channel vectors per sample
  for (int64_t n0 = int64_t(blockIdx.x) * S; n0 < N; n0 += int64_t(gridDim.x) * S) {
    const int64_t ns = N - n0 < S ? N - n0 : S;  // samples in this group
    for (int64_t i = threadIdx.x; i < ns * G; i += blockDim.x) {
      const int64_t n = n0 + i / G, c0 = (i % G) * VEC;
      const T* xn = x + n * P * C + c0;
      float m[VEC], v[VEC];
      load_head_input<T, VEC>(xn, aff, C, c0, bn.relu, m);
#pragma unroll 4
      for (int64_t q = 1; q < P; ++q) {
        load_head_input<T, VEC>(xn + q * C, aff, C, c0, bn.relu, v);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (v[j] > m[j]) m[j] = v[j];
      }
      store_vec<T, VEC>(p + n * C + c0, m);
    }
    __syncthreads();
    for (int64_t i = warp; i < ns * M; i += warps) {
      const int64_t s = i / M, m = i % M;
      const float v = small_fc_dot(p + (n0 + s) * C, w + m * C, C, lane, fc_scale);
      if (lane == 0) z[s * M + m] = from_f<T>(v);
    }
    __syncthreads();
    for (int64_t s = warp; s < ns; s += warps) {
      const int64_t n = n0 + s;
      xent_row(z + s * M, labels[n], M, smoothing, grad_scale, dlogits + n * M, rows + n, lane);
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < ns * G; i += blockDim.x) {
      const int64_t n = n0 + i / G, c0 = (i % G) * VEC;
      float d[VEC], y[VEC];
      small_fc_dgrad<T, VEC>(dlogits + n * M, w, M, C, c0, fc_scale, d);
      load_vec<T, VEC>(p + n * C + c0, y);
      bool taken[VEC];
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        d[j] = to_f(from_f<T>(d[j]));  // the feature gradient as FcBwdData stores it
        taken[j] = false;
      }
      const T* xn = x + n * P * C + c0;
      T* dxn = dx + n * P * C + c0;
#pragma unroll 4
      for (int64_t q = 0; q < P; ++q) {
        float xx[VEC], out[VEC];
        load_head_input<T, VEC>(xn + q * C, aff, C, c0, bn.relu, xx);
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const bool hit = !taken[j] && xx[j] == y[j];
          out[j] = hit ? d[j] : 0.f;
          taken[j] = taken[j] || hit;
        }
        store_vec<T, VEC>(dxn + q * C, out);
      }
    }
    __syncthreads();  // z and the block's reads of dlogits are done before the next group
  }
}

}  // namespace

namespace {

void head_cuda(const OpCall& c, const HeadOperands& h, const char* op) {
  const bool with_bn = h.with_bn();
  const OpAttrs& a = attrs_of(c, op);
  const TensorRef &x = *h.x, &w = *h.w, &labels = *h.labels;
  const TensorRef &p = *h.p, &dlogits = *h.dlogits, &metrics = *h.metrics, &dx = *h.dx;
  TR_CHECK(x.shape.rank == 4 && x.shape[1] * x.shape[2] > 0, op, ": x must be [N,H,W,C], got ", x.shape.str());
  struct {
    int64_t n, h, w, c;
  } d{x.shape[0], x.shape[1], x.shape[2], x.shape[3]};
  TR_CHECK(w.shape.rank == 2 && w.shape[1] == d.c, op, ": w ", w.shape.str(), " does not match x ", x.shape.str());
  const int64_t M = w.shape[0];
  TR_CHECK(small_fc(M), op, ": ", M, " classes; the fused head takes 1 to ", kSmallFcMaxOutputs);
  check_dtype(w, x.dtype, op, "w");
  check_dtype(labels, DType::I32, op, "labels");
  check_numel(labels, d.n, op, "labels");
  check_dtype(p, x.dtype, op, "p");
  check_numel(p, d.n * d.c, op, "p");
  check_dtype(dlogits, x.dtype, op, "dlogits");
  check_numel(dlogits, d.n * M, op, "dlogits");
  check_dtype(metrics, DType::F32, op, "metrics");
  check_numel(metrics, kMetricSlots, op, "metrics");
  check_dtype(dx, x.dtype, op, "dx");
  TR_CHECK(dx.shape == x.shape, op, ": dx ", dx.shape.str(), " must be ", x.shape.str());
  TR_CHECK(c.env->scalars != nullptr, op, ": needs env.scalars (loss_scale)");
  TR_CHECK(c.variant != nullptr && c.variant->global_batch > 0, op, ": needs variant.global_batch");
  const float inv_gb = float(1.0 / double(c.variant->global_batch));
  if (with_bn) {
    check_bn_train_operands(*h.sums, *h.gamma, *h.beta, *h.batch, *h.affine, x.dtype, d.c, op);
    TR_CHECK(size_t(2 * d.c) * sizeof(float) <= kMaxHeadBnSmem, op, ": ", d.c,
             " channels are more than the BatchNorm in front keeps in shared memory");
  }
  const GpuHandles& gh = handles_of(c, op);
  float2* rows = static_cast<float2*>(workspace(gh, size_t(d.n > 0 ? d.n : 1) * sizeof(float2), op));
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if (d.n > 0) {
      const int S = samples_per_block(d.n, sm_count(gh));
      const unsigned blocks = grid_stride_blocks(ceil_div(d.n, S) * kThreads, sm_count(gh), kThreads);
      HeadBn<T> bn;
      size_t smem = 0;
      if (with_bn) {
        bn = {h.sums->as<float>(),
              h.gamma->as<T>(),
              h.beta->as<T>(),
              h.batch->as<float>(),
              h.affine->as<float>(),
              bn_inv_count(c, x, d.n * d.h * d.w, op),
              a.eps,
              a.relu};
        smem = size_t(2 * d.c) * sizeof(float);
      }
      auto run = [&](auto vt) {
        constexpr int V = decltype(vt)::value;
        launch_kernel(c.env, {blocks, kThreads, smem}, classifier_head_kernel<T, V>, x.as<T>(), w.as<T>(),
                      labels.as<int32_t>(), p.as<T>(), dlogits.as<T>(), dx.as<T>(), c.env->scalars, rows, d.n,
                      d.h * d.w, d.c, M, S, a.scale, a.label_smoothing, inv_gb, bn);
      };
      const bool vec = d.c % kVec16<T> == 0 && aligned_to(x.data, 16) && aligned_to(w.data, 16) &&
                       aligned_to(p.data, 16) && aligned_to(dx.data, 16);
      if (vec) run(std::integral_constant<int, kVec16<T>>{});
      else run(std::integral_constant<int, 1>{});
    }
    launch_xent_metrics(c.env, rows, d.n, metrics.as<float>());
  });
}

}  // namespace

void classifier_head_cuda(const OpCall& c) { head_cuda(c, head_operands(OpKind::ClassifierHead, c), "ClassifierHead"); }

void bn_relu_classifier_head_cuda(const OpCall& c) {
  head_cuda(c, head_operands(OpKind::BnReluClassifierHead, c), "BnReluClassifierHead");
}

}  // namespace tr
