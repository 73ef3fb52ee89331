#pragma once
// Runs the sweep of BenchOptions: one TrainingSession per (model, ranks, batch, mode),
// each requested variant measured as warm-up + repetitions x iters steps.
#include "harness/lib/bench_options.h"
#include "harness/lib/bench_types.h"

namespace tr::bench {

BenchReport run_bench(const BenchOptions& o);
// The table printed at the end of a run: one line per case, with the speedup
// over eager measured in the same run.
void print_summary(const BenchReport& r, std::FILE* out);

}  // namespace tr::bench
