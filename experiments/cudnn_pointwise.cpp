#ifdef TR_HAVE_CUDA
#include "experiments/cudnn_pointwise.h"

namespace tr::cudnn_graph {

Desc pointwise_mode(cudnnPointwiseMode_t mode) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  Desc d(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  d.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32)
      .finalize();
  return d;
}

Desc pointwise_op(const Desc& mode, const Desc& x, const Desc* b, const Desc& y) {
  Desc d(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  d.desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, mode).desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) d.desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  d.desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y).finalize();
  return d;
}

}  // namespace tr::cudnn_graph
#endif  // TR_HAVE_CUDA
