#pragma once
// Fills a benchmark input on the GPU (device_fill.cu), for tr_bench_ops and
// the probes of experiments/ (tr_experiments) alike.
#include <cstdint>

#include "framework/core/dtype.h"

namespace tr::bench {

// n elements of dtype dt at dev: f32 / f16 uniform in [lo, hi), u8 uniform in
// [0, 256), i32 uniform in [0, hi) (labels); any other dtype zeros. The draw
// of element i is Philox4x32-10 of counter i under `seed`. Returns whether
// the fill ran.
bool device_fill(void* dev, DType dt, int64_t n, double lo, double hi, uint64_t seed);

}  // namespace tr::bench
