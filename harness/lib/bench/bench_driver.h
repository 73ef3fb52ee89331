#pragma once
// Benchmark stepping over a TrainingSession (tr-bench, and tests of it).
//   prime(v)      fills both staging buffers once with the first batches of the
//                 training (or validation) set and transfers buffer A;
//   steps(v, n)   runs n steps of variant v, alternating A/B and transferring
//                 the other buffer every step, so the H2D copy stays inside the
//                 step while host-side data loading stays out of the measurement;
//   allreduce(v, n) times the gradient all-reduce inside the step and alone.
// set_host_delay(d): every rank's host sleeps d before launching each step of
// steps() (tr-bench --host-delay-us), as a slow input pipeline would.
#include <chrono>
#include <vector>

#include "framework/core/launch_tally.h"
#include "framework/train/session.h"

namespace tr::bench {

class BenchDriver {
 public:
  explicit BenchDriver(TrainingSession& s) : s_(s) {}

  struct Stats {
    double wall_s = 0;        // all ranks done, device idle
    double rank0_cpu_s = 0;   // CPU time of rank 0's thread
    LaunchTally rank0_tally;  // host submissions of rank 0's thread
  };
  void prime(Variant v);
  void set_host_delay(std::chrono::microseconds d) { host_delay_ = d; }
  Stats steps(Variant v, int64_t n);

  // Data parallel: the collective calls of the gradient all-reduce in one
  // training step of v (DEEP_COMM, FIRST_COMM), in order. With
  // BnSync::Running, FIRST_COMM's last call is the BN statistics average.
  // Empty without collectives.
  struct Message {
    int64_t elems = 0;
    DType dtype = DType::F32;
    int64_t bytes() const { return elems * static_cast<int64_t>(dtype_size(dtype)); }
  };
  std::vector<Message> grad_allreduce_messages(Variant v) const;
  // The gradient buckets all-reduced inside the backward (Note [gradient
  // buckets]), beside it and so not part of allreduce()'s timing.
  std::vector<Message> in_backward_messages(Variant v) const;
  // Times the gradient all-reduce two ways on rank 0, per step:
  //  - in_step_ms: inside `n` training steps of v (their sub-graphs launched in
  //    sequence with time marks around the two all-reduce graphs on UPDATE, the
  //    host synchronising after each step), while the rest of the step runs;
  //  - alone_ms: the same messages all-reduced back to back on their own
  //    (scratch memory, all ranks), `n` times.
  struct AllreduceTiming {
    double in_step_ms = 0;
    double alone_ms = 0;
  };
  AllreduceTiming allreduce(Variant v, int64_t n);

 private:
  TrainingSession& s_;
  int cur_ = 0;  // buffer the next step computes from
  std::chrono::microseconds host_delay_{0};
};

}  // namespace tr::bench
