#pragma once
// tr-bench's run options, parsed from the command line (nccl-tests / Google
// Benchmark style: lists sweep, every bad value is a one-line UserError).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/comm/world.h"
#include "framework/graph/model_config.h"
#include "framework/graph/variant.h"
#include "framework/runtime/device_context.h"
#include "framework/runtime/exec_mode.h"
#include "harness/lib/bench/side_streams.h"

namespace tr::bench {

struct BenchOptions {
  Backend backend = Backend::Cpu;
  std::vector<std::string> models = {"cnn", "mlp"};  // model registry names
  std::vector<ExecMode> modes = {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture};
  std::vector<int> ranks = {1};  // global rank counts (Note [processes and ranks])
  int per_process = 1;           // under a launcher: --gpus-per-process
  std::vector<int64_t> batches;  // global batch; empty: per-model default
  bool batch_per_rank = false;   // --batch-per-gpu: `batches` are per rank (weak scaling)
  std::vector<Variant> variants = {Variant::TrainBase};
  int warmup = 10;
  int iters = 50;
  int repetitions = 5;
  // --host-delay-us: the host sleeps this long before it launches each step,
  // as a slow input pipeline would make it (0: no delay).
  int64_t host_delay_us = 0;
  int64_t watchdog_ms = 120000;  // --watchdog-ms: a rank that waits longer for the others fails
  double width = 1.0;
  int image_size = 0;                      // 0: each model's own input side
  int64_t seq = 0;                         // GPT models' window length; 0: each one's context
  std::string precision = "fp32";          // --precision (harness/lib/cli/precision_flag.h)
  std::optional<OptimizerKind> optimizer;  // unset: each model's bench optimizer
  BnSync bn_sync = BnSync::Batch;
  double bucket_mb = 25;  // --bucket-mb (Note [gradient buckets])
  bool fusion = true;     // false: --no-fusion (TrainConfig::fusion)
  AlgoChoice algos;       // the GPU algorithm flags (harness/lib/cli/algo_flags.h), with the plan book
  std::string json_path;  // empty: no file
  bool progress = false;  // stderr progress (a terminal only)
  bool cupti = true;
  int top_kernels = 0;                           // --top-kernels N: print each case's N most costly kernels (CUPTI)
  std::string kernel_trace_path;                 // --kernel-trace FILE: every traced kernel, Chrome trace JSON (CUPTI)
  SideStreams side_streams = SideStreams::Auto;  // side_streams_flag() (harness/lib/cli/train_flags.h)
  bool step_graphs = true;                       // full capture: one graph per training step (--split-steps: off)
  bool help = false;                             // --help: print kBenchUsage and do nothing else
  std::string command_line;
};

extern const char* kBenchUsage;

// argv[0] is the program; subcommands are handled before this. Under a
// launcher (a World), --gpus / --ranks count every process's ranks: the default
// is all of them, auto sweeps 1, 2, 4 ... processes, and each count must be a
// multiple of --gpus-per-process.
BenchOptions parse_bench_options(int argc, char** argv, World* world = nullptr);

}  // namespace tr::bench
