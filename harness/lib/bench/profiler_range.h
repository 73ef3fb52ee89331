#pragma once
// cudaProfilerStart/Stop around the measured window, so
// `nsys profile --capture-range=cudaProfilerApi` records only the steady state.
// No-op on the CPU.
#include "framework/runtime/device_context.h"

namespace tr::bench {

class ProfilerRange {
 public:
  explicit ProfilerRange(Backend b);
  ~ProfilerRange();
  ProfilerRange(const ProfilerRange&) = delete;
  ProfilerRange& operator=(const ProfilerRange&) = delete;

 private:
  bool active_ = false;
};

void profiler_start();  // CUDA side, profiler_range_cuda.cpp
void profiler_stop();

}  // namespace tr::bench
