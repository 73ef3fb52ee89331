#pragma once
// A sequence model's input, made from the staging windows of T0 + 1 tokens:
//   TokenPrep: tokens i32[Bmax, T0+1] -> ids i32[N,T], labels i32[N,T], order i32[N*T]
//     N = variant.batch, T = variant.height (the variant's sequence length, T <= T0):
//     ids[n,t] = tokens[n,t], labels[n,t] = tokens[n,t+1] (the next token), and
//     order = the positions sorted by (id, position), as embedding_order makes
//     it for EmbeddingBwd (embedding.h), on the device inside the input graph.
// The CPU sorts with embedding_order. CUDA copies in one kernel and sorts with
// CUB's stable radix sort (keys: the ids, values: the positions), whose result
// is that same permutation: the same bits on both backends.
//   workspace (CUDA): 2 * round_up(4 * N*T, 256) bytes + CUB's temporary storage.
#include "framework/ops/shape_ctx.h"

namespace tr {

void token_prep_shapes(const ShapeCtx& c, Shape* out, int n_out);
void token_prep_cpu(const OpCall& c);
void token_prep_cuda(const OpCall& c);

}  // namespace tr
