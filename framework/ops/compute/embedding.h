#pragma once
// Token and position embedding, as GPT-2 adds them:
//   EmbeddingFwd: ids i32[B,T], wte T[V,C], wpe T[P,C] -> y T[B,T,C],
//                 y[b,t] = wte[ids[b,t]] + wpe[t], rounded once (T <= P: the context)
//   EmbeddingBwd: dy T[B,T,C], ids i32[B,T], order i32[B*T], wte, wpe (shapes only)
//                 -> dwte T[V,C], dwpe T[P,C]
//                 dwte[v] = sum of dy[p] over the positions p with ids[p] = v, in
//                 ascending p (0 for a token not in the batch);
//                 dwpe[t] = sum over b of dy[b,t] in ascending b (0 for t >= T).
// The backward is a scatter-add made deterministic without atomics: `order`
// lists the positions sorted by (id, position) (embedding_order), made on the
// host while it stages the batch, as llm.c buckets its encoder's gradient on
// the host. Each run of one id is summed by one block in that order, so both
// backends add the same f32 values in the same order and agree bit for bit.
// An id outside [0, V) is refused by the CPU; the CUDA kernels write NaN rows
// for it (and the step's finite check reports them): the token readers refuse
// such ids before they reach a batch.
#include <cstdint>

#include "framework/ops/shape_ctx.h"

namespace tr {

// order[0..n) = the positions 0..n-1 sorted by (ids[p], p).
void embedding_order(const int32_t* ids, int64_t n, int32_t* order);

void embedding_fwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void embedding_bwd_shapes(const ShapeCtx& c, Shape* out, int n_out);
void embedding_fwd_cpu(const OpCall& c);
void embedding_fwd_cuda(const OpCall& c);
void embedding_bwd_cpu(const OpCall& c);
void embedding_bwd_cuda(const OpCall& c);

}  // namespace tr
