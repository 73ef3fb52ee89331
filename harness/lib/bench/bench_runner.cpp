#include "harness/lib/bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "datasets/data_view.h"
#include "datasets/synthetic.h"
#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "framework/graph/model_registry.h"
#include "framework/runtime/nvtx.h"
#include "framework/train/session.h"
#include "harness/lib/bench/allreduce_table.h"
#include "harness/lib/bench/bench_driver.h"
#include "harness/lib/bench/busy_fraction.h"
#include "harness/lib/bench/context_info.h"
#include "harness/lib/bench/cupti_probe.h"
#include "harness/lib/bench/device_memory.h"
#include "harness/lib/bench/launch_crosscheck.h"
#include "harness/lib/bench/machine_counters.h"
#include "harness/lib/bench/model_flops.h"
#include "harness/lib/bench/process_counters.h"
#include "harness/lib/bench/profiler_range.h"
#include "harness/lib/bench/step_counters.h"
#include "harness/lib/bench/step_roofline.h"
#include "harness/lib/bench/weak_scaling.h"
#include "harness/lib/cli/conv_plans_file.h"
#include "harness/lib/cli/precision_flag.h"
#include "harness/lib/cli/process_launch.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {
namespace {

// Traced steps run before the traced repetition and not recorded (Note [busy
// fraction]): every graph of a step has had its first traced launch by then.
constexpr int64_t kTracedWarmupSteps = 3;

const std::vector<int64_t>& default_batches(const ModelEntry& e, Backend b) {
  return b == Backend::Cuda ? e.gpu_batches : e.cpu_batches;
}

// The summary's GPU columns (Note [busy fraction]), resident and busy: empty
// when no case has them, "-" for a case without one.
std::string busy_cells(bool columns, const BenchCase& c) {
  if (!columns) return "";
  std::string out;
  for (const char* key : {"gpu_resident_fraction", "gpu_busy_fraction"}) {
    const auto it = c.counters.find(key);
    char buf[32];
    if (it == c.counters.end()) {
      std::snprintf(buf, sizeof buf, " %9s", "-");
    } else {
      std::snprintf(buf, sizeof buf, " %9.3f", it->second);
    }
    out += buf;
  }
  return out;
}

bool wants(const std::vector<Variant>& vs, bool last, bool lowres, bool val) {
  for (Variant v : vs) {
    if (val != !is_train(v)) continue;
    if (last && (v == Variant::TrainLast || v == Variant::TrainLowresLast || v == Variant::ValLast)) return true;
    if (lowres && (v == Variant::TrainLowres || v == Variant::TrainLowresLast)) return true;
    if (!last && !lowres) return true;
  }
  return false;
}

// The summary's tokens/s and MFU columns: empty when no case reads tokens,
// "-" where a case has no value.
std::string token_cells(bool columns, const BenchCase& c) {
  if (!columns) return "";
  const auto t = c.counters.find("tokens_per_second"), m = c.counters.find("mfu");
  char buf[64];
  std::snprintf(buf, sizeof buf, " %12s %6s", t == c.counters.end() ? "-" : cat(std::llround(t->second)).c_str(),
                m == c.counters.end() ? "-" : cat(std::round(1000.0 * m->second) / 1000.0).c_str());
  return buf;
}

}  // namespace

