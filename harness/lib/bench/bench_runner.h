#pragma once
// Runs the sweep of BenchOptions: one TrainingSession per (model, ranks, batch, mode),
// each requested variant measured as warm-up + repetitions x iters steps.
#include "harness/lib/bench/bench_options.h"
#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// With a World (mpirun, srun), a case of R ranks runs on the first
// R / per_process processes (the others wait), and process 0's report gets
// every counter's range over them (Note [counters across processes]).
BenchReport run_bench(const BenchOptions& o, World* world = nullptr);
// The table printed at the end of a run: one line per case, with the speedup
// over eager measured in the same run.
void print_summary(const BenchReport& r, std::FILE* out);

}  // namespace tr::bench
