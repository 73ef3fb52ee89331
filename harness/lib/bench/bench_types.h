#pragma once
// What one tr-bench run measured, before it becomes JSON (json_report.h) or a
// chart (html_report.h). One BenchCase per (model, mode, variant, ranks, batch).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tr::bench {

constexpr int kReportSchemaVersion = 1;

// The "context" block of the report (Google Benchmark's plus ours).
struct BenchContext {
  std::string date;  // ISO 8601, local time with offset
  std::string host_name;
  std::string executable;
  int num_cpus = 0;
  double mhz_per_cpu = 0;
  std::string build_type;   // "release" / "debug" (Google Benchmark's library_build_type)
  std::string device_kind;  // "cuda" or "cpu"
  std::string device_name;  // e.g. "NVIDIA H200", or the CPU model
  std::string driver_version, cuda_runtime_version, cudnn_version, nccl_version;
  std::string git_commit;
  std::string command_line;
  std::string precision = "fp32";  // "fp32", "amp" or "bf16" (harness/lib/cli/precision_flag.h)
  std::string bn_sync = "batch";   // "batch" (synchronised BN) or "running" (per-rank BN, running stats averaged)
  double bucket_mb = 25;           // gradient all-reduce bucket size (Note [gradient buckets])
  bool cudnn_benchmark =
      false;  // cuDNN algorithms timed per shape (or replayed from --conv-plans) instead of the heuristics' choice
  // The convolution plans that ran (Note [convolution plan books]): the
  // --conv-plans file ("" without one) and the digest of rank 0's plans (""
  // on the CPU and in reports older than it). Equal digests: the same plans.
  std::string conv_plans_file;
  std::string conv_plans_digest;
  bool fusion = true;         // node-pair fusion (Note [fusion]); reports older than it read false
  bool deterministic = true;  // deterministic library algorithms only; reports older than it read true
  // Our kernels launched with programmatic dependencies (Note [programmatic
  // dependent launch]); false on the CPU, and in reports older than it.
  bool programmatic_launch = false;
  // f16 3x3 filter gradients on tr's tensor-core kernel (Note [3x3 filter
  // gradient on tensor cores]); false on the CPU, with --cudnn-filter-grad, and
  // in reports older than it.
  bool tc_filter_grad = false;
  // Captured graphs' memset nodes run as kernel nodes (Note [memset nodes]);
  // false on the CPU, with --keep-memset-nodes, and in reports older than it.
  bool memset_kernels = false;
  // Per-channel sums and BatchNorm phases behind grid barriers (Note [one
  // kernel per BatchNorm]): true with --grid-sync on CUDA.
  bool grid_sync = false;
  // Weight gradients on a second stream: "auto" (each case's choice is its
  // counter side_streams), "on" (--side-streams) or "off" (--no-side-streams);
  // "off" in reports older than it.
  std::string side_streams = "off";
  // --host-delay-us: the host's sleep before each step; 0 in reports older than it.
  int64_t host_delay_us = 0;
  // How the ranks ran (Note [processes and ranks]): "threads" (one process),
  // "processes" (mpirun/srun on one host) or "nodes" (several hosts).
  std::string launch = "threads";
  int processes = 1;
  std::string hosts;  // per process, comma-separated ("" for threads: host_name)
  std::string mpi_version = "none";
  std::string launcher = "none";  // "mpirun", "srun", "pmi" (World::launcher), "none" for threads
  // The GPU's state through NVML (Note [machine state], nvml.h): "nvml" is
  // "ok", "cpu", or "unavailable: <why>"; with "ok" its name, uuid, driver,
  // clocks, power limit, ECC and persistence mode. {} in reports older than it.
  std::map<std::string, std::string> gpu_state;
  int schema_version = kReportSchemaVersion;
};

// One kernel function's share of a traced window (CUPTI, cupti_probe.h).
struct KernelTotal {
  std::string name;  // demangled, without "(anonymous namespace)" and the argument list
  int64_t count = 0;
  double ms = 0;  // summed durations
};

// One kernel run of a traced repetition (tr-bench --kernel-trace, kernel_trace.h).
struct KernelRecord {
  std::string name;                   // readable, as KernelTotal's
  uint32_t stream = 0;                // CUDA's stream id (a graph's branches run on streams of their own)
  uint64_t start_ns = 0, end_ns = 0;  // GPU timestamps
};

struct BenchCase {
  std::string model;            // a model registry name: "mlp", "cnn", "resnet50", ...
  std::string mode;             // "eager" | "partial-capture" | "full-capture"
  std::string variant;          // "train_base", "val_base", ...
  int ranks = 1;                // GPUs (cuda) or rank threads (cpu)
  int64_t batch = 0;            // global batch
  int iterations = 0;           // steps per repetition
  std::vector<double> step_ms;  // per repetition: wall time per step (real_time)
  std::vector<double> cpu_ms;   // per repetition: host CPU time per step (cpu_time)
  // Deterministic counters (exact on any machine; CI gates on them): the
  //   launches per step (graph, kernel (own kernels, eager), library call,
  //   memcpy, memset, event, node), the graph and arena counts, side_streams,
  //   and the gradient all-reduce's bytes and messages per step, after
  //   (DEEP_COMM + FIRST_COMM) and inside the backward (Note [gradient
  //   buckets]); deterministic_counters() below names them.
  // Measured counters (timing-dependent): samples_per_second, samples_per_second_per_gpu,
  //   capture_ms, gpu_resident_fraction(_raw), gpu_idle_us_per_step, traced_step_ms,
  //   gpu_kernel_ms_per_step, gpu_busy_fraction(_raw) and its gpu_busy_* companions,
  //   cupti_* cross-checks,
  //   weak_scaling_efficiency (weak_scaling.h), grad_allreduce_ms_per_step,
  //   grad_allreduce_busbw_gbps, allreduce_alone_ms_per_step, allreduce_alone_busbw_gbps
  //   (allreduce_table.h).
  std::map<std::string, double> counters;
  // The kernels of the traced repetition, most time first (--top-kernels N keeps
  // N; printed, not written to the JSON).
  std::vector<KernelTotal> top_kernels;
  // Every kernel of the traced repetition, in start order (--kernel-trace only).
  std::vector<KernelRecord> kernel_trace;

  // "train_step/model:cnn/variant:train_base/mode:full-capture/gpus:1/batch:256"
  // (gpus: on cuda, ranks: on cpu).
  std::string name(const std::string& device_kind) const;
};

struct BenchReport {
  BenchContext context;
  std::vector<BenchCase> cases;
};

// The deterministic counters: exact on any machine, gated exactly (every other
// counter is measured and not gated). reports/schema.md lists the same names,
// and GateTest.SchemaListsTheDeterministicCounters holds the two together.
const std::set<std::string>& deterministic_counters();
bool is_deterministic_counter(const std::string& key);
// Counters that are fractions of a whole (gpu_busy_fraction, gpu_resident_fraction, mfu): a reader
// refuses them above 1 (Note [busy fraction]).
bool is_fraction_counter(const std::string& key);

}  // namespace tr::bench
