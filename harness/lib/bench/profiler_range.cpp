#include "harness/lib/bench/profiler_range.h"

namespace tr::bench {

ProfilerRange::ProfilerRange(Backend b) : active_(b == Backend::Cuda) {
  if (active_) profiler_start();
}
ProfilerRange::~ProfilerRange() {
  if (active_) profiler_stop();
}

#ifndef TR_HAVE_CUDA
void profiler_start() {}
void profiler_stop() {}
#endif

}  // namespace tr::bench