namespace {

// What the report's context says about the whole sweep.
BenchContext sweep_context(const BenchOptions& o, World* world) {
  BenchContext x = collect_context(o.backend, o.command_line, world);
  const bool cuda = o.backend == Backend::Cuda;
  x.precision = o.precision;
  x.bn_sync = bn_sync_name(o.bn_sync);
  x.bucket_mb = o.bucket_mb;
  // A replayed --conv-plans file holds timed plans too.
  const ConvPlanBook* plans = o.algos.conv_plans.get();
  x.cudnn_benchmark = o.algos.benchmark || (plans && plans->use() == ConvPlanUse::Replay);
  if (plans) x.conv_plans_file = plans->source();
  x.fusion = o.fusion;
  x.deterministic = o.algos.deterministic;
  x.programmatic_launch = cuda && o.algos.programmatic_launch;
  x.tc_filter_grad = cuda && o.algos.tc_filter;
  x.memset_kernels = cuda && o.algos.memset_kernels;
  x.grid_sync = cuda && o.algos.grid_sync;
  // On the CPU, auto always means off: say what ran.
  x.side_streams = !cuda && o.side_streams == SideStreams::Auto ? "off" : side_streams_name(o.side_streams);
  x.host_delay_us = o.host_delay_us;
  return x;
}

// One training session of the sweep: a model at a rank count, batch and mode.
struct SessionPoint {
  std::string model;
  const ModelEntry* entry = nullptr;
  int side = 0;     // image side
  int64_t seq = 0;  // a sequence model's window length
  int ranks = 1;
  int64_t batch = 0;  // global
  ExecMode mode = ExecMode::FullCapture;
  World* part = nullptr;  // the processes of this rank count, under a launcher
  bool validate = false, lowres = false;
};

RunOptions session_options(const BenchOptions& o, const SessionPoint& p) {
  RunOptions ro;
  ro.model = p.seq > 0 ? model_config(p.model, o.width, 0, 0, 0, p.seq) : model_config(p.model, o.width, p.side);
  ro.train.optimizer = o.optimizer.value_or(p.entry->bench_optimizer);
  if (p.seq > 0) {  // as language models train: no label smoothing, the gradient norm clipped to 1 (AdamW's)
    ro.train.label_smoothing = 0.f;
    if (ro.train.optimizer == OptimizerKind::AdamW) ro.train.max_grad_norm = 1.f;
  }
  ro.train.ema_decay = p.entry->recipe.ema_decay;  // the model's: none for the GPTs, as their peers keep none
  set_precision(o.precision, ro.train);
  ro.train.side_streams = use_side_streams(o.side_streams, o.backend, *p.entry, p.batch / p.ranks);
  ro.train.fusion = o.fusion;
  ro.algos = o.algos;
  ro.train.bn_sync = o.bn_sync;
  ro.train.bucket_bytes = int64_t(o.bucket_mb * 1048576.0);
  ro.step_graphs = o.step_graphs;
  ro.train.ranks = p.ranks;
  ro.watchdog_ms = static_cast<int>(o.watchdog_ms);
  ro.world = p.part;
  if (p.part) ro.first_device = first_device_of(*p.part, o.per_process);
  ro.backend = o.backend;
  ro.mode = p.mode;
  ro.batch = p.batch;
  ro.epochs = 2;
  ro.lowres_epochs = p.lowres ? 1 : 0;
  ro.lowres_size = p.seq > 0 ? int(p.seq / 2) : p.side * 5 / 7;  // a GPT's shorter window: half the length
  ro.validate = p.validate;
  ro.lr.base_lr = default_lr(ro.train.optimizer);
  return ro;
}

// One variant's timed and traced steps.
struct Timing {
  std::vector<double> step_ms, cpu_ms;      // per repetition
  std::vector<RepMachine> machine;          // per repetition, where NVML reads the GPU (Note [machine state])
  std::optional<RepMachine> energy_window;  // Note [energy window], where no repetition was long enough
  BenchDriver::Stats last;                  // the last repetition's (rank 0's tally)
  CuptiCounts cupti;
  double cupti_wall_ms = 0;
};

// One traced repetition of v (Note [busy fraction]): a few traced steps that
// are not recorded take CUPTI's setup of each graph on its first traced
// launch, then `iters` recorded steps. wall_ms: the recorded steps' host time.
struct Traced {
  CuptiCounts counts;
  double wall_ms = 0;
};

Traced traced_repetition(BenchDriver& drive, Variant v, int64_t iters, CuptiProbe& cupti, int device,
                         bool keep_records) {
  Traced t;
  cupti.start(device, keep_records);  // rank 0's GPU
  drive.steps(v, kTracedWarmupSteps);
  cupti.record();
  t.wall_ms = 1e3 * drive.steps(v, iters).wall_s;
  t.counts = cupti.stop();
  return t;
}

// Note [energy window] (machine_counters.h): untimed steps enough for the
// board's energy counter, run only where every timed repetition was shorter.
std::optional<RepMachine> energy_window(BenchDriver& drive, Variant v, const Timing& t, const std::string& bus) {
  if (bus.empty() || t.machine.empty() || t.step_ms.empty()) return std::nullopt;
  for (const RepMachine& r : t.machine)
    if (r.seconds >= kMinEnergyWindowS) return std::nullopt;
  const Nvml& nvml = Nvml::get();
  RepMachine m;
  GpuSample before;
  m.steps = energy_window_steps(median(t.step_ms));
  if (!nvml.sample(bus, before)) return std::nullopt;
  const auto t0 = std::chrono::steady_clock::now();
  drive.steps(v, m.steps);
  if (!nvml.sample(bus, m.end)) return std::nullopt;
  m.energy_j = (m.end.energy_mj - before.energy_mj) * 1e-3;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

// one_process: the ranks all live in this process. Across processes every one must run the same steps (their
// collectives pair up), and the energy window's length and whether it runs are each process's own: it runs in
// one process only.
Timing time_variant(const BenchOptions& o, BenchDriver& drive, Variant v, CuptiProbe* cupti, int device,
                    bool one_process) {
  Timing t;
  const Nvml& nvml = Nvml::get();
  const std::string bus = o.backend == Backend::Cuda && nvml.available() ? cuda_pci_bus_id(device) : "";
  drive.prime(v);
  {
    nvtx::Range r(nvtx::Phase::Warmup);
    if (o.warmup > 0) drive.steps(v, o.warmup);
  }
  {
    nvtx::Range r(nvtx::Phase::Measure);
    ProfilerRange pr(o.backend);  // cudaProfilerStart/Stop around the steady state
    for (int rep = 0; rep < o.repetitions; ++rep) {
      GpuSample before;
      const bool sampled = !bus.empty() && nvml.sample(bus, before);
      const auto t0 = std::chrono::steady_clock::now();
      t.last = drive.steps(v, o.iters);
      t.step_ms.push_back(1e3 * t.last.wall_s / o.iters);
      t.cpu_ms.push_back(1e3 * t.last.rank0_cpu_s / o.iters);
      RepMachine m;
      if (sampled && nvml.sample(bus, m.end)) {  // power over the samples' own window, not the steps'
        m.energy_j = (m.end.energy_mj - before.energy_mj) * 1e-3;
        m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        t.machine.push_back(m);
      }
    }
  }
  // Outside the profiled range: a profile (--capture-range=cudaProfilerApi) holds the timed steps only.
  if (one_process) t.energy_window = energy_window(drive, v, t, bus);
  // CUPTI tracing perturbs timing, so it gets one extra repetition of its
  // own: launch counts and GPU busy time come from there.
  if (cupti) {
    Traced traced = traced_repetition(drive, v, o.iters, *cupti, device, !o.kernel_trace_path.empty());
    t.cupti = std::move(traced.counts);
    t.cupti_wall_ms = traced.wall_ms;
  }
  return t;
}

LaunchCounters launch_counters(const LaunchTally& l, int64_t iters, Backend backend) {
  const double per = 1.0 / double(iters);
  LaunchCounters c;
  c.graph_launches = double(l.graph_launches) * per;
  c.kernel_launches = double(l.kernels) * per;
  c.library_calls = double(l.library_calls) * per;
  c.memcpy = double(l.memcpys) * per;
  c.memset = double(l.memsets) * per;
  c.event_ops = double(l.event_ops) * per;
  c.node_launches = double(l.nodes) * per;
  // Host submissions: on CUDA every call that enqueues device work; on the
  // CPU a node run one by one counts as one launch, a replayed graph as one.
  c.cpu_launches = backend == Backend::Cuda
                       ? double(l.graph_launches + l.kernels + l.library_calls + l.memcpys + l.memsets) * per
                       : double(l.graph_launches + l.nodes) * per;
  return c;
}

// Note [busy fraction] (busy_fraction.h): kernel time over the span of one
// traced repetition's kernels, at most 1; the traced step time (host wall) is
// kept beside the untraced one (real_time), and the idle time the fraction
// leaves per step.
TracedBusy traced_busy(const CuptiCounts& cc, double wall_ms, int64_t iters) {
  const double steps = double(iters);
  const BusyFraction f = busy_fraction(cc.kernel_ms_union, cc.kernel_ms_span);
  TracedBusy b;
  b.fraction = f.value;
  b.raw = f.raw;
  b.idle_us = 1e3 * (cc.kernel_ms_span - cc.kernel_ms_union) / steps;
  b.kernel_ms = cc.kernel_ms_sum / steps;
  b.traced_step_ms = wall_ms / steps;
  return b;
}

// Every rank thread launches the same, and CUPTI counts them all: per rank,
// to compare with rank 0's own tally (launch_crosscheck.h).
CuptiCounters cupti_counters(const CuptiCounts& cc, double wall_ms, int64_t iters, int ranks,
                             const LaunchCounters& ours) {
  const double steps = double(iters);
  CuptiCounters u;
  u.kernel_launches = double(cc.kernel_launches) / steps / ranks;
  u.graph_launches = double(cc.graph_launches) / steps / ranks;
  u.memcpy = double(cc.memcpy_async) / steps / ranks;
  u.resident = traced_busy(cc, wall_ms, iters);
  u.gpu_kernels = double(cc.kernels_executed) / steps;
  u.launches_agree = launch_counts_agree({ours.graph_launches, ours.memcpy, ours.kernel_launches + ours.library_calls},
                                         {u.graph_launches, u.memcpy, u.kernel_launches});
  return u;
}

// Data parallel: the gradient all-reduce inside the step and alone (Note
// [all-reduce bandwidth], allreduce_table.h); none with one rank.
std::optional<AllreduceCounters> allreduce_counters(BenchDriver& drive, Variant v, int64_t iters, int ranks) {
  const auto msgs = drive.grad_allreduce_messages(v);
  if (msgs.empty()) return std::nullopt;
  AllreduceCounters a;
  for (const auto& m : msgs) a.bytes += double(m.bytes());
  a.messages = double(msgs.size());
  const auto at = drive.allreduce(v, iters);
  a.in_step_ms = at.in_step_ms;
  a.alone_ms = at.alone_ms;
  a.in_step_busbw_gbps = bus_bandwidth_gbps(a.bytes, ranks, at.in_step_ms);
  a.alone_busbw_gbps = bus_bandwidth_gbps(a.bytes, ranks, at.alone_ms);
  // Note [gradient buckets]: the buckets issued inside the backward overlap
  // it and are not in the timing above.
  const auto in_bwd = drive.in_backward_messages(v);
  for (const auto& m : in_bwd) a.in_backward_bytes += double(m.bytes());
  a.in_backward_messages = double(in_bwd.size());
  return a;
}

void warn_if_launches_disagree(const BenchCase& c, const std::string& device_kind, const StepCounters& k) {
  if (!k.cupti || k.cupti->launches_agree) return;
  std::fprintf(stderr,
               "tr-bench: warning: %s: framework and CUPTI launch counts disagree "
               "(graphs %g vs %g, memcpys %g vs %g, kernels %g vs %g)\n",
               c.name(device_kind).c_str(), k.launches.graph_launches, k.cupti->graph_launches, k.launches.memcpy,
               k.cupti->memcpy, k.launches.kernel_launches + k.launches.library_calls, k.cupti->kernel_launches);
}

SequenceCounters sequence_counters(const CompiledModel& m, double samples_per_second, int ranks,
                                   const std::string& device_name) {
  const SequenceFlops f = sequence_flops(m);
  SequenceCounters q;
  q.tokens_per_second = samples_per_second * double(f.seq);
  q.tokens_per_second_per_gpu = q.tokens_per_second / ranks;
  q.flops_per_token = f.per_token();
  q.tflops_per_gpu = q.tokens_per_second_per_gpu * q.flops_per_token / 1e12;
  if (const double peak = tensor_peak_flops(device_name); peak > 0) q.mfu = q.tflops_per_gpu * 1e12 / peak;
  return q;
}

// The synthetic data of one bench session: `count` images of the model's, or
// `count` windows of its tokens (training and validation from one stream).
std::pair<data::ImageDataset, data::ImageDataset> bench_data(const SessionPoint& p, int64_t count) {
  const ModelEntry& e = *p.entry;
  if (p.seq == 0)
    return {data::make_synthetic(count, p.side, p.side, e.channels, e.classes, 1),
            data::make_synthetic(count, p.side, p.side, e.channels, e.classes, 2)};
  const std::vector<uint16_t> stream = data::make_synthetic_tokens(2 * count * p.seq + 1, e.classes, 1);
  const std::span<const uint16_t> all(stream);
  return {data::window_images(all.first(size_t(count * p.seq + 1)), p.seq, e.classes, "the synthetic tokens"),
          data::window_images(all.subspan(size_t(count * p.seq)), p.seq, e.classes, "the synthetic tokens")};
}

// Rank 0's device memory in use before a session and the most in use at the
// samples after it (Note [device memory]); nothing off CUDA (device < 0).
class MemorySamples {
 public:
  explicit MemorySamples(int device) : device_(device) {
    if (device_ >= 0) before_ = device_memory_used(device_);
  }
  void sample() {
    if (!before_) return;
    if (const auto used = device_memory_used(device_)) peak_ = std::max(peak_, *used);
  }
  std::optional<DeviceMemoryCounters> counters() const {
    if (!before_ || peak_ == 0) return std::nullopt;
    return DeviceMemoryCounters{double(*before_), double(peak_)};
  }

 private:
  int device_;
  std::optional<int64_t> before_;
  int64_t peak_ = 0;
};

// Every variant of one session, measured and appended to the report.
void measure_variants(const BenchOptions& o, const SessionPoint& p, const data::ImageDataset& train,
                      const data::ImageDataset& val, CuptiProbe* cupti, World* world, BenchReport& report) {
  const RunOptions ro = session_options(o, p);
  MemorySamples memory(o.backend == Backend::Cuda ? ro.first_device : -1);  // Note [device memory]
  TrainingSession t(ro, data::data_view(train), data::data_view(val));
  memory.sample();
  save_conv_plans(o.algos.conv_plans.get(), world);  // what this session timed, kept at once
  BenchDriver drive(t);
  drive.set_host_delay(std::chrono::microseconds(o.host_delay_us));
  const PreCaptureResult& pc = t.capture();
  memory.sample();
  for (Variant v : o.variants) {
    BenchCase c;
    c.model = p.model;
    c.mode = mode_name(p.mode);
    c.variant = std::string(variant_name(v));
    c.ranks = p.ranks;
    c.iterations = o.iters;
    TR_USER_CHECK(t.plans().plan(v).present(), "variant ", variant_name(v), " is not part of this run");
    c.batch = t.plans().plan(v).dims.global_batch;
    if (o.progress) std::fprintf(stderr, "\rtr-bench: %-90s", c.name(report.context.device_kind).c_str());
    Timing timing = time_variant(o, drive, v, cupti, ro.first_device, !p.part || p.part->processes() == 1);
    memory.sample();
    c.step_ms = std::move(timing.step_ms);
    c.cpu_ms = std::move(timing.cpu_ms);
    StepCounters k;
    k.launches = launch_counters(timing.last.rank0_tally, o.iters, o.backend);
    k.captured_graphs = pc.captured;
    k.unique_graphs = pc.dedup.unique;
    k.atlas_slots = pc.dedup.total_slots;
    k.reused_slots = pc.dedup.reused;
    k.arena_bytes = double(t.plans().arena_bytes);
    k.side_streams = ro.train.side_streams ? 1 : 0;
    k.capture_ms = pc.capture_ms;
    k.samples_per_second = double(c.batch) / (median(c.step_ms) * 1e-3);
    k.samples_per_second_per_gpu = k.samples_per_second / p.ranks;
    if (p.seq > 0) k.sequence = sequence_counters(t.model(), k.samples_per_second, p.ranks, report.context.device_name);
    // Note [step roofline]: the step's own FLOPs, and on a known GPU its bound.
    const std::optional<Peaks> peaks =
        o.backend == Backend::Cuda ? device_peaks(report.context.device_name, t.model().compute_dtype) : std::nullopt;
    k.roofline = step_roofline_counters(step_cost(t.model(), t.plans(), v, peaks), p.ranks, median(c.step_ms), peaks);
    warn_if_bound_beaten(c.name(report.context.device_kind), *k.roofline);
    if (timing.cupti.valid) {
      k.cupti = cupti_counters(timing.cupti, timing.cupti_wall_ms, o.iters, p.ranks, k.launches);
      // Without programmatic launch no kernel waits resident: the same repetition is the busy one.
      if (!ro.algos.programmatic_launch) k.cupti->busy = k.cupti->resident;
      c.top_kernels.assign(
          timing.cupti.kernels.begin(),
          timing.cupti.kernels.begin() + std::min<size_t>(timing.cupti.kernels.size(), size_t(o.top_kernels)));
      c.kernel_trace = std::move(timing.cupti.records);
    }
    k.allreduce = allreduce_counters(drive, v, o.iters, p.ranks);
    k.device_memory = memory.counters();
    warn_if_launches_disagree(c, report.context.device_kind, k);
    write_counters(k, c.counters);
    // Note [machine state]: rank 0's GPU (the others' run the same steps).
    for (const auto& [key, value] : machine_counters(timing.machine, o.iters, c.batch, p.seq,
                                                     timing.energy_window ? &*timing.energy_window : nullptr))
      c.counters[key] = value;
    if (p.part && p.part->processes() > 1) add_process_extremes(c, *p.part, std::chrono::milliseconds(ro.watchdog_ms));
    // Into a log (no terminal), a line per case as it ends, before the table:
    // a run cut short (a timeout, a lost machine) still says what it measured.
    if (!o.progress) {
      std::printf("measured %s: %.4f ms a step (median of %zu)\n", c.name(report.context.device_kind).c_str(),
                  median(c.step_ms), c.step_ms.size());
      std::fflush(stdout);
    }
    report.cases.push_back(std::move(c));
  }
}

// Note [busy fraction]: where the variants ran with programmatic launch, the
// session is built again without it and each variant gets one more traced
// repetition there, whose kernels wait for no predecessor while resident:
// its busy fraction counts only the kernels' own work. `cases` are the
// session's, in the order of o.variants.
void trace_without_pdl(const BenchOptions& o, const SessionPoint& p, const data::ImageDataset& train,
                       const data::ImageDataset& val, CuptiProbe& cupti, std::span<BenchCase> cases) {
  RunOptions ro = session_options(o, p);
  ro.algos.programmatic_launch = false;
  TrainingSession t(ro, data::data_view(train), data::data_view(val));
  BenchDriver drive(t);
  drive.set_host_delay(std::chrono::microseconds(o.host_delay_us));
  t.capture();
  for (size_t i = 0; i < o.variants.size() && i < cases.size(); ++i) {
    const Variant v = o.variants[i];
    drive.prime(v);
    if (o.warmup > 0) drive.steps(v, o.warmup);
    const Traced traced = traced_repetition(drive, v, o.iters, cupti, ro.first_device, false);
    if (traced.counts.valid)
      write_busy_counters(traced_busy(traced.counts, traced.wall_ms, o.iters), cases[i].counters);
  }
}

void measure_session(const BenchOptions& o, const SessionPoint& p, const data::ImageDataset& train,
                     const data::ImageDataset& val, CuptiProbe* cupti, World* world, BenchReport& report) {
  const size_t first = report.cases.size();
  measure_variants(o, p, train, val, cupti, world, report);  // its session is gone: its memory is free again
  const bool traced = first < report.cases.size() && report.cases[first].counters.count("gpu_resident_fraction");
  if (cupti && traced && o.backend == Backend::Cuda && o.algos.programmatic_launch)
    trace_without_pdl(o, p, train, val, *cupti, std::span<BenchCase>(report.cases).subspan(first));
}

}  // namespace

BenchReport run_bench(const BenchOptions& o, World* world) {
  BenchReport report;
  report.context = sweep_context(o, world);
  std::unique_ptr<CuptiProbe> cupti;
  if (o.backend == Backend::Cuda && o.cupti) cupti = CuptiProbe::create();
  const bool any_val = wants(o.variants, false, false, true);
  const bool any_last = wants(o.variants, true, false, true) || wants(o.variants, true, false, false);
  const bool any_lowres = wants(o.variants, false, true, false);
  for (const std::string& model : o.models) {
    SessionPoint p;
    p.model = model;
    p.entry = &model_entry(model);
    p.side = o.image_size > 0 ? o.image_size : p.entry->height;
    p.seq = p.entry->is_sequence() ? (o.seq > 0 ? o.seq : p.entry->context) : 0;
    p.validate = any_val;
    p.lowres = any_lowres;
    for (int ranks : o.ranks) {
      // Under a launcher: the processes this rank count needs (a collective
      // over the world; the processes left out go on to the next count).
      std::unique_ptr<World> part;
      if (world && !(part = world->first(ranks / o.per_process))) continue;
      p.ranks = ranks;
      p.part = part.get();
      for (int64_t listed : o.batches.empty() ? default_batches(*p.entry, o.backend) : o.batches) {
        p.batch = o.batch_per_rank ? listed * ranks : listed;  // global
        TR_USER_CHECK(p.batch % ranks == 0, "batch ", p.batch, " does not divide over ", ranks, " ranks");
        // Two full batches (A and B) plus, when asked for, an incomplete last one.
        const int64_t last = std::max<int64_t>(ranks, (p.batch / 2) / ranks * ranks);
        const int64_t count = 2 * p.batch + (any_last ? last : 0);
        const auto [train, val] = bench_data(p, count);
        for (ExecMode mode : o.modes) {
          p.mode = mode;
          measure_session(o, p, train, val, cupti.get(), world, report);
        }
      }
    }
  }
  if (o.progress) std::fprintf(stderr, "\r%-100s\r", "");
  if (cupti && !cupti->note().empty()) std::fprintf(stderr, "tr-bench: %s\n", cupti->note().c_str());
  add_weak_scaling(report);
  if (const ConvPlanBook* plans = o.algos.conv_plans.get()) report.context.conv_plans_digest = plans->digest();
  return report;
}

void print_summary(const BenchReport& r, std::FILE* out) {
  // Eager median per (model, variant, ranks, batch), for speedups in the same run.
  std::map<std::string, double> eager;
  auto key = [](const BenchCase& c) {
    return c.model + "/" + c.variant + "/" + std::to_string(c.ranks) + "/" + std::to_string(c.batch);
  };
  for (const auto& c : r.cases)
    if (c.mode == "eager") eager[key(c)] = median(c.step_ms);
  bool busy = false, tokens = false;
  for (const auto& c : r.cases) {
    busy = busy || c.counters.count("gpu_resident_fraction");
    tokens = tokens || c.counters.count("tokens_per_second");
  }
  std::fprintf(out, "%-8s %-16s %-11s %5s %6s %10s %8s %12s %8s %9s %9s %8s%s%s\n", "model", "mode", "variant",
               r.context.device_kind == "cuda" ? "gpus" : "ranks", "batch", "step_ms", "cv_%", "samples/s", "graphs",
               r.context.device_kind == "cuda" ? "kernels" : "nodes", "cpu_ms", "x_eager",
               busy ? "  resident      busy" : "", tokens ? "     tokens/s    mfu" : "");
  for (const auto& c : r.cases) {
    const double med = median(c.step_ms);
    const auto it = eager.find(key(c));
    // Launches one by one: kernels on CUDA (CUPTI's count when present), nodes on the CPU.
    const bool cpu = r.context.device_kind == "cpu";
    const double kern = cpu ? c.counters.at("node_launches_per_step")
                        : c.counters.count("cupti_kernel_launches_per_step")
                            ? c.counters.at("cupti_kernel_launches_per_step")
                            : c.counters.at("kernel_launches_per_step") + c.counters.at("library_calls_per_step");
    std::fprintf(out, "%-8s %-16s %-11s %5d %6lld %10.4f %8.2f %12.0f %8.1f %9.1f %9.4f %8s%s%s\n", c.model.c_str(),
                 c.mode.c_str(), c.variant.c_str(), c.ranks, static_cast<long long>(c.batch), med,
                 100.0 * cv(c.step_ms), c.counters.at("samples_per_second"), c.counters.at("graph_launches_per_step"),
                 kern, median(c.cpu_ms),
                 it == eager.end() ? "-" : cat(std::round(100.0 * it->second / med) / 100.0).c_str(),
                 busy_cells(busy, c).c_str(), token_cells(tokens, c).c_str());
  }
}

}  // namespace tr::bench
