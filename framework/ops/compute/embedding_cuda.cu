// Token and position embedding CUDA kernels. Semantics: framework/ops/compute/embedding.h.
// Forward: one thread per output element. Backward: dwpe one thread per
// (t, c) summing the batch in order; dwte cleared, then one block per run of
// equal ids in `order` (the block of the run's first entry; the others exit),
// its threads over C, each summing the run in order. No float atomics, no
// workspace.
#include "framework/ops/compute/embedding.h"
#include "framework/ops/kernels/cuda_kernel_util_cuda.h"
#include "framework/ops/op_signature.h"

namespace tr {
namespace {

using namespace tr::cuda;

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;

template <typename T>
__global__ void embedding_fwd_kernel(const int32_t* __restrict__ ids, const T* __restrict__ wte,
                                     const T* __restrict__ wpe, T* __restrict__ y, int64_t n, int64_t T_, int64_t C,
                                     int64_t V) {
  grid_dependency_begin();
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t p = i / C, k = i % C, t = p % T_;
    const int64_t id = ids[p];
    y[i] = from_f<T>(id >= 0 && id < V ? to_f(wte[id * C + k]) + to_f(wpe[t * C + k]) : __int_as_float(0x7fc00000));
  }
}

// dwpe[t, k] = sum over b of dy[b, t, k] (0 for t >= T); one thread per element of dwpe.
template <typename T>
__global__ void embedding_bwd_pos_kernel(const T* __restrict__ dy, T* __restrict__ dwpe, int64_t B, int64_t T_,
                                         int64_t P, int64_t C) {
  grid_dependency_begin();
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < P * C; i += stride) {
    const int64_t t = i / C, k = i % C;
    float s = 0.f;
    for (int64_t b = 0; t < T_ && b < B; ++b) s += to_f(dy[(b * T_ + t) * C + k]);
    dwpe[i] = from_f<T>(s);
  }
}

template <typename T>
__global__ void clear_kernel(T* __restrict__ x, int64_t n) {
  grid_dependency_begin();
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] = from_f<T>(0.f);
}

// Block i sums the run of equal ids that starts at order[i], if one does. With
// a small vocabulary runs are long (bytes: a space is about one token in six,
// a run of over 1,000 in a batch of 8,192), so the run's end is found
// blockDim.x entries at a time, and each thread walks the run once for up to
// CH channels (k, k + blockDim.x, ...), LOADS entries at a time, added in the
// run's order, one after another from order[i] to the end: the CPU's bits.
// A walk is a chain of dependent rounds (the ids, then the rows they name), so
// its time is the run's length over LOADS: with C up to kOneChannelMax the
// block has a thread per channel (CH 1) and 32 entries in flight, else 256
// threads with 4 channels and 8 entries each.
constexpr int kOneChannelMax = 1024;
template <typename T, int CH, int LOADS>
__global__ void embedding_bwd_tok_kernel(const T* __restrict__ dy, const int32_t* __restrict__ ids,
                                         const int32_t* __restrict__ order, T* __restrict__ dwte, int64_t n, int64_t C,
                                         int64_t V) {
  grid_dependency_begin();
  __shared__ int run_end;
  const int64_t i = blockIdx.x;
  const int32_t id = ids[order[i]];
  if (i > 0 && ids[order[i - 1]] == id) return;  // the whole block: not a run's start
  if (threadIdx.x == 0) run_end = int(n);
  __syncthreads();
  // The first entry past i with another id. A thread that lowers run_end in a
  // later round lowers it to an entry of that round: a thread still testing
  // this round's bound reads what it would have.
  for (int64_t base = i + 1; base < n; base += blockDim.x) {
    const int64_t j = base + threadIdx.x;
    if (j < n && ids[order[j]] != id) atomicMin(&run_end, int(j));
    __syncthreads();
    if (run_end < base + int64_t(blockDim.x)) break;
  }
  const int64_t end = run_end, step = blockDim.x;
  for (int64_t k0 = threadIdx.x; k0 < C; k0 += step * CH) {
    float s[CH] = {};
    int64_t j = i;
    for (; j + LOADS <= end; j += LOADS) {
      int32_t rows[LOADS];
#pragma unroll
      for (int u = 0; u < LOADS; ++u) rows[u] = order[j + u];
      float v[LOADS][CH];
#pragma unroll
      for (int u = 0; u < LOADS; ++u)
#pragma unroll
        for (int l = 0; l < CH; ++l) v[u][l] = k0 + l * step < C ? to_f(dy[int64_t(rows[u]) * C + k0 + l * step]) : 0.f;
#pragma unroll
      for (int u = 0; u < LOADS; ++u)
#pragma unroll
        for (int l = 0; l < CH; ++l) s[l] += v[u][l];
    }
    for (; j < end; ++j)  // the run's last entries, one at a time
#pragma unroll
      for (int l = 0; l < CH; ++l)
        if (k0 + l * step < C) s[l] += to_f(dy[int64_t(order[j]) * C + k0 + l * step]);
#pragma unroll
    for (int l = 0; l < CH; ++l)
      if (k0 + l * step < C && id >= 0 && id < V) dwte[int64_t(id) * C + k0 + l * step] = from_f<T>(s[l]);
  }
}

}  // namespace

