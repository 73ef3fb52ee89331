#pragma once
// Note [augmentation]
// Training images are augmented inside InputPrep, in the captured
// FIRST_LAYER_FWD graphs, with no host work per step. Every random decision is
// a pure function of (seed, batch, sample):
//   seed    the run's seed (an attribute, fixed at build time);
//   batch   TrainScalars::batches, the training batches run so far (skipped
//           ones too), read from device memory at replay time. It names
//           (epoch, step) one to one, and AdvanceStep moves it on;
//   sample  the sample's place in the global batch: rank * N + n, so N ranks
//           x B/N make the decisions 1 rank x B makes.
// A Philox4x32-10 block of those words gives four 32-bit draws. The CPU and
// CUDA kernels call the same functions below, so every mode and backend makes
// the same integer decisions and eager, partial and full capture stay
// bit-identical.
//
// The augmented image, for an output pixel (i, j) of an h x w image:
//   flip (p = 1/2):      read column w-1-j' instead of j'        (first)
//   translate by T:      (i', j') = (i - dy, j - dx), dy, dx uniform in [-T, T];
//                        outside the image reads raw pixel 0, as a zero-padded
//                        random crop does                        (then)
//   cutout of side S:    rows [cy - S/2, cy - S/2 + S) x the same columns,
//                        (cy, cx) uniform over the image, clipped; the value
//                        is 0 after normalisation (the data mean) (last)
// Flip-TTA in the validation graphs (attrs.tta_flip) writes each image and
// then, as samples N..2N-1, its mirror.
#include <cstdint>

#include "framework/core/philox.h"
#include "framework/ops/op_call.h"

#if defined(__CUDACC__)
#define TR_AUG_HD __host__ __device__ __forceinline__
#else
#define TR_AUG_HD inline
#endif

namespace tr {

// InputPrep's augmentation attributes, passed by value to the kernels.
struct AugmentParams {
  uint64_t seed = 0;
  int32_t translate = 0;  // T: shifts in [-T, T]; 0 off
  int32_t cutout = 0;     // S: square side; 0 off
  bool flip = false;
  bool any() const { return flip || translate > 0 || cutout > 0; }
};

inline AugmentParams augment_params(const OpAttrs& a) {
  return AugmentParams{a.aug_seed, a.aug_translate, a.aug_cutout, a.aug_flip};
}

// One sample's decisions.
struct AugmentChoice {
  bool flip = false;
  int32_t dy = 0, dx = 0;          // translation
  int32_t cut_y0 = 0, cut_x0 = 0;  // cutout's top-left corner (may lie outside the image)
};

// The draws: Philox4x32-10 of counter (batch, sample, 'AUG1', 0) under the
// seed's two words. Word 0 flips (its top bit), 1 and 2 translate, 3 places the
// cutout (16 bits per axis).
TR_AUG_HD AugmentChoice augment_choice(const AugmentParams& p, uint32_t batch, uint32_t sample, int32_t h, int32_t w) {
  const Philox4 r = philox4x32_10(Philox4{{batch, sample, 0x41554731u, 0u}}, uint32_t(p.seed), uint32_t(p.seed >> 32));
  AugmentChoice c;
  c.flip = p.flip && (r.v[0] >> 31) != 0;
  if (p.translate > 0) {
    const uint32_t span = uint32_t(2 * p.translate + 1);
    c.dy = int32_t(r.v[1] % span) - p.translate;
    c.dx = int32_t(r.v[2] % span) - p.translate;
  }
  if (p.cutout > 0) {
    c.cut_y0 = int32_t((r.v[3] & 0xffffu) % uint32_t(h)) - p.cutout / 2;
    c.cut_x0 = int32_t((r.v[3] >> 16) % uint32_t(w)) - p.cutout / 2;
  }
  return c;
}

// Where output pixel (i, j) reads in the un-augmented h x w image: sets (si, sj)
// and returns false when it falls outside (the padding).
TR_AUG_HD bool augment_source(const AugmentChoice& c, int64_t i, int64_t j, int64_t h, int64_t w, int64_t& si,
                              int64_t& sj) {
  si = i - c.dy;
  sj = j - c.dx;
  if (c.flip) sj = w - 1 - sj;
  return si >= 0 && si < h && sj >= 0 && sj < w;
}

// True when output pixel (i, j) lies in the cutout square.
TR_AUG_HD bool augment_cut(const AugmentChoice& c, int32_t side, int64_t i, int64_t j) {
  return side > 0 && i >= c.cut_y0 && i < c.cut_y0 + side && j >= c.cut_x0 && j < c.cut_x0 + side;
}

}  // namespace tr
