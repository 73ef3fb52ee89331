#pragma once
// Note [counters across processes]: under mpirun or srun each process measures
// its own ranks (its step time, its launches, its GPU's busy time). The report
// is process 0's, so each of its counters, and the median step time, also
// gets the minimum and the maximum over the processes, as
// `<counter>_process_min` and `<counter>_process_max`: a slow or odd process
// shows there instead of hiding behind process 0.
#include <chrono>

#include "framework/comm/world.h"
#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// Collective over `w`: every process calls it for the same case.
void add_process_extremes(BenchCase& c, World& w, std::chrono::milliseconds timeout);

}  // namespace tr::bench
