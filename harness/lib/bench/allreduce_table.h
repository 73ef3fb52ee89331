#pragma once
// Note [all-reduce bandwidth]: with several ranks tr-bench times the gradient
// all-reduce of a training step twice (BenchDriver::allreduce): inside the
// step, between time marks around DEEP_COMM and FIRST_COMM on the UPDATE
// stream while the first layer's backward runs beside it, and alone, the same
// messages all-reduced back to back on the same communicator. Bus bandwidth,
// as nccl-tests defines it for all-reduce: bytes x 2(n-1)/n / time, so numbers
// for different rank counts compare with the link speed (0 for one rank, where
// nothing crosses a link).
#include <cstdio>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

double bus_bandwidth_gbps(double bytes, int ranks, double ms);

// One line per case that has the all-reduce counters: bytes and messages per
// step, time and bus bandwidth inside the step and alone, and their ratio.
// Prints nothing when no case has them.
void print_allreduce_table(const BenchReport& r, std::FILE* out);

}  // namespace tr::bench
