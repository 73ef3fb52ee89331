#include "harness/lib/bench/bench_options.h"

#include <unistd.h>

#include <algorithm>

#include "framework/graph/model_registry.h"
#include "framework/runtime/context_factory.h"
#include "harness/lib/cli/algo_flags.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/cli/precision_flag.h"
#include "harness/lib/cli/process_agreement.h"
#include "harness/lib/cli/process_launch.h"

namespace tr::bench {

const char* kBenchUsage = R"(usage: tr-bench [run] [flags]
       tr-bench gate --baseline A.json --current B.json [--threshold X] [--alpha X]
       tr-bench report A.json [B.json ...] -o out.html
       tr-bench tta [--runs N] [--target-acc X] [training flags]   (time to accuracy; tta --help)

Measures training steps of the reference models in the three execution modes
and writes a Google-Benchmark-compatible JSON report.

  --mode M[,M..]        eager | partial-capture | full-capture | all (default all)
  --device cuda|cpu     default: cuda when a GPU is visible, else cpu
  --gpus N[,N..]|auto   GPU counts to sweep (cuda; auto = 1 and every power of two up to all)
  --ranks N[,N..]       rank-thread counts to sweep (cpu)
  --model M[,M..]       registered models (default cnn,mlp): %s
  --batch N[,N..]       global batch sizes (default: each model's, e.g. cnn 64,256,1024,4096 on
                        cuda and 32 on cpu, mlp 200, resnet50 32,64,128,256)
  --batch-per-gpu N[,N..]  batch sizes per GPU (per rank on cpu) instead: the global batch grows
                        with the GPU count (weak scaling; the table then shows its efficiency)
  --variants V[,V..]    train_base, train_last, train_lowres, train_lowres_last, val_base, val_last
                        (default train_base)
  --width X             channel multiplier of every layer (default 1.0)
  --image-size S        build every image model for S x S inputs (default: each model's own)
  --seq T               GPT models: windows of T tokens (default: each one's context, gpt2 1024);
                        they report tokens/s and model FLOP utilisation too
  --optimizer O         sgd | lars | adamw for every model (default: each model's: cnn lars,
                        mlp adamw, the others sgd)
  --bn-sync S           with several GPUs: batch (default; every BN layer all-reduces its
                        statistics, exact data parallelism) or running (per-GPU BN, the
                        statistics averaged once per step)
  --bucket-mb X         with several GPUs: all-reduce the deep gradients in buckets of X MB,
                        issued during the backward in backward order (default 25; 0: one)
  --precision P         fp32 | amp | bf16: amp is fp16 storage/compute with fp32 master
                        weights and a dynamic loss scale; bf16 is bf16 storage/compute
                        with fp32 master weights and no loss scaling
                        (default: amp on cuda, fp32 on cpu)
  --warmup N            steps before measuring (default 10 on cuda, 2 on cpu)
  --iters N             steps per repetition (default 50 on cuda, 5 on cpu)
  --repetitions N       repetitions per case (default 5: the gate needs 4 a side)
  --host-delay-us N     the host sleeps N microseconds before launching each step, as a slow
                        input pipeline would make it: the GPU idles once N exceeds its step, and
                        the busy fractions fall (default 0; recorded, and the gate compares
                        only reports with the same delay)
  --json FILE           write the report here
  --watchdog-ms N       a rank that waits this long for the others fails, naming who did not
                        arrive (default 120000)
  --no-cupti            do not use CUPTI (launch cross-check and GPU busy time)
  --top-kernels N       after the table, each case's N kernels with the most GPU time per step
                        (CUPTI's traced repetition), with their share of the step's kernel time
  --kernel-trace FILE   write every kernel of each case's traced repetition (name, stream, GPU start
                        and end) as a Chrome trace (JSON; open in Perfetto or chrome://tracing), one
                        process per case, one thread per stream
  --side-streams        weight gradients on a second stream inside the backward graphs
  --no-side-streams     weight gradients on the data-gradient stream (neither: on CUDA when
                        the batch per GPU is at most the model's measured limit, see
                        docs/design.md; never on the CPU; each case records its choice)
  --cudnn-benchmark     time the heuristics' plan against cuDNN's deterministic engine configs
                        once per convolution shape, in CUDA graphs, and keep the fastest
                        (default: the heuristics' plan); another process may keep another
                        plan, so the report records it and the gate refuses mixing
  --conv-plans FILE     convolution plans kept in FILE (CUDA only): with --cudnn-benchmark,
                        shapes in FILE take its plan, the others are timed and added to it;
                        without, every shape takes FILE's plan (a shape not in it is an
                        error). The report's conv_plans_digest names the plans that ran, and
                        the gate refuses two timed reports whose plans differ
  --split-steps         full capture launches a training step as its dozen sub-graphs
                        instead of one step graph composed of them (docs/design.md, "The step
                        loop and the step graph")
  --no-fusion           keep apart the node pairs that fusion merges (BatchNorm + residual
                        add + ReLU; gradient fan-in + ReLU backward; 2x2 max pool + the
                        BatchNorm statistics after it; BatchNorm + ReLU + the 2x2 max pool
                        after it; the classifier head and the BatchNorm before it; an fc and
                        the GELU after it, and their backward; an fc and the residual add
                        after it; a LayerNorm's backward and the gradient fan-in after it)
                        and the step's tail apart (SGD's unscale, EMA, f16 copy and BatchNorm
                        statistics; the NaN check in the AMP casts; metrics and loss scale
                        in AdvanceStep), to measure the gain
  --nondeterministic    let cuDNN pick non-deterministic algorithms too (atomics in weight
                        gradients): runs and modes are no longer bit-identical; CUDA only,
                        the report records it and the gate refuses mixing
  --no-pdl              launch our kernels without programmatic dependent launch (Hopper's
                        early launch of a dependent kernel), to measure its gain; CUDA only
  --cudnn-filter-grad   run the f16 3x3 filter gradients that tr's tensor-core kernel takes
                        through cuDNN instead, to measure its gain; CUDA only, the report
                        records it and the gate refuses mixing
  --keep-memset-nodes   leave the memset nodes of captured graphs (cuDNN's workspace
                        clears, tr's gradient clears) as they are instead of running them
                        as kernel nodes, to measure the gain; CUDA only, the report
                        records it and the gate refuses mixing
  --grid-sync           add per-channel partial sums behind a grid barrier instead of in a
                        kernel of their own, and run a BatchNorm's statistics, sum and apply
                        as one cooperative kernel (58 kernels per cnn step at batch 256
                        instead of 85); the same bits, but slower on the H200; CUDA only,
                        the report records it and the gate refuses mixing
  --help                this text

Examples:
  tr-bench --mode full-capture --gpus 8 --json h200x8.json
  tr-bench --mode all --gpus 1,2,4,8 --model cnn --batch-per-gpu 256,1024 --json scaling.json
  tr-bench --mode all --gpus 1,2,4,8 --model cnn --batch-per-gpu 1024 --bn-sync running
  tr-bench --model resnet50 --batch 32,256 --optimizer sgd --json resnet50.json
  tr-bench --model cnn,mlp --batch 256 --repetitions 10 --json run.json
  tr-bench gate --baseline reports/baselines/cpu_counters.json --current run.json --counters-only
  tr-bench report run.json -o run.html
  nsys profile --capture-range=cudaProfilerApi --cuda-graph-trace=node tr-bench --mode full-capture
)";

namespace {

std::vector<int64_t> int_list(const std::string& flag, const std::string& s, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  std::vector<std::string> values;
  for (const auto& it : list_items(flag, s)) {
    const auto v = parse_int(it);
    TR_USER_CHECK(v.has_value(), flag, " expects integers, got '", it, "'");
    TR_USER_CHECK(*v >= lo && *v <= hi, flag, " values must be in [", lo, ", ", hi, "], got ", *v);
    out.push_back(*v);
    values.push_back(std::to_string(*v));
  }
  check_distinct(flag, values);  // 8,08
  return out;
}

// --mode's list, where `all` stands for every mode: `all,eager` names eager twice.
std::vector<ExecMode> mode_list(const std::string& s) {
  const std::vector<std::string> items = list_items("--mode", s);
  std::vector<ExecMode> modes;
  for (const auto& m : items) {
    if (m == "all") {
      for (ExecMode e : {ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}) modes.push_back(e);
    } else {
      modes.push_back(parse_mode(m));
    }
  }
  std::vector<std::string> names;
  for (ExecMode m : modes) names.push_back(mode_name(m));
  const bool has_all = std::find(items.begin(), items.end(), "all") != items.end();
  check_distinct("--mode", names, has_all ? " (all includes it)" : "");
  return modes;
}

Variant parse_variant(const std::string& s) {
  for (Variant v : kAllVariants)
    if (variant_name(v) == s) return v;
  throw UserError(cat("unknown variant '", s,
                      "' (expected train_base, train_last, train_lowres, train_lowres_last, "
                      "val_base or val_last)"));
}

// The rank counts under a launcher: every process's ranks by default; auto:
// the first 1, 2, 4 ... processes (and all); a list: multiples of the ranks
// per process, up to all of them.
std::vector<int> launched_ranks(const CliArgs& a, World* world, Backend b, int* per_process) {
  const ProcessRanks pr = process_ranks(a, world, b);
  *per_process = pr.per_process;
  const char* flag = b == Backend::Cuda ? "--gpus" : "--ranks";
  TR_USER_CHECK(!a.has(b == Backend::Cuda ? "--ranks" : "--gpus"),
                b == Backend::Cuda ? "--ranks is for --device cpu; use --gpus"
                                   : "--gpus needs --device cuda; use --ranks on the CPU");
  const std::string g = a.str(flag, std::to_string(pr.total));
  std::vector<int> ranks;
  if (g == "auto") {
    for (int p = 1; p <= world->processes(); p *= 2) ranks.push_back(p * pr.per_process);
    if (ranks.back() != pr.total) ranks.push_back(pr.total);
    return ranks;
  }
  for (int64_t n : int_list(flag, g, 1, 4096)) {
    TR_USER_CHECK(n <= pr.total && n % pr.per_process == 0, flag, " ", n, ": under ", world->processes(),
                  " processes x ", pr.per_process, " ranks each, a rank count is a multiple of ", pr.per_process,
                  " up to ", pr.total);
    ranks.push_back(static_cast<int>(n));
  }
  return ranks;
}

// The rank counts of a sweep without a launcher: --gpus on CUDA (or every
// power of two up to all with auto), --ranks on the CPU.
std::vector<int> unlaunched_ranks(const CliArgs& a, Backend backend) {
  std::vector<int> ranks;
  (void)process_ranks(a, nullptr, backend);  // refuses --gpus-per-process without a launcher
  if (backend == Backend::Cpu) {
    TR_USER_CHECK(!a.has("--gpus"), "--gpus needs --device cuda; use --ranks on the CPU");
    for (int64_t n : int_list("--ranks", a.str("--ranks", "1"), 1, 64)) ranks.push_back(static_cast<int>(n));
    return ranks;
  }
  TR_USER_CHECK(!a.has("--ranks"), "--ranks is for --device cpu; use --gpus");
  const std::string g = a.str("--gpus", "1");
  // The list itself before the GPU count: its form is wrong on any machine.
  const std::vector<int64_t> asked = g == "auto" ? std::vector<int64_t>{} : int_list("--gpus", g, 1, 1024);
  const int gpus = cuda_device_count();
  TR_USER_CHECK(gpus > 0, "--device cuda but no CUDA GPU is visible");
  if (g == "auto") {
    for (int n = 1; n <= gpus; n *= 2) ranks.push_back(n);
    if (ranks.back() != gpus) ranks.push_back(gpus);
    return ranks;
  }
  for (int64_t n : asked) {
    TR_USER_CHECK(n <= gpus, "--gpus asks for ", n, " GPUs but ", gpus, " are visible");
    ranks.push_back(static_cast<int>(n));
  }
  return ranks;
}

// What is swept and how each session trains: modes, models, batches,
// variants, the model's size, optimizer, BatchNorm, buckets, precision.
void parse_sweep(const CliArgs& a, BenchOptions& o) {
  o.modes = mode_list(a.str("--mode", "all"));
  o.models.clear();
  for (const auto& m : list_items("--model", a.str("--model", "cnn,mlp")))
    o.models.push_back(std::string(model_entry(m).name));
  TR_USER_CHECK(!(a.has("--batch") && a.has("--batch-per-gpu")), "give --batch (global) or --batch-per-gpu, not both");
  if (a.has("--batch")) o.batches = int_list("--batch", a.str("--batch", ""), 1, 1 << 20);
  if (a.has("--batch-per-gpu")) {
    o.batches = int_list("--batch-per-gpu", a.str("--batch-per-gpu", ""), 1, 1 << 20);
    o.batch_per_rank = true;
  }
  if (a.has("--variants")) {
    o.variants.clear();
    for (const auto& v : list_items("--variants", a.str("--variants", ""))) o.variants.push_back(parse_variant(v));
  }
  o.width = a.real("--width", 1.0, 1e-3, 16.0);
  o.image_size = static_cast<int>(a.integer("--image-size", 0, 1, 4096));
  o.seq = a.integer("--seq", 0, 1, int64_t(1) << 24);
  bool images = false, sequences = false;
  for (const std::string& m : o.models) (model_entry(m).is_sequence() ? sequences : images) = true;
  TR_USER_CHECK(!a.has("--image-size") || images, "--image-size is for image models; the models swept read tokens");
  TR_USER_CHECK(!a.has("--seq") || sequences, "--seq is for GPT models; the models swept read images");
  TR_USER_CHECK(!a.has("--cnn-optimizer"), "--cnn-optimizer is now --optimizer (it applies to every model swept)");
  if (a.has("--optimizer")) o.optimizer = parse_optimizer(a.str("--optimizer", ""));
  o.bn_sync = parse_bn_sync(a.str("--bn-sync", "batch"));
  o.bucket_mb = a.real("--bucket-mb", 25.0, 0.0, 1e6);
  o.precision = a.str("--precision", o.backend == Backend::Cuda ? "amp" : "fp32");
  TrainConfig checked;
  set_precision(o.precision, checked);  // refuses a name it does not know, before any case runs
}

// How each case is measured and what is written: steps, repetitions, the
// report, CUPTI and its kernel tables and trace.
void parse_measurement(const CliArgs& a, BenchOptions& o) {
  // The default sweep fits the device: a few minutes on a GPU, about a minute
  // on a 2-core CPU.
  const bool gpu = o.backend == Backend::Cuda;
  o.warmup = static_cast<int>(a.integer("--warmup", gpu ? 10 : 2, 0, 1000000));
  o.iters = static_cast<int>(a.integer("--iters", gpu ? 50 : 5, 1, 1000000));
  o.repetitions = static_cast<int>(a.integer("--repetitions", 5, 1, 1000));
  o.host_delay_us = a.integer("--host-delay-us", 0, 0, 10000000);
  o.json_path = a.str("--json", "");
  o.cupti = !a.flag("--no-cupti");
  o.top_kernels = static_cast<int>(a.integer("--top-kernels", 0, 0, 1000));
  TR_USER_CHECK(o.top_kernels == 0 || (o.cupti && gpu),
                "--top-kernels needs CUPTI on a GPU (--device cuda, without --no-cupti)");
  o.kernel_trace_path = a.str("--kernel-trace", "");
  TR_USER_CHECK(!a.has("--kernel-trace") || !o.kernel_trace_path.empty(), "--kernel-trace needs a file name");
  TR_USER_CHECK(o.kernel_trace_path.empty() || (o.cupti && gpu),
                "--kernel-trace needs CUPTI on a GPU (--device cuda, without --no-cupti)");
  TR_USER_CHECK(o.kernel_trace_path.empty() || o.kernel_trace_path != o.json_path,
                "--kernel-trace and --json name the same file '", o.json_path, "'");
}

}  // namespace

BenchOptions parse_bench_options(int argc, char** argv, World* world) {
  std::vector<std::string> values = {
      "--mode",          "--device",       "--gpus",       "--ranks",       "--model",
      "--batch",         "--variants",     "--width",      "--warmup",      "--iters",
      "--repetitions",   "--json",         "--precision",  "--optimizer",   "--cnn-optimizer",
      "--batch-per-gpu", "--bn-sync",      "--image-size", "--seq",         "--bucket-mb",
      "--top-kernels",   "--kernel-trace", "--conv-plans", "--watchdog-ms", "--host-delay-us"};
  for (const std::string& p : process_value_flags()) values.push_back(p);
  CliArgs a(argc, argv, values,
            {"--no-cupti", "--side-streams", "--no-side-streams", "--split-steps", "--cudnn-benchmark", "--no-fusion",
             "--nondeterministic", "--no-pdl", "--cudnn-filter-grad", "--keep-memset-nodes", "--grid-sync", "--help"});
  BenchOptions o;
  for (int i = 0; i < argc; ++i) {
    if (i) o.command_line += ' ';
    o.command_line += argv[i];
  }
  if (a.flag("--help")) {
    o.help = true;
    return o;
  }
  o.watchdog_ms = a.integer("--watchdog-ms", o.watchdog_ms, 100, 86400000);
  // Before anything else that the processes do together (Note [processes agree]).
  if (world) check_processes_agree(*world, run_settings("tr-bench", a), std::chrono::milliseconds(o.watchdog_ms));
  TR_USER_CHECK(a.positional().empty() || (a.positional().size() == 1 && a.positional()[0] == "run"),
                "unexpected argument '", a.positional().empty() ? "" : a.positional().back(), "' (see --help)");
  // The GPUs are counted only where they matter: --device cpu runs on a
  // machine whose driver cannot count them.
  const std::string device = a.has("--device") ? a.str("--device", "") : cuda_device_count() > 0 ? "cuda" : "cpu";
  TR_USER_CHECK(device == "cuda" || device == "cpu", "--device must be cuda or cpu, got '", device, "'");
  o.backend = device == "cuda" ? Backend::Cuda : Backend::Cpu;
  o.ranks = world ? launched_ranks(a, world, o.backend, &o.per_process) : unlaunched_ranks(a, o.backend);
  parse_sweep(a, o);
  parse_measurement(a, o);
  o.side_streams = side_streams_flag(a);
  o.step_graphs = !a.flag("--split-steps");
  o.fusion = !a.flag("--no-fusion");
  o.algos = algo_flags(a, o.backend);
  o.progress = isatty(2) != 0;
  return o;
}

}  // namespace tr::bench
