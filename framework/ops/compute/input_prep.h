#pragma once
// InputPrep: u8 images -> normalised compute dtype at the variant's resolution
// (nearest-neighbour downsampling when h < H0), and labels copied to the shared
// labels tensor so every graph after the A/B first layer is single.
//   in: images u8[Bmax,H0,W0,C], labels_src i32[Bmax]  out: x T[N',h,w,C], labels i32[N]
//   N, h, w come from the variant; N' = 2N with attrs.tta_flip (the images,
//   then their mirrors), else N.
// Training graphs augment here (flip, translate, cutout): Note [augmentation]
// in framework/ops/kernels/augment.h. The augmented image is built at h x w, after the
// downsampling, so a low-resolution epoch shifts by whole low-res pixels.
#include "framework/ops/shape_ctx.h"

namespace tr {

void input_prep_shapes(const ShapeCtx& c, Shape* out, int n_out);
void input_prep_cpu(const OpCall& c);
void input_prep_cuda(const OpCall& c);

}  // namespace tr
