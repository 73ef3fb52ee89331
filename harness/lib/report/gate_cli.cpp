#include "harness/lib/report/gate_cli.h"

#include <cstdio>

#include "framework/core/error.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/report/gate.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/tta/tta_report.h"

namespace tr::bench {

namespace {

// A step-time report with cases: a time-to-accuracy report is not gated, and
// an empty one would pass any gate.
BenchReport read_gateable_report(const std::string& path) {
  const nlohmann::json j = read_json_file(path, "report");
  if (is_tta_json(j))
    throw UserError(cat("report '", path,
                        "' is a time-to-accuracy report (tr-bench tta); the gate compares "
                        "step-time reports of tr-bench runs only"));
  BenchReport r = report_from_json(j, path);
  TR_USER_CHECK(!r.cases.empty(), "report '", path, "' holds no cases: there is nothing to gate");
  return r;
}

constexpr const char* kUsage =
    "usage: tr-bench gate --baseline A.json --current B.json [--threshold 0.05] [--alpha 0.05]\n"
    "                     [--counters-only] [--allow-launch-mismatch]\n"
    "\n"
    "Compares two tr-bench JSON reports of the same device, build type and cases.\n"
    "  deterministic counters (launches, graphs, arena bytes ...) must match exactly;\n"
    "  a case's step time regresses when its median grew by more than --threshold\n"
    "  (a fraction: 0.05 = 5%) and the Mann-Whitney U test over the repetitions gives\n"
    "  p < --alpha. Reports with too few repetitions for any p below --alpha are refused\n"
    "  (4 a side for alpha 0.05; the error says how many).\n"
    "  --counters-only judges the deterministic counters alone (a noisy shared machine).\n"
    "  --allow-launch-mismatch compares reports whose ranks ran differently (threads of one\n"
    "  process, processes under mpirun/srun, several nodes); refused otherwise.\n"
    "exit: 0 no regression, 1 regression, 2 the reports could not be compared\n";

int run(int argc, char** argv) {
  const CliArgs a(argc, argv, {"--baseline", "--current", "--threshold", "--alpha"},
                  {"--counters-only", "--allow-launch-mismatch", "--help"});
  if (a.flag("--help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  TR_USER_CHECK(a.positional().empty(), "unexpected argument '", a.positional().empty() ? "" : a.positional()[0],
                "' (reports are given with --baseline and --current)");
  TR_USER_CHECK(a.has("--baseline"), "--baseline is required");
  TR_USER_CHECK(a.has("--current"), "--current is required");
  GateOptions opt;
  opt.threshold = a.real("--threshold", opt.threshold, 0, 100);
  opt.alpha = a.real("--alpha", opt.alpha, 0, 1);
  TR_USER_CHECK(opt.alpha > 0, "--alpha must be above 0 (no test reaches p < 0)");
  opt.counters_only = a.flag("--counters-only");
  opt.allow_launch_mismatch = a.flag("--allow-launch-mismatch");
  const std::string base_path = a.str("--baseline", ""), cur_path = a.str("--current", "");
  const BenchReport baseline = read_gateable_report(base_path);
  const BenchReport current = read_gateable_report(cur_path);
  const GateResult res = run_gate(baseline, current, opt);
  std::printf("tr-bench gate: baseline %s vs current %s\n%s", base_path.c_str(), cur_path.c_str(),
              format_gate_table(res, opt).c_str());
  std::fflush(stdout);
  return res.regressed() ? 1 : 0;
}

}  // namespace

int gate_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::fprintf(stderr, "tr-bench gate: error: %s\n", e.what());
  } catch (const std::exception& e) {
    // Not 1: that code means "regression" to CI.
    std::fprintf(stderr, "tr-bench gate: internal error: %s\n", e.what());
  }
  return 2;
}

}  // namespace tr::bench
