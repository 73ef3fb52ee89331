#pragma once
// Where a step's GPU time goes (tr-bench --top-kernels N): per case, the
// kernels of CUPTI's traced repetition with the most time, per step.
#include <cstdio>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// Prints nothing for cases without kernels (no CUPTI, or N = 0).
void print_top_kernels(const BenchReport& r, std::FILE* out);

}  // namespace tr::bench
