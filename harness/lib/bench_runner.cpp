#include "harness/lib/bench_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "datasets/data_view.h"
#include "datasets/synthetic.h"
#include "framework/graph/model_registry.h"
#include "framework/runtime/nvtx.h"
#include "framework/train/session.h"
#include "harness/lib/bench_driver.h"
#include "harness/lib/busy_fraction.h"
#include "harness/lib/context_info.h"
#include "harness/lib/conv_plans_file.h"
#include "harness/lib/cupti_probe.h"
#include "harness/lib/launch_crosscheck.h"
#include "harness/lib/process_launch.h"
#include "harness/lib/process_counters.h"
#include "harness/lib/profiler_range.h"
#include "harness/lib/statistics.h"
#include "harness/lib/allreduce_table.h"
#include "harness/lib/weak_scaling.h"

namespace tr::bench {
namespace {

// Traced steps run before the traced repetition and not recorded (Note [busy
// fraction]): every graph of a step has had its first traced launch by then.
constexpr int64_t kTracedWarmupSteps = 3;

const std::vector<int64_t>& default_batches(const ModelEntry& e, Backend b) {
  return b == Backend::Cuda ? e.gpu_batches : e.cpu_batches;
}

// The summary's GPU busy column: empty when no case has it, "-" for a case without it.
std::string busy_cell(bool column, const double* v) {
  if (!column) return "";
  char buf[32];
  if (v == nullptr) {
    std::snprintf(buf, sizeof buf, " %9s", "-");
  } else {
    std::snprintf(buf, sizeof buf, " %9.3f", *v);
  }
  return buf;
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

}  // namespace

BenchReport run_bench(const BenchOptions& o, World* world) {
  BenchReport report;
  report.context = collect_context(o.backend, o.command_line, world);
  report.context.precision = o.amp ? "amp" : "fp32";
  report.context.bn_sync = bn_sync_name(o.bn_sync);
  report.context.bucket_mb = o.bucket_mb;
  // A replayed --conv-plans file holds timed plans too.
  const ConvPlanBook* plans = o.algos.conv_plans.get();
  report.context.cudnn_benchmark = o.algos.benchmark || (plans && plans->use() == ConvPlanUse::Replay);
  if (plans) report.context.conv_plans_file = plans->source();
  report.context.fusion = o.fusion;
  report.context.deterministic = o.algos.deterministic;
  report.context.programmatic_launch = o.backend == Backend::Cuda && o.algos.programmatic_launch;
  report.context.tc_filter_grad = o.backend == Backend::Cuda && o.algos.tc_filter;
  report.context.memset_kernels = o.backend == Backend::Cuda && o.algos.memset_kernels;
  report.context.grid_sync = o.backend == Backend::Cuda && o.algos.grid_sync;
  // On the CPU, auto always means off: say what ran.
  report.context.side_streams = o.backend == Backend::Cpu && o.side_streams == SideStreams::Auto
                                    ? "off"
                                    : side_streams_name(o.side_streams);
  std::unique_ptr<CuptiProbe> cupti;
  if (o.backend == Backend::Cuda && o.cupti) cupti = CuptiProbe::create();
  const bool any_val = wants(o.variants, false, false, true);
  const bool any_last = wants(o.variants, true, false, true) || wants(o.variants, true, false, false);
  const bool any_lowres = wants(o.variants, false, true, false);

  for (const std::string& model : o.models) {
    const ModelEntry& entry = model_entry(model);
    const int side = o.image_size > 0 ? o.image_size : entry.height;
    const auto batches = o.batches.empty() ? default_batches(entry, o.backend) : o.batches;
    for (int ranks : o.ranks) {
      // Under a launcher: the processes this rank count needs (a collective
      // over the world; the processes left out go on to the next count).
      std::unique_ptr<World> part;
      if (world) {
        part = world->first(ranks / o.per_process);
        if (!part) continue;
      }
      for (int64_t listed : batches) {
        const int64_t batch = o.batch_per_rank ? listed * ranks : listed;  // global
        TR_USER_CHECK(batch % ranks == 0, "batch ", batch, " does not divide over ", ranks, " ranks");
        // Two full batches (A and B) plus, when asked for, an incomplete last one.
        const int64_t last = std::max<int64_t>(ranks, (batch / 2) / ranks * ranks);
        const int64_t count = 2 * batch + (any_last ? last : 0);
        const auto train = data::make_synthetic(count, side, side, entry.channels, entry.classes, 1);
        const auto val = data::make_synthetic(count, side, side, entry.channels, entry.classes, 2);
        for (ExecMode mode : o.modes) {
          RunOptions ro;
          ro.model = model_config(model, o.width, side);
          ro.train.optimizer = o.optimizer.value_or(entry.bench_optimizer);
          ro.train.amp = o.amp;
          ro.train.side_streams = use_side_streams(o.side_streams, o.backend, entry, batch / ranks);
          ro.train.fusion = o.fusion;
          ro.algos = o.algos;
          ro.train.bn_sync = o.bn_sync;
          ro.train.bucket_bytes = int64_t(o.bucket_mb * 1048576.0);
          ro.step_graphs = o.step_graphs;
          ro.train.init_loss_scale = o.amp ? 65536.f : 1.f;
          ro.train.ranks = ranks;
          ro.watchdog_ms = static_cast<int>(o.watchdog_ms);
          ro.world = part.get();
          if (part) ro.first_device = first_device_of(*part, o.per_process);
          ro.backend = o.backend;
          ro.mode = mode;
          ro.batch = batch;
          ro.epochs = 2;
          ro.lowres_epochs = any_lowres ? 1 : 0;
          ro.lowres_size = side * 5 / 7;
          ro.validate = any_val;
          ro.lr.base_lr = default_lr(ro.train.optimizer);
          TrainingSession t(ro, data::data_view(train), data::data_view(val));
          save_conv_plans(o.algos.conv_plans.get(), world);  // what this session timed, kept at once
          BenchDriver drive(t);
          const PreCaptureResult& pc = t.capture();
          for (Variant v : o.variants) {
            BenchCase c;
            c.model = model;
            c.mode = mode_name(mode);
            c.variant = std::string(variant_name(v));
            c.ranks = ranks;
            c.iterations = o.iters;
            TR_USER_CHECK(t.plans().plan(v).present(), "variant ", variant_name(v), " is not part of this run");
            c.batch = t.plans().plan(v).dims.global_batch;
            if (o.progress) std::fprintf(stderr, "\rtr-bench: %-90s", c.name(report.context.device_kind).c_str());
            drive.prime(v);
            {
              nvtx::Range r(nvtx::Phase::Warmup);
              if (o.warmup > 0) drive.steps(v, o.warmup);
            }
            BenchDriver::Stats last_stats;
            {
              nvtx::Range r(nvtx::Phase::Measure);
              ProfilerRange pr(o.backend);  // cudaProfilerStart/Stop around the steady state
              for (int rep = 0; rep < o.repetitions; ++rep) {
                last_stats = drive.steps(v, o.iters);
                c.step_ms.push_back(1e3 * last_stats.wall_s / o.iters);
                c.cpu_ms.push_back(1e3 * last_stats.rank0_cpu_s / o.iters);
              }
            }
            // CUPTI tracing perturbs timing, so it gets one extra repetition of
            // its own: launch counts and GPU busy time come from there. A few
            // traced steps before it are not recorded: they take CUPTI's setup
            // of each graph on its first traced launch (Note [busy fraction]).
            CuptiCounts cc;
            double cupti_wall_ms = 0;
            if (cupti) {
              cupti->start(ro.first_device, !o.kernel_trace_path.empty());  // rank 0's GPU
              drive.steps(v, kTracedWarmupSteps);
              cupti->record();
              cupti_wall_ms = 1e3 * drive.steps(v, o.iters).wall_s;
              cc = cupti->stop();
            }
            const double per = 1.0 / o.iters;
            const LaunchTally& l = last_stats.rank0_tally;
            auto& k = c.counters;
            k["graph_launches_per_step"] = double(l.graph_launches) * per;
            k["kernel_launches_per_step"] = double(l.kernels) * per;
            k["library_calls_per_step"] = double(l.library_calls) * per;
            k["memcpy_per_step"] = double(l.memcpys) * per;
            k["memset_per_step"] = double(l.memsets) * per;
            k["event_ops_per_step"] = double(l.event_ops) * per;
            k["node_launches_per_step"] = double(l.nodes) * per;
            // Host submissions: on CUDA every call that enqueues device work; on the
            // CPU a node run one by one counts as one launch, a replayed graph as one.
            k["cpu_launches_per_step"] =
                o.backend == Backend::Cuda
                    ? double(l.graph_launches + l.kernels + l.library_calls + l.memcpys + l.memsets) * per
                    : double(l.graph_launches + l.nodes) * per;
            k["captured_graphs"] = pc.captured;
            k["unique_graphs"] = pc.dedup.unique;
            k["atlas_slots"] = pc.dedup.total_slots;
            k["reused_slots"] = pc.dedup.reused;
            k["arena_bytes"] = double(t.plans().arena_bytes);
            k["side_streams"] = ro.train.side_streams ? 1 : 0;
            k["capture_ms"] = pc.capture_ms;
            const double med = median(c.step_ms);
            k["samples_per_second"] = double(c.batch) / (med * 1e-3);
            k["samples_per_second_per_gpu"] = k["samples_per_second"] / ranks;
            if (cc.valid) {
              const double steps = double(o.iters);
              const double wall_ms = cupti_wall_ms;
              // Every rank thread launches the same, and CUPTI counts them all:
              // per rank, to compare with rank 0's own tally.
              k["cupti_kernel_launches_per_step"] = double(cc.kernel_launches) / steps / ranks;
              k["cupti_graph_launches_per_step"] = double(cc.graph_launches) / steps / ranks;
              k["cupti_memcpy_per_step"] = double(cc.memcpy_async) / steps / ranks;
              k["gpu_kernel_ms_per_step"] = cc.kernel_ms_sum / steps;
              // Note [busy fraction] (busy_fraction.h): kernel time over the
              // span of the same traced repetition's kernels, at most 1; the
              // traced step time (host wall) is kept beside the untraced one
              // (real_time), and the idle time the fraction leaves per step.
              const BusyFraction busy = busy_fraction(cc.kernel_ms_union, cc.kernel_ms_span);
              k["gpu_busy_fraction"] = busy.value;
              if (busy.raw) k["gpu_busy_fraction_raw"] = *busy.raw;
              k["gpu_idle_us_per_step"] = 1e3 * (cc.kernel_ms_span - cc.kernel_ms_union) / steps;
              k["traced_step_ms"] = wall_ms / steps;
              k["gpu_kernels_per_step"] = double(cc.kernels_executed) / steps;
              c.top_kernels.assign(cc.kernels.begin(),
                                   cc.kernels.begin() + std::min<size_t>(cc.kernels.size(), size_t(o.top_kernels)));
              c.kernel_trace = std::move(cc.records);
              // Cross-check (launch_crosscheck.h).
              const double ours_k = k["kernel_launches_per_step"] + k["library_calls_per_step"];
              const double cupti_k = k["cupti_kernel_launches_per_step"];
              const bool ok = launch_counts_agree(
                  {k["graph_launches_per_step"], k["memcpy_per_step"], ours_k},
                  {k["cupti_graph_launches_per_step"], k["cupti_memcpy_per_step"], cupti_k});
              k["launch_crosscheck_ok"] = ok ? 1 : 0;
              if (!ok)
                std::fprintf(stderr, "tr-bench: warning: %s: framework and CUPTI launch counts disagree "
                             "(graphs %g vs %g, memcpys %g vs %g, kernels %g vs %g)\n",
                             c.name(report.context.device_kind).c_str(), k["graph_launches_per_step"],
                             k["cupti_graph_launches_per_step"], k["memcpy_per_step"], k["cupti_memcpy_per_step"],
                             ours_k, cupti_k);
            }
            // Data parallel: the gradient all-reduce inside the step and alone
            // (Note [all-reduce bandwidth], allreduce_table.h).
            const auto msgs = drive.grad_allreduce_messages(v);
            if (!msgs.empty()) {
              double bytes = 0;
              for (const auto& m : msgs) bytes += double(m.bytes());
              const auto at = drive.allreduce(v, o.iters);
              k["grad_allreduce_bytes_per_step"] = bytes;
              k["grad_allreduce_messages_per_step"] = double(msgs.size());
              k["grad_allreduce_ms_per_step"] = at.in_step_ms;
              k["allreduce_alone_ms_per_step"] = at.alone_ms;
              k["grad_allreduce_busbw_gbps"] = bus_bandwidth_gbps(bytes, ranks, at.in_step_ms);
              k["allreduce_alone_busbw_gbps"] = bus_bandwidth_gbps(bytes, ranks, at.alone_ms);
              // Note [gradient buckets]: the buckets issued inside the backward overlap it
              // and are not in the timing above.
              double early = 0;
              const auto in_bwd = drive.in_backward_messages(v);
              for (const auto& m : in_bwd) early += double(m.bytes());
              k["grad_allreduce_in_backward_bytes_per_step"] = early;
              k["grad_allreduce_in_backward_messages_per_step"] = double(in_bwd.size());
            }
            if (part && part->processes() > 1)
              add_process_extremes(c, *part, std::chrono::milliseconds(ro.watchdog_ms));
            report.cases.push_back(std::move(c));
          }
        }
      }
    }
  }
  if (o.progress) std::fprintf(stderr, "\r%-100s\r", "");
  if (cupti && !cupti->note().empty()) std::fprintf(stderr, "tr-bench: %s\n", cupti->note().c_str());
  add_weak_scaling(report);
  if (plans) report.context.conv_plans_digest = plans->digest();
  return report;
}

void print_summary(const BenchReport& r, std::FILE* out) {
  // Eager median per (model, variant, ranks, batch), for speedups in the same run.
  std::map<std::string, double> eager;
  auto key = [](const BenchCase& c) { return c.model + "/" + c.variant + "/" + std::to_string(c.ranks) + "/" + std::to_string(c.batch); };
  for (const auto& c : r.cases)
    if (c.mode == "eager") eager[key(c)] = median(c.step_ms);
  bool busy = false;
  for (const auto& c : r.cases) busy = busy || c.counters.count("gpu_busy_fraction");
  std::fprintf(out, "%-8s %-16s %-11s %5s %6s %10s %8s %12s %8s %9s %9s %8s%s\n", "model", "mode", "variant",
               r.context.device_kind == "cuda" ? "gpus" : "ranks", "batch", "step_ms", "cv_%", "samples/s",
               "graphs", r.context.device_kind == "cuda" ? "kernels" : "nodes", "cpu_ms", "x_eager",
               busy ? "  gpu_busy" : "");
  for (const auto& c : r.cases) {
    const double med = median(c.step_ms);
    const auto it = eager.find(key(c));
    // Launches one by one: kernels on CUDA (CUPTI's count when present), nodes on the CPU.
    const bool cpu = r.context.device_kind == "cpu";
    const double kern = cpu ? c.counters.at("node_launches_per_step")
                        : c.counters.count("cupti_kernel_launches_per_step")
                            ? c.counters.at("cupti_kernel_launches_per_step")
                            : c.counters.at("kernel_launches_per_step") + c.counters.at("library_calls_per_step");
    const auto b = c.counters.find("gpu_busy_fraction");
    std::fprintf(out, "%-8s %-16s %-11s %5d %6lld %10.4f %8.2f %12.0f %8.1f %9.1f %9.4f %8s%s\n", c.model.c_str(),
                 c.mode.c_str(), c.variant.c_str(), c.ranks, static_cast<long long>(c.batch), med,
                 100.0 * cv(c.step_ms), c.counters.at("samples_per_second"),
                 c.counters.at("graph_launches_per_step"), kern, median(c.cpu_ms),
                 it == eager.end() ? "-" : cat(std::round(100.0 * it->second / med) / 100.0).c_str(),
                 busy_cell(busy, b == c.counters.end() ? nullptr : &b->second).c_str());
  }
}

}  // namespace tr::bench
