#pragma once
// TrainingSession: everything a run sets up before its first step, on the CPU
// or on CUDA, in any ExecMode. It compiles the model, plans memory, builds the
// atlas and one DeviceContext per rank, initialises the state, runs
// pre_capture and composes the step graphs. The epoch loop (trainer.h) and the
// benchmark driver (harness/lib/bench/bench_driver.h) then drive it.
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/core/data_view.h"
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
  TrainConfig train;  // schedule_len and augment.seed are filled in by the session
  ExecMode mode = ExecMode::FullCapture;
  Backend backend = Backend::Cpu;
  int epochs = 1;
  int64_t batch = 200;    // global batch (all ranks together)
  int64_t val_batch = 0;  // 0: same as batch
  int lowres_epochs = 0;  // the first N epochs train at lowres_size (models without a spatial fc)
  int lowres_size = 0;
  LrScheduleSpec lr;
  uint64_t seed = 1;
  bool shuffle = true;
  bool validate = true;
  // > 0: also validate after every val_every-th training step of the run
  // (counted from the first), inside an epoch (EpochStats::mid_vals); the
  // epoch's own validation covers its last step.
  int64_t val_every = 0;
  // How library algorithms are chosen and our kernels launched (the CPU's
  // kernels are deterministic and use none of the CUDA choices).
  AlgoChoice algos;
  int first_device = 0;      // CUDA: ranks use devices first_device .. + ranks-1
  int watchdog_ms = 120000;  // a rank waiting this long in a collective is an error
  bool step_graphs = true;   // full capture: a training step is one graph (step_graphs.h)
  // The element type of BatchNorm's sums; unset: bn_sums_dtype(backend), F64 on
  // the CPU (Note [BatchNorm sums in double]). F32 on the CPU rounds them as
  // the GPU does, for tests that hold the GPU to the CPU.
  std::optional<DType> bn_sums;
  std::optional<CaptureFault> capture_fault;  // tests: fail the capture of one graph (pre_capture.h)
  // Several processes (mpirun, srun): this process holds train.ranks /
  // processes() consecutive ranks, on devices first_device ... Null: this
  // process holds every rank (Note [processes and ranks]).
  World* world = nullptr;
};

class TrainingSession {
 public:
  TrainingSession(const RunOptions& opt, DataView train, DataView val);
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  const RunOptions& options() const { return opt_; }
  const DataView& train_data() const { return train_; }
  const DataView& val_data() const { return val_; }
  const CompiledModel& model() const { return model_; }
  const PlanSet& plans() const { return plans_; }
  const GraphAtlas& atlas() const { return atlas_; }
  const PreCaptureResult& capture() const { return capture_; }
  // This process's ranks; context(l), runner(l) and steps(l) take the local
  // index l (Note [processes and ranks]). world_ranks() counts every process's.
  int local_ranks() const { return static_cast<int>(contexts_.size()); }
  int world_ranks() const { return opt_.train.ranks; }
  DeviceContext& context(int local) { return *contexts_.at(static_cast<size_t>(local)); }
  GraphRunner& runner(int local) { return *runners_.at(static_cast<size_t>(local)); }
  StepGraphs& steps(int local) { return *steps_.at(static_cast<size_t>(local)); }
  Communicator* comm() { return comm_.get(); }

  // Global sizes: steps per epoch and the size of the last (maybe incomplete)
  // training batch; likewise for validation.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t last_batch() const { return last_batch_; }
  int64_t val_steps() const { return val_steps_; }
  int64_t val_last() const { return val_last_; }

  // Tests inject faults between the backward graphs and the gradient checks.
  void set_step_hook(const StepHook& h) { hook_ = h; }
  const StepHook& step_hook() const { return hook_; }

  // Runs fn(local) on every rank of this process: inline for one, else one
  // thread per rank. The first failure aborts the communicator (nobody
  // hangs) and is rethrown.
  void for_each_rank(const std::function<void(int)>& fn);

  // Copies this rank's shard of the global batch [first, first + global_n) of
  // `d` (in `order`, or in data order when empty) into staging buffer `slot`:
  // samples first + rank*per_rank .. + per_rank.
  static void fill_staging(DeviceContext& ctx, int slot, const DataView& d, const std::vector<int64_t>& order,
                           int64_t first, int64_t global_n, int64_t per_rank);

 private:
  using Dims = std::array<VariantDims, kVariantCount>;
  // The constructor's steps, in order.
  void check_options() const;
  Dims plan_variants();                     // the variants' sizes; sets the step counts
  TrainConfig compile(const Dims& dims);    // builds model_
  int64_t make_contexts(const Dims& dims);  // comm_ and contexts_ (library plans); their largest workspace
  void allocate(const TrainConfig& tc, const Dims& dims, int64_t workspace);  // memory plan, arenas, initial state
  void capture_graphs();                                                      // pre-capture, runners, step graphs
  int processes() const;                                                      // this run's (1 without a launcher)
  int first_rank() const;                                                     // this process's first rank

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
};

}  // namespace tr
