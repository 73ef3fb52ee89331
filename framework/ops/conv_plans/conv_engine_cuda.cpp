// Engine plans for cuDNN convolutions: Note [engine plans for convolutions]
// in conv_engine_cuda.h.
#include "framework/ops/conv_plans/conv_engine_cuda.h"

#include <utility>

namespace tr {

namespace {

enum Uid : int64_t { kX = 1, kW, kY };

// The descriptor type and attribute names of the convolution operation in
// each direction: x (dx), w (dw), y (dy), the convolution, alpha, beta.
struct OpAttrNames {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

OpAttrNames op_attr_names(ConvDir d) {
  switch (d) {
    case ConvDir::Fwd:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    case ConvDir::BwdData:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    case ConvDir::BwdFilter: break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
}

}  // namespace

cudnn_graph::Desc conv_operation_graph(cudnnHandle_t h, const ConvKey& key, std::vector<cudnn_graph::Desc>& keep) {
  using namespace cudnn_graph;
  const cudnnDataType_t dt = data_type(key.dtype);
  Desc x = tensor(kX, key.n, key.c, key.h, key.w, dt, false);
  Desc w = tensor(kW, key.k, key.c, key.r, key.r, dt, false);
  Desc y = tensor(kY, key.n, key.k, key.ho(), key.wo(), dt, false);
  Desc conv = convolution(key.pad, key.stride);
  const OpAttrNames a = op_attr_names(key.dir);
  const float alpha = 1.f, beta = 0.f;
  Desc op(a.type);
  op.desc(a.x, x).desc(a.w, w).desc(a.y, y).desc(a.conv, conv);
  op.set(a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha).set(a.beta, CUDNN_TYPE_FLOAT, 1, &beta).finalize();
  const cudnnBackendDescriptor_t ops[1] = {op.get()};
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, ops)
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
      .finalize();
  for (Desc* d : {&x, &w, &y, &conv, &op}) keep.push_back(std::move(*d));
  return graph;
}

std::vector<std::shared_ptr<const ConvEnginePlan>> conv_engine_plans(cudnnHandle_t h, const ConvKey& key,
                                                                     bool deterministic, size_t workspace_limit,
                                                                     int most) {
  std::vector<std::shared_ptr<const ConvEnginePlan>> plans;
  std::vector<cudnn_graph::Desc> keep;
  cudnn_graph::Desc graph = conv_operation_graph(h, key, keep);
  // The graph last, after what it refers to; every plan of the key holds the list.
  auto shared_keep = std::make_shared<std::vector<cudnn_graph::Desc>>(std::move(keep));
  shared_keep->push_back(std::move(graph));
  const cudnn_graph::Desc& g = shared_keep->back();
  for (cudnn_graph::Desc& cfg : cudnn_graph::engine_configs(g, CUDNN_HEUR_MODE_A, 4 * int64_t(most))) {
    if (int(plans.size()) >= most) break;
    const cudnn_graph::EngineInfo info = cudnn_graph::engine_info(cfg);
    if ((deterministic && !info.deterministic) || info.runtime_compiled) continue;
    if (key.dtype == DType::F32 && info.tensor_cores) continue;
    auto p = std::make_shared<ConvEnginePlan>();
    p->plan.desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg)
        .set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    if (!p->plan.try_finalize()) continue;
    int64_t n = 0, ws = 0;
    cudnn_graph::check(
        cudnnBackendGetAttribute(p->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws),
        "execution plan workspace");
    if (ws < 0 || size_t(ws) > workspace_limit) continue;
    p->engine = info.index;
    p->candidate = int(plans.size());
    p->workspace_bytes = size_t(ws);
    p->config.push_back(std::move(cfg));
    p->graph = shared_keep;
    plans.push_back(std::move(p));
  }
  return plans;
}

cudnnStatus_t run_conv_execution_plan(cudnnHandle_t h, const cudnn_graph::Desc& plan, void* x, void* w, void* y,
                                      void* workspace) {
  void* ptrs[3] = {x, w, y};
  const int64_t uids[3] = {kX, kW, kY};
  cudnn_graph::Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs)
      .set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids)
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace)
      .finalize();
  return cudnnBackendExecute(h, plan.get(), pack.get());
}

}  // namespace tr
