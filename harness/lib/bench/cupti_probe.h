#pragma once
// An independent view of what the host submitted and what the GPU ran, from
// CUPTI: runtime/driver API callbacks count kernel launches, graph launches and
// async memcpys (cross-checking the framework's own LaunchTally), and activity
// records give every kernel's start/end, so GPU busy time = the union of kernel
// intervals. CUPTI is loaded with dlopen: without it, or when a profiler such as
// Nsight Systems already holds it, the probe says so once (note()) and reports
// nothing — never zeros as data.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

struct CuptiCounts {
  bool valid = false;
  int64_t kernel_launches = 0;       // cudaLaunchKernel* / cuLaunchKernel* outside other API calls
  int64_t graph_launches = 0;        // cudaGraphLaunch / cuGraphLaunch
  int64_t memcpy_async = 0;          // cudaMemcpyAsync / cuMemcpy*Async
  int64_t kernels_executed = 0;      // kernel activity records (graph kernels included)
  double kernel_ms_sum = 0;          // sum of kernel durations
  double kernel_ms_union = 0;        // time with at least one kernel running
  double kernel_ms_span = 0;         // first kernel's start to last kernel's end
  std::vector<KernelTotal> kernels;  // by kernel function, most time first
  // Every kernel, memset ("[memset]") and memcpy ("[memcpy]"), in start order
  // (start()'s keep_records).
  std::vector<KernelRecord> records;
};

class CuptiProbe {
 public:
  // Never null; when CUPTI cannot be used, stop() returns valid=false and note() says why.
  static std::unique_ptr<CuptiProbe> create();
  virtual ~CuptiProbe() = default;
  // Switches tracing on. Kernel intervals are kept for CUDA device `device`
  // only (rank 0's GPU, so that busy time is one GPU's); launch callbacks
  // count every thread. Nothing is recorded until record(): the steps run in
  // between pay CUPTI's first-launch setup of each graph (Note [busy fraction]).
  // keep_records: stop() also returns every kernel's, memset's and memcpy's
  // record (--kernel-trace).
  virtual void start(int device, bool keep_records = false) = 0;
  // Drops what was traced since start() (the caller has synchronized) and
  // records from here until stop().
  virtual void record() = 0;
  virtual CuptiCounts stop() = 0;
  virtual const std::string& note() const = 0;
};

}  // namespace tr::bench
