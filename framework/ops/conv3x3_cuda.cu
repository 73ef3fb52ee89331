// 3x3 convolutions on cuDNN (legacy convolution API, NHWC tensors, KRSC
// filters, pad 1, stride 1, cross-correlation, fp32 compute). Semantics:
// framework/ops/conv3x3.h. Outputs are overwritten (beta = 0).
// The algorithm and descriptors come from GpuHandles::conv_plans, prepared
// before any capture (Note [conv plans before capture]); a launch only looks
// them up, so it is capture-safe and uses the same algorithm eagerly and in graphs.
//   workspace: the plan's workspace_bytes (ConvPlanCache::max_workspace_bytes()).
#include "framework/ops/conv3x3.h"
#include "framework/ops/conv_plan_cache_cuda.h"
#include "framework/ops/cuda_kernel_util_cuda.h"

namespace tr {
namespace {

using namespace tr::cuda;

struct ConvLaunch {
  cudnnHandle_t h;
  const ConvPlan* plan;
  void* ws;
};

// Checks the call against the plan's key and binds the handle to the op's stream.
ConvLaunch begin(const OpCall& c, OpKind kind, const char* op) {
  check_arity(c, 2, 1, op);
  const GpuHandles& gh = handles_of(c, op);
  TR_CHECK(gh.cudnn != nullptr, op, ": no cuDNN handle");
  TR_CHECK(gh.conv_plans != nullptr, op, ": no ConvPlanCache in GpuHandles");
  const TensorRef& a = c.in[0];
  const TensorRef& b = c.in[1];
  const TensorRef& out = c.out[0];
  TR_CHECK(a.dtype == DType::F32 || a.dtype == DType::F16, op, ": dtype ", dtype_name(a.dtype),
           " is not supported on CUDA (f32 or f16 only)");
  check_dtype(b, a.dtype, op, "second input");
  check_dtype(out, a.dtype, op, "output");
  const ConvKey key = conv_key(kind, a.shape, b.shape, a.dtype);
  const Shape want = kind == OpKind::Conv3x3Fwd       ? Shape{key.n, key.h, key.w, key.k}
                     : kind == OpKind::Conv3x3BwdData ? Shape{key.n, key.h, key.w, key.c}
                                                      : Shape{key.k, 3, 3, key.c};
  TR_CHECK(out.shape.numel() == want.numel(), op, ": output is ", out.shape.str(), ", expected ", want.str());
  ConvLaunch l;
  l.h = static_cast<cudnnHandle_t>(gh.cudnn);
  l.plan = &gh.conv_plans->lookup(key);
  l.ws = workspace(gh, l.plan->workspace_bytes, op);
  TR_GPU_CHECK(cudnnSetStream(l.h, stream_of(c)));
  return l;
}

}  // namespace

// x[N,H,W,C], w[K,3,3,C] -> y[N,H,W,K]
void conv3x3_fwd_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::Conv3x3Fwd, "Conv3x3Fwd");
  const float alpha = 1.f, beta = 0.f;
  TR_GPU_CHECK(cudnnConvolutionForward(l.h, &alpha, l.plan->x.get(), c.in[0].data, l.plan->w.get(), c.in[1].data,
                                       l.plan->conv.get(), cudnnConvolutionFwdAlgo_t(l.plan->algo), l.ws,
                                       l.plan->workspace_bytes, &beta, l.plan->y.get(), c.out[0].data));
}

// dy[N,H,W,K], w[K,3,3,C] -> dx[N,H,W,C]
void conv3x3_bwd_data_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::Conv3x3BwdData, "Conv3x3BwdData");
  const float alpha = 1.f, beta = 0.f;
  TR_GPU_CHECK(cudnnConvolutionBackwardData(l.h, &alpha, l.plan->w.get(), c.in[1].data, l.plan->y.get(),
                                            c.in[0].data, l.plan->conv.get(),
                                            cudnnConvolutionBwdDataAlgo_t(l.plan->algo), l.ws,
                                            l.plan->workspace_bytes, &beta, l.plan->x.get(), c.out[0].data));
}

// x[N,H,W,C], dy[N,H,W,K] -> dw[K,3,3,C]
void conv3x3_bwd_filter_cuda(const OpCall& c) {
  const ConvLaunch l = begin(c, OpKind::Conv3x3BwdFilter, "Conv3x3BwdFilter");
  const float alpha = 1.f, beta = 0.f;
  TR_GPU_CHECK(cudnnConvolutionBackwardFilter(l.h, &alpha, l.plan->x.get(), c.in[0].data, l.plan->y.get(),
                                              c.in[1].data, l.plan->conv.get(),
                                              cudnnConvolutionBwdFilterAlgo_t(l.plan->algo), l.ws,
                                              l.plan->workspace_bytes, &beta, l.plan->w.get(), c.out[0].data));
}

}  // namespace tr
