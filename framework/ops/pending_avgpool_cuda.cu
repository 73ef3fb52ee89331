// PLACEHOLDER until the average-pooling trio lands (framework/ops/avgpool.h): refuses every call.
#include "framework/core/error.h"
#include "framework/ops/avgpool.h"

namespace tr {
#define TR_PENDING(f) void f(const OpCall&) { TR_CHECK(false, #f ": not implemented yet"); }
TR_PENDING(avgpool_fwd_cuda)
TR_PENDING(avgpool_bwd_cuda)
TR_PENDING(global_avgpool_fwd_cuda)
TR_PENDING(global_avgpool_bwd_cuda)
#undef TR_PENDING
}  // namespace tr
