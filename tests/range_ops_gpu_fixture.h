#pragma once
// Shared by the GPU RANGE op tests (range_ops_gpu_test.cpp,
// range_ops_optim_gpu_test.cpp): device buffers, operands over host or device
// memory, bitwise checks and the RangeOpsGpu fixture.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "framework/core/bf16.h"
#include "framework/core/half.h"
#include "framework/ops/gpu_handles.h"
#include "framework/ops/range/amp_ops.h"
#include "framework/ops/range/optimizers.h"
#include "framework/ops/range/region_ops.h"
#include "tests/gpu_test_util.h"

namespace tr::gpu_test {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call
#define CUDA_EXPECT(call) EXPECT_EQ((call), cudaSuccess) << #call

// A device copy of a host vector.
template <class T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DevBuf(const std::vector<T>& h) : n(h.size()) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(1, n) * sizeof(T)), cudaSuccess);
    upload(h);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() { cudaFree(p); }
  void upload(const std::vector<T>& h) {
    EXPECT_EQ(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  // cudaMemset runs on the legacy stream, which the tests' non-blocking stream
  // does not wait for: without the synchronisation a large buffer's poison
  // could land after the kernel under test has written it.
  void poison() {
    EXPECT_EQ(cudaMemset(p, 0xff, n * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
};

template <class T>
DType dtype_of();
template <>
inline DType dtype_of<float>() {
  return DType::F32;
}
template <>
inline DType dtype_of<half_t>() {
  return DType::F16;
}
template <>
inline DType dtype_of<bf16_t>() {
  return DType::BF16;
}
template <>
inline DType dtype_of<double>() {
  return DType::F64;
}

template <class T>
RangeOperand operand(T* data, size_t n, const std::vector<Segment>* segs = nullptr) {
  RangeOperand o;
  o.data = data;
  o.dtype = dtype_of<T>();
  o.elems = int64_t(n);
  if (segs) {
    o.segs = segs->data();
    o.n_segs = int(segs->size());
  }
  return o;
}
template <class T>
RangeOperand operand(std::vector<T>& h, const std::vector<Segment>* segs = nullptr) {
  return operand(h.data(), h.size(), segs);
}
template <class T>
RangeOperand operand(DevBuf<T>& d, const std::vector<Segment>* segs = nullptr) {
  return operand(d.p, d.n, segs);
}

inline bool bitwise_equal(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

// An element's bytes in hex, most significant first (little-endian host).
template <class T>
inline std::string hex_of(const T& v) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(&v);
  std::string s = "0x";
  const char* digits = "0123456789abcdef";
  for (size_t k = sizeof(T); k-- > 0;) s += {digits[b[k] >> 4], digits[b[k] & 15]};
  return s;
}

template <class T>
inline void expect_bitwise(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  size_t first = got.size(), count = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!bitwise_equal(&got[i], &want[i], sizeof(T))) {
      if (count++ == 0) first = i;
    }
  if (count > 0)
    ADD_FAILURE() << what << ": " << count << " of " << got.size() << " elements differ; the first at " << first << ": "
                  << hex_of(got[first]) << ", expected " << hex_of(want[first]);
}

inline void expect_scalars(const TrainScalars& got, const TrainScalars& want, const char* what) {
  EXPECT_EQ(got.lr, want.lr) << what;
  EXPECT_EQ(got.loss_scale, want.loss_scale) << what;
  EXPECT_EQ(got.step, want.step) << what;
  EXPECT_EQ(got.found_inf, want.found_inf) << what;
  EXPECT_EQ(got.good_steps, want.good_steps) << what;
  EXPECT_EQ(got.skipped_steps, want.skipped_steps) << what;
  EXPECT_EQ(got.schedule_len, want.schedule_len) << what;
  EXPECT_EQ(got.batches, want.batches) << what;
  EXPECT_EQ(got.pending_inf, want.pending_inf) << what;
  EXPECT_TRUE(bitwise_equal(&got.grad_unscale, &want.grad_unscale, 4)) << what;
}

// Random tensors at 128-element aligned offsets with zero padding between them;
// sizes cover vector tails (1, 3, 10, 127, 129 …) and, with `big`, a tensor many
// blocks share.
struct Layout {
  std::vector<Segment> segs;
  int64_t elems = 0;
  std::vector<uint8_t> in_seg;

  Layout(std::mt19937& rng, int n, bool big) {
    const int64_t sizes[] = {1, 3, 4, 10, 64, 127, 128, 129, 1000, 4097, 12345};
    std::uniform_int_distribution<int> pick(0, int(std::size(sizes)) - 1), coin(0, 1);
    int64_t end = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t off = (end + kRegionAlignElems - 1) / kRegionAlignElems * kRegionAlignElems;
      const int64_t sz = (big && i == n / 2) ? 300001 : sizes[pick(rng)];
      segs.push_back({off, sz, coin(rng) == 1});
      end = off + sz;
    }
    elems = (end + kRegionAlignElems - 1) / kRegionAlignElems * kRegionAlignElems + kRegionAlignElems;
    in_seg.assign(elems, 0);
    for (const Segment& s : segs) std::fill(in_seg.begin() + s.offset, in_seg.begin() + s.offset + s.elems, 1);
  }
  std::vector<float> random(std::mt19937& rng, float lo, float hi) const {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(elems, 0.f);
    for (int64_t i = 0; i < elems; ++i)
      if (in_seg[i]) v[i] = u(rng);
    return v;
  }
};

class RangeOpsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&d_scalars_, sizeof(TrainScalars)));
    env_.scalars = d_scalars_;
    env_.stream = stream_;
    gh_.sm_count = query_sm_count(0);
    env_.gpu = &gh_;
    host_env_.scalars = &host_scalars_;
  }
  void TearDown() override {
    if (d_scalars_) cudaFree(d_scalars_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Same scalars on both sides.
  void set_scalars(const TrainScalars& s) {
    host_scalars_ = s;
    CUDA_EXPECT(cudaMemcpy(d_scalars_, &s, sizeof(s), cudaMemcpyHostToDevice));
  }
  TrainScalars gpu_scalars() {
    TrainScalars s;
    CUDA_EXPECT(cudaMemcpy(&s, d_scalars_, sizeof(s), cudaMemcpyDeviceToHost));
    return s;
  }
  void run_gpu(RangeFn fn, std::vector<RangeOperand> ops, const RangeAttrs& a = {}) {
    RangeCall c{ops.data(), int(ops.size()), &a, &env_};
    fn(c);
    CUDA_EXPECT(cudaStreamSynchronize(stream_));
    CUDA_EXPECT(cudaGetLastError());
  }
  void run_cpu(RangeFn fn, std::vector<RangeOperand> ops, const RangeAttrs& a = {}) {
    RangeCall c{ops.data(), int(ops.size()), &a, &host_env_};
    fn(c);
  }

  cudaStream_t stream_ = nullptr;
  TrainScalars* d_scalars_ = nullptr;
  GpuHandles gh_;  // only the SM count: range ops use no library
  ExecEnv env_;
  TrainScalars host_scalars_;
  ExecEnv host_env_;
};

// ---------------------------------------------------------------- elementwise

// Optimizer hyper-parameters every optimizer test uses.
inline RangeAttrs opt_attrs() {
  RangeAttrs a;
  a.momentum = 0.9f;
  a.weight_decay = 0.01f;
  a.beta1 = 0.9f;
  a.beta2 = 0.999f;
  a.adam_eps = 1e-8f;
  a.trust_coef = 0.02f;
  return a;
}

}  // namespace tr::gpu_test
