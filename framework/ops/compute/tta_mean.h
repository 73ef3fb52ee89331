#pragma once
// TtaMean: the flip-TTA join. The validation forward runs on 2N images (the N
// inputs, then their mirrors: InputPrep with attrs.tta_flip), and the logits of
// each pair are averaged:
//   in: x T[2N,M]   out: y T[N,M] = (x[n,k] + x[N+n,k]) / 2
// Summed in f32 (f64 for F64) and rounded once to T, so the CPU and CUDA agree
// bit for bit; a symmetric image's mean equals its plain logits exactly.
#include "framework/ops/shape_ctx.h"

namespace tr {

void tta_mean_shapes(const ShapeCtx& c, Shape* out, int n_out);
void tta_mean_cpu(const OpCall& c);
void tta_mean_cuda(const OpCall& c);

}  // namespace tr
