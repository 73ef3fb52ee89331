#pragma once
// Trainer: compiles a model, plans memory, builds the atlas and one
// DeviceContext per rank, initialises state, runs pre_capture, then drives the
// step loop epoch by epoch. The same object runs on the CPU and on CUDA, in any
// ExecMode; only the contexts and the executables differ.
#include <functional>
#include <memory>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/core/data_view.h"
#include "framework/core/launch_tally.h"
#include "framework/graph/model_builder.h"
#include "framework/runtime/device_context.h"
#include "framework/runtime/exec_mode.h"
#include "framework/runtime/graph_runner.h"
#include "framework/runtime/step_graphs.h"
#include "framework/runtime/step_loop.h"
#include "framework/train/lr_schedule.h"

namespace tr {

struct RunOptions {
  ModelConfig model;
  TrainConfig train;            // schedule_len is filled in by the Trainer
  ExecMode mode = ExecMode::FullCapture;
  Backend backend = Backend::Cpu;
  int epochs = 1;
  int64_t batch = 200;          // global batch (all ranks together)
  int64_t val_batch = 0;        // 0: same as batch
  int lowres_epochs = 0;        // the first N epochs train at lowres_size (cnn only)
  int lowres_size = 0;
  LrScheduleSpec lr;
  uint64_t seed = 1;
  bool shuffle = true;
  bool validate = true;
  bool deterministic = true;    // deterministic library algorithms (CUDA)
  int first_device = 0;         // CUDA: ranks use devices first_device .. + ranks-1
  int watchdog_ms = 120000;     // a rank waiting this long in a collective is an error
  bool step_graphs = true;      // full capture: a training step is one graph (step_graphs.h)
};

struct EpochStats {
  int epoch = 0;
  bool lowres = false;
  int64_t steps = 0;
  double train_loss = 0, train_acc = 0;
  double val_loss = 0, val_acc = 0, val_ema_loss = 0, val_ema_acc = 0;
  double train_seconds = 0, val_seconds = 0;
  int32_t skipped_steps = 0;  // cumulative
  float loss_scale = 0;
};

class Trainer {
 public:
  Trainer(const RunOptions& opt, DataView train, DataView val);
  ~Trainer();

  EpochStats run_epoch();

  // Benchmark stepping (tr-bench). bench_prime fills both staging buffers once
  // with the first batches of the training (or validation) set and transfers
  // buffer A; bench_steps then runs `steps` steps of variant v, alternating A/B
  // and transferring the other buffer every step, so the H2D copy stays inside
  // the step while host-side data loading stays out of the measurement.
  struct BenchStats {
    double wall_s = 0;          // all ranks done, device idle
    double rank0_cpu_s = 0;     // CPU time of rank 0's thread
    LaunchTally rank0_tally;    // host submissions of rank 0's thread
  };
  void bench_prime(Variant v);
  BenchStats bench_steps(Variant v, int64_t steps);

  // Data parallel: the collective calls of the gradient all-reduce in one
  // training step of v (DEEP_COMM, FIRST_COMM), in order. With
  // BnSync::Running, FIRST_COMM's last call is the BN statistics average. Empty without collectives.
  struct Message {
    int64_t elems = 0;
    DType dtype = DType::F32;
    int64_t bytes() const { return elems * static_cast<int64_t>(dtype_size(dtype)); }
  };
  std::vector<Message> grad_allreduce_messages(Variant v) const;
  // Times the gradient all-reduce two ways on rank 0, per step:
  //  - in_step_ms: inside `steps` training steps of v (their sub-graphs launched
  //    in sequence with time marks around the two all-reduce graphs on UPDATE,
  //    the host synchronising after each step), while the rest of the step runs;
  //  - alone_ms: the same messages all-reduced back to back on their own
  //    (scratch memory, all ranks), `steps` times.
  struct AllreduceTiming {
    double in_step_ms = 0;
    double alone_ms = 0;
  };
  AllreduceTiming bench_allreduce(Variant v, int64_t steps);
  int epochs_done() const { return epoch_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

  const RunOptions& options() const { return opt_; }
  const CompiledModel& model() const { return model_; }
  const PlanSet& plans() const { return plans_; }
  const GraphAtlas& atlas() const { return atlas_; }
  const PreCaptureResult& capture() const { return capture_; }
  DeviceContext& context(int rank) { return *contexts_.at(static_cast<size_t>(rank)); }
  int ranks() const { return static_cast<int>(contexts_.size()); }
  void set_step_hook(const StepHook& h) { hook_ = h; }

 private:
  void fill_staging(DeviceContext& ctx, int slot, const DataView& d, const std::vector<int64_t>& order,
                    int64_t first, int64_t global_n, int64_t per_rank);
  void train_epoch_on_rank(int rank, const std::vector<int64_t>& order, bool lowres);
  void validate_on_rank(int rank);
  // Runs fn(rank) on every rank: inline for one rank, else one thread per rank.
  // The first failure aborts the communicator (nobody hangs) and is rethrown.
  void for_each_rank(const std::function<void(int)>& fn);

  RunOptions opt_;
  DataView train_, val_;
  int64_t steps_per_epoch_ = 0, last_batch_ = 0;  // global sizes
  int64_t val_steps_ = 0, val_last_ = 0;
  CompiledModel model_;
  PlanSet plans_;
  GraphAtlas atlas_;
  // Declared before everything that uses it, so it is destroyed last: the
  // contexts hold it, and NCCL's destroy waits until every captured graph that
  // holds one of its collectives has been destroyed (with several ranks it
  // would wait forever otherwise).
  std::unique_ptr<Communicator> comm_;
  std::vector<std::unique_ptr<DeviceContext>> contexts_;
  PreCaptureResult capture_;
  std::vector<std::unique_ptr<GraphRunner>> runners_;
  std::vector<std::unique_ptr<StepGraphs>> steps_;  // per rank
  StepHook hook_;
  int epoch_ = 0;
  int bench_cur_ = 0;  // buffer the next bench step computes from
};

}  // namespace tr
