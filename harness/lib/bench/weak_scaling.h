#pragma once
// Weak scaling (data parallel with a fixed batch per rank): for every case run
// on N > 1 ranks, efficiency = samples/s at N ranks / (N x samples/s at 1 rank),
// against the 1-rank case of the same model, mode and variant with the same
// per-rank batch, measured in the same run. 1.0 is perfect scaling.
#include <cstdio>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// Adds the counter "weak_scaling_efficiency" to every case that has such a
// 1-rank partner (the partner gets 1). Cases without one are left alone.
void add_weak_scaling(BenchReport& r);

// One line per (model, mode, variant, per-rank batch) with an efficiency per
// rank count; prints nothing when no case has a partner.
void print_weak_scaling(const BenchReport& r, std::FILE* out);

}  // namespace tr::bench
