// Softmax cross-entropy (label smoothing) CUDA kernels. Semantics:
// framework/ops/compute/softmax_xent.h; formulas as in softmax_xent_cpu.cpp:
//   loss = lse(z) - (1-s) z[l] - (s/M) sum_j z[j],  correct = (first argmax == l)
//   dlogits = loss_scale * (softmax(z) - target) / (global_batch * rows per sample)
// loss_scale is read on the device (Note [scalars in device memory]).
// Two kernels, both deterministic: one warp per row writes (loss, correct) to the
// workspace (xent_row, softmax_xent_row_cuda.h), or one block per row for rows
// of kLongRow logits or more (Note [long softmax rows]); one block adds the
// rows in a fixed order (double) into metrics.
//   workspace: 8 * N bytes.
#include "framework/ops/compute/softmax_xent.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/kernels/softmax_xent_long_row_cuda.h"
#include "framework/ops/kernels/softmax_xent_row_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kRowThreads = 256;  // 8 rows (warps) per block
constexpr int kReduceThreads = 512;

template <typename T>
__global__ void xent_rows_kernel(const T* __restrict__ logits, const int32_t* __restrict__ labels,
                                 T* __restrict__ dlogits, const TrainScalars* __restrict__ scalars,
                                 float2* __restrict__ rows_out, int64_t N, int64_t M, float smoothing,
                                 float inv_global_batch) {
  grid_dependency_begin();
  const int lane = threadIdx.x & 31;
  const int64_t n = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;  // whole warps exit together
  const float grad_scale = dlogits == nullptr ? 0.f : scalars->loss_scale * inv_global_batch;
  xent_row(logits + n * M, labels[n], M, smoothing, grad_scale, dlogits == nullptr ? nullptr : dlogits + n * M,
           rows_out + n, lane);
}

// metrics = (sum loss, sum correct, N, 0); rows summed in a fixed order.
__global__ void xent_metrics_kernel(const float2* __restrict__ rows, int64_t N, float* __restrict__ metrics) {
  grid_dependency_begin();
  __shared__ double sl[kReduceThreads], sc[kReduceThreads];
  double l = 0.0, c = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const float2 v = rows[i];
    l += double(v.x);
    c += double(v.y);
  }
  sl[threadIdx.x] = l;
  sc[threadIdx.x] = c;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) {
      sl[threadIdx.x] += sl[threadIdx.x + s];
      sc[threadIdx.x] += sc[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    metrics[kMetricLossSum] = float(sl[0]);
    metrics[kMetricCorrect] = float(sc[0]);
    metrics[kMetricCount] = float(N);
    metrics[3] = 0.f;
  }
}

}  // namespace

void softmax_xent_cuda(const OpCall& c) {
  const char* op = "SoftmaxXent";
  const OpAttrs& a = attrs_of(c, op);
  const bool grad = a.with_grad;
  check_operands(OpKind::SoftmaxXent, c);
  const TensorRef& logits = c.in[0];
  const TensorRef& labels = c.in[1];
  const Shape& z = logits.shape;
  TR_CHECK(z.rank >= 2 && z[z.rank - 1] > 0, op, ": logits must be [N,..,M], got ", z.str());
  const int64_t M = z[z.rank - 1], N = z.numel() / M, per_sample = N / z[0];  // N rows
  check_dtype(labels, DType::I32, op, "labels");
  check_numel(labels, N, op, "labels");
  const TensorRef& metrics = c.out[grad ? 1 : 0];
  check_dtype(metrics, DType::F32, op, "metrics");
  check_numel(metrics, kMetricSlots, op, "metrics");
  float inv_gb = 0.f;
  if (grad) {
    const TensorRef& dl = c.out[0];
    check_dtype(dl, logits.dtype, op, "dlogits");
    check_numel(dl, N * M, op, "dlogits");
    TR_CHECK(c.env->scalars != nullptr, op, ": with_grad needs env.scalars (loss_scale)");
    TR_CHECK(c.variant != nullptr && c.variant->global_batch > 0, op, ": needs variant.global_batch");
    inv_gb = float(1.0 / (double(c.variant->global_batch) * double(per_sample)));
  }
  const GpuHandles& gh = handles_of(c, op);
  float2* rows = static_cast<float2*>(workspace(gh, size_t(N > 0 ? N : 1) * sizeof(float2), op));
  dispatch_float(logits.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if (N > 0 && M >= kLongRow) {
      TR_CHECK(N < (int64_t(1) << 31), op, ": ", N, " rows");
      launch_kernel(c.env, {unsigned(N), kLongRowThreads, 0}, xent_long_rows_kernel<T>, logits.as<T>(),
                    labels.as<int32_t>(), grad ? c.out[0].as<T>() : nullptr, c.env->scalars, rows, M, a.label_smoothing,
                    inv_gb);
    } else if (N > 0) {
      const unsigned blocks = unsigned(ceil_div(N, kRowThreads / 32));
      launch_kernel(c.env, {blocks, kRowThreads, 0}, xent_rows_kernel<T>, logits.as<T>(), labels.as<int32_t>(),
                    grad ? c.out[0].as<T>() : nullptr, c.env->scalars, rows, N, M, a.label_smoothing, inv_gb);
    }
    launch_xent_metrics(c.env, rows, N, metrics.as<float>());
  });
}

namespace cuda {

void launch_xent_metrics(const ExecEnv* env, const float2* rows, int64_t N, float* metrics) {
  launch_kernel(env, {1, kReduceThreads, 0}, xent_metrics_kernel, rows, N, metrics);
}

}  // namespace cuda

}  // namespace tr
