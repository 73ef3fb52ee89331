#pragma once
// The window geometry of max and average pooling, compiled into the shape rules,
// the CPU references and the CUDA kernels, so every backend visits the same
// input positions in the same order.
//
// Note [pool window order]
//   Along each axis, output o's window covers the input rows
//     o*stride - pad + [0, k)
//   and rows outside [0, H) are padding, which is skipped (max pooling: padding
//   never wins; average pooling has none). Forward scans a window row-major
//   (h, then w). Backward is a GATHER: each input position visits the outputs
//   whose windows hold it, oh ascending then ow ascending (covering() gives the
//   range per axis), and adds their contributions in f32 (f64 for F64) in that
//   order, rounding once to the storage type. No atomics and one fixed order:
//   two runs agree bit for bit and so do the CPU and CUDA implementations.
#include <cstdint>
#include <string>

#include "framework/core/error.h"
#include "framework/core/shape.h"
#include "framework/ops/op_call.h"

#if defined(__CUDACC__)
#define TR_POOL_HD __host__ __device__ __forceinline__
#else
#define TR_POOL_HD inline
#endif

namespace tr {

struct PoolWindow {
  int64_t k = 1;  // window side
  int64_t stride = 1;
  int64_t pad = 0;  // rows/cols of padding before the first and after the last input

  // 2x2 windows of stride 2 without padding (the cnn's and VGG's): the windows
  // that have fast kernels and fused forms (the BatchNorm statistics, BnReluPool).
  TR_POOL_HD bool is_2x2() const { return k == 2 && stride == 2 && pad == 0; }

  // Outputs along an axis of n inputs: floor((n + 2*pad - k) / stride) + 1; 0 when the window does not fit.
  TR_POOL_HD int64_t out_len(int64_t n) const { return n + 2 * pad < k ? 0 : (n + 2 * pad - k) / stride + 1; }

  // First input row of output o's window (negative: it starts in the padding).
  TR_POOL_HD int64_t start(int64_t o) const { return o * stride - pad; }

  // The rows [in_begin(o), in_end(o, n)) of output o's window that are inputs (padding cut off).
  TR_POOL_HD int64_t in_begin(int64_t o) const { return start(o) < 0 ? 0 : start(o); }
  TR_POOL_HD int64_t in_end(int64_t o, int64_t n) const { return start(o) + k < n ? start(o) + k : n; }

  // The outputs (of n_out) whose windows hold input row i: [*lo, *hi], empty when *lo > *hi
  // (rows that a stride larger than the window skips, or rows past the last window).
  TR_POOL_HD void covering(int64_t i, int64_t n_out, int64_t* lo, int64_t* hi) const {
    const int64_t first = i + pad - k + 1;  // o*stride >= first
    *lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    const int64_t last = (i + pad) / stride;  // o*stride <= i + pad (i + pad >= 0)
    *hi = last < n_out - 1 ? last : n_out - 1;
  }
};

// The window of attrs (kernel, stride, pad) checked against x[N,H,W,C]; throws
// UserError naming op. pad_allowed = false: average pooling, pad must be 0.
// Max pooling allows 0 <= pad < kernel (looser than PyTorch's pad <= kernel/2):
// every window then holds at least one input position (the first window ends at
// row k-1-pad >= 0, the last starts at row <= H+pad-k < H), so no output is the
// max of padding alone.
inline PoolWindow checked_pool_window(const OpAttrs& a, const Shape& x, const char* op, bool pad_allowed) {
  TR_USER_CHECK(x.rank == 4, op, ": x must be rank 4 [N,H,W,C], got ", x.str());
  for (int i = 0; i < 4; ++i) TR_USER_CHECK(x[i] > 0, op, ": x has a non-positive dim: ", x.str());
  TR_USER_CHECK(a.kernel >= 1, op, ": kernel must be >= 1, got ", a.kernel);
  TR_USER_CHECK(a.stride >= 1, op, ": stride must be >= 1, got ", a.stride);
  if (pad_allowed) {
    TR_USER_CHECK(a.pad >= 0 && a.pad < a.kernel, op, ": pad must be in [0, kernel) = [0, ", a.kernel, "), got ",
                  a.pad);
  } else {
    TR_USER_CHECK(a.pad == 0, op, ": pad must be 0 (this pooling has no padding), got ", a.pad);
  }
  const PoolWindow w{a.kernel, a.stride, a.pad};
  TR_USER_CHECK(w.out_len(x[1]) >= 1 && w.out_len(x[2]) >= 1, op, ": x ", x.str(),
                w.pad > 0 ? cat(" padded by ", w.pad) : std::string(), " is smaller than the ", w.k, "x", w.k,
                " window");
  return w;
}

// y[N,Ho,Wo,C] for x[N,H,W,C] (x and w already checked).
inline Shape pooled_shape(const Shape& x, const PoolWindow& w) {
  return Shape{x[0], w.out_len(x[1]), w.out_len(x[2]), x[3]};
}

}  // namespace tr
