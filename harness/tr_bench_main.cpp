// tr-bench: measures eager, partial-capture and full-capture training steps
// and writes Google-Benchmark-compatible JSON; `gate` compares two reports,
// `report` renders them as HTML.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/graph/model_registry.h"
#include "harness/lib/bench/allreduce_table.h"
#include "harness/lib/bench/bench_runner.h"
#include "harness/lib/bench/kernel_trace.h"
#include "harness/lib/bench/top_kernels.h"
#include "harness/lib/bench/weak_scaling.h"
#include "harness/lib/cli/cli_main.h"
#include "harness/lib/cli/conv_plans_file.h"
#include "harness/lib/cli/process_launch.h"
#include "harness/lib/report/atomic_file.h"
#include "harness/lib/report/gate_cli.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/report/report_cli.h"
#include "harness/lib/tta/tta_cli.h"

namespace {

int run(int argc, char** argv, tr::World* world) {
  using namespace tr::bench;
  if (argc > 1 && std::strcmp(argv[1], "gate") == 0) return gate_main(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "report") == 0) return report_main(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "tta") == 0) {
    TR_USER_CHECK(!world || world->processes() == 1,
                  "tr-bench tta runs in one process (its ranks as threads), "
                  "not under mpirun or srun with ",
                  world ? world->processes() : 0, " processes");
    return tta_main(argc - 1, argv + 1);
  }
  const BenchOptions o = parse_bench_options(argc, argv, world);
  if (o.help) {
    std::printf(kBenchUsage, tr::model_names().c_str());
    std::fputs(tr::kProcessFlagsUsage, stdout);
    return 0;
  }
  // The plans file is this run's input; the report and the trace may not
  // replace it, nor each other (Note [output paths]).
  std::vector<std::string> inputs;
  if (o.algos.conv_plans && !o.algos.conv_plans->source().empty()) inputs.push_back(o.algos.conv_plans->source());
  const bool writes_report = !o.json_path.empty() && (!world || world->process() == 0);  // one report, process 0's
  if (writes_report) tr::check_writable(o.json_path, inputs);  // before the runs, not after them
  const bool writes_trace = !o.kernel_trace_path.empty() && (!world || world->process() == 0);
  if (writes_trace) {
    TR_USER_CHECK(!writes_report || !tr::same_file(o.json_path, o.kernel_trace_path), "--kernel-trace ",
                  o.kernel_trace_path, " names the --json report's file; give each its own");
    tr::check_writable(o.kernel_trace_path, inputs);
  }
  const BenchReport r = run_bench(o, world);
  const std::string launch =
      world ? tr::cat(", ranks in ", r.context.processes, r.context.processes == 1 ? " process (" : " processes (",
                      r.context.launch, ": ", r.context.hosts, "; ", r.context.mpi_version, ")")
            : std::string();
  std::printf("tr-bench: %s on %s (%s%s), %d repetitions x %d steps after %d warm-up steps\n",
              r.context.device_kind.c_str(), r.context.device_name.c_str(), r.context.host_name.c_str(), launch.c_str(),
              o.repetitions, o.iters, o.warmup);
  if (o.algos.conv_plans) std::printf("tr-bench: %s\n", tr::conv_plans_summary(*o.algos.conv_plans).c_str());
  print_summary(r, stdout);
  print_weak_scaling(r, stdout);
  print_allreduce_table(r, stdout);
  print_top_kernels(r, stdout);
  if (writes_report) {
    write_report(r, o.json_path);
    std::printf("tr-bench: wrote %s\n", o.json_path.c_str());
  }
  if (writes_trace) {
    write_kernel_trace(r, o.kernel_trace_path);
    std::printf("tr-bench: wrote %s (kernel trace)\n", o.kernel_trace_path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return tr::run_cli_world("tr-bench", &argc, &argv, [&](tr::World* world) { return run(argc, argv, world); });
}