void embedding_fwd_cuda(const OpCall& c) {
  const char* op = "EmbeddingFwd";
  check_operands(OpKind::EmbeddingFwd, c);
  const TensorRef &ids = c.in[0], &wte = c.in[1], &wpe = c.in[2], &y = c.out[0];
  const int64_t B = ids.shape[0], T_ = ids.shape[1], V = wte.shape[0], C = wte.shape[1];
  TR_CHECK(ids.dtype == DType::I32 && wpe.dtype == wte.dtype && y.dtype == wte.dtype && y.shape.numel() == B * T_ * C &&
               wpe.shape[1] == C && wpe.shape[0] >= T_,
           op, ": operands ", ids.shape.str(), " ", wte.shape.str(), " ", wpe.shape.str(), " -> ", y.shape.str());
  const int64_t n = B * T_ * C;
  if (n == 0) return;
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(wte.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const unsigned grid = grid_stride_blocks(n, sm_count(gh), kThreads, kBlocksPerSm);
    launch_kernel(c.env, {dim3(grid), kThreads, 0}, embedding_fwd_kernel<T>, ids.as<int32_t>(), wte.as<T>(),
                  wpe.as<T>(), y.as<T>(), n, T_, C, V);
  });
}

void embedding_bwd_cuda(const OpCall& c) {
  const char* op = "EmbeddingBwd";
  check_operands(OpKind::EmbeddingBwd, c);
  const TensorRef &dy = c.in[0], &ids = c.in[1], &order = c.in[2], &dwte = c.out[0], &dwpe = c.out[1];
  const int64_t B = ids.shape[0], T_ = ids.shape[1], V = dwte.shape[0], C = dwte.shape[1], P = dwpe.shape[0];
  TR_CHECK(ids.dtype == DType::I32 && order.dtype == DType::I32 && order.shape.numel() == B * T_ &&
               dy.shape.numel() == B * T_ * C && dwte.dtype == dy.dtype && dwpe.dtype == dy.dtype &&
               dwpe.shape[1] == C && P >= T_,
           op, ": operands ", dy.shape.str(), " ", ids.shape.str(), " ", order.shape.str(), " -> ", dwte.shape.str(),
           " ", dwpe.shape.str());
  const int64_t n = B * T_;
  if (n == 0) return;
  TR_CHECK(n < (int64_t(1) << 31), op, ": ", n, " tokens (a block each)");
  const GpuHandles& gh = handles_of(c, op);
  dispatch_float(dy.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const int sms = sm_count(gh);
    launch_kernel(c.env, {dim3(grid_stride_blocks(P * C, sms, kThreads, kBlocksPerSm)), kThreads, 0},
                  embedding_bwd_pos_kernel<T>, dy.as<T>(), dwpe.as<T>(), B, T_, P, C);
    launch_kernel(c.env, {dim3(grid_stride_blocks(V * C, sms, kThreads, kBlocksPerSm)), kThreads, 0}, clear_kernel<T>,
                  dwte.as<T>(), V * C);
    if (C <= kOneChannelMax)
      launch_kernel(c.env, {dim3(unsigned(n)), unsigned(ceil_div(C, 32) * 32), 0}, embedding_bwd_tok_kernel<T, 1, 32>,
                    dy.as<T>(), ids.as<int32_t>(), order.as<int32_t>(), dwte.as<T>(), n, C, V);
    else
      launch_kernel(c.env, {dim3(unsigned(n)), kThreads, 0}, embedding_bwd_tok_kernel<T, 4, 8>, dy.as<T>(),
                    ids.as<int32_t>(), order.as<int32_t>(), dwte.as<T>(), n, C, V);
  });
}

}  // namespace tr
