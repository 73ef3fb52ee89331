// PLACEHOLDER until the average-pooling trio lands (framework/ops/avgpool.h): refuses every call.
#include "framework/core/error.h"
#include "framework/ops/avgpool.h"

namespace tr {
#define TR_PENDING(f, ...) void f(__VA_ARGS__) { TR_CHECK(false, #f ": not implemented yet"); }
TR_PENDING(avgpool_fwd_shapes, const ShapeCtx&, Shape*, int)
TR_PENDING(avgpool_bwd_shapes, const ShapeCtx&, Shape*, int)
TR_PENDING(global_avgpool_fwd_shapes, const ShapeCtx&, Shape*, int)
TR_PENDING(global_avgpool_bwd_shapes, const ShapeCtx&, Shape*, int)
TR_PENDING(avgpool_fwd_cpu, const OpCall&)
TR_PENDING(avgpool_bwd_cpu, const OpCall&)
TR_PENDING(global_avgpool_fwd_cpu, const OpCall&)
TR_PENDING(global_avgpool_bwd_cpu, const OpCall&)
#undef TR_PENDING
}  // namespace tr
