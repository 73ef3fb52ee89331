#pragma once
// Note [gradient buckets]
// With several ranks the deep gradients (Deep and Fc groups) are all-reduced
// in buckets of about TrainConfig::bucket_bytes, in backward order: the
// backward produces the gradients of the highest layout slots first (the
// classifier's), so bucket 0 holds the highest slots. Every bucket but the
// last is issued inside DEEP_FWD_BWD, on the UPDATE stream, as soon as the
// layer owning its lowest slot has run its backward, so it overlaps the rest
// of the backward; the last bucket completes with the backward and stays in
// DEEP_COMM (with its AMP cast in CAST_DEEP_GRAD_FP16_TO_FP32). One
// collective still runs at a time: Note [one collective at a time].
// Param slots follow the layer list and the layout orders them by group, so
// a run of slots within the Deep and Fc groups is one contiguous range of
// every param-layout region (the builder keeps First layers first and Fc
// layers last).
#include <cstdint>
#include <vector>

#include "framework/graph/computation_graph.h"

namespace tr {

struct GradBucket {
  int32_t slot_lo = 0, slot_hi = 0;  // layout slots [lo, hi)
  int64_t bytes = 0;                 // f32 gradient bytes (what is all-reduced)
};

// The deep parameters' slots cut into buckets of at least `bucket_bytes` in
// backward order (bucket 0 = the highest slots; the last one may be smaller).
// bucket_bytes <= 0: one bucket.
std::vector<GradBucket> grad_buckets(const ComputationGraph& cg, int64_t bucket_bytes);

}  // namespace tr
