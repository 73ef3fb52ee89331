#pragma once
// The performance gate: compares a current BenchReport with a baseline and
// says, per case, what regressed. Pure logic (no files); gate_cli.h is the
// `tr-bench gate` command around it. The rules (also in reports/schema.md):
//
//  1. Reports are comparable only when their context agrees on the device,
//     the build type and every setting that changes the step (precision,
//     BN sync, buckets, fusion, algorithms, launch, ...; the full list is in
//     check_comparable and reports/schema.md, "The gate"), and they hold the
//     same set of cases; otherwise check_comparable throws a one-line
//     UserError (exit 2) that names every difference. Other context
//     differences (driver, library versions, host) are notes, not refusals.
//  2. Deterministic counters (is_deterministic_counter) must be identical per
//     case: any change, or a counter that disappeared, is a regression naming
//     both values. A counter that only the current report has is "new".
//  3. Step time (real_time): a case regresses when its median grew by more
//     than `threshold` (relative) AND the two-sided Mann-Whitney U test over
//     the repetitions gives p < alpha. The same shrink with p < alpha is an
//     improvement; a change beyond the threshold with p >= alpha is "not
//     significant". Repetitions too few for any p below alpha (3 vs 3
//     reach 0.1 at best) are refused up front (check_timing_power): a gate
//     that cannot fail is not run. --counters-only skips rule 3.
//  Measured counters (samples/s, capture time, ...) are not gated: they follow
//  the step time or are noisy by nature.
#include <string>
#include <vector>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

struct GateOptions {
  double threshold = 0.05;     // relative growth of the median step time that counts
  double alpha = 0.05;         // significance level of the U test
  bool counters_only = false;  // judge deterministic counters only (CI on a shared, noisy machine)
  // Compare a multi-process report with a threads report (or processes with
  // nodes): their step times differ by the launch, not by the code.
  bool allow_launch_mismatch = false;
};

enum class Verdict {
  kOk,  // unchanged (counters) or within the threshold (timing)
  kRegression,
  kImprovement,
  kNotSignificant,  // timing moved beyond the threshold but p >= alpha
  kNotJudged,       // timing: too few repetitions for the U test
  kNew,             // deterministic counter only in the current report
};
const char* verdict_name(Verdict v);

struct GateRow {
  std::string case_name;
  std::string metric;             // "step time median (ms)" or a counter name
  std::string baseline, current;  // formatted values ("missing" when absent)
  std::string change;             // "+10.0%", "+2 (+1.5%)", ...
  Verdict verdict = Verdict::kOk;
  std::string detail;  // p-value and repetitions, or why not judged
  double p_value = 1;  // timing rows with a decided test
};

struct GateResult {
  std::vector<GateRow> rows;       // per case (baseline order): timing, then counters
  std::vector<std::string> notes;  // context differences that do not block comparing
  int cases = 0;
  int regressions = 0, improvements = 0, not_significant = 0, not_judged = 0;
  bool regressed() const { return regressions > 0; }
};

// Throws UserError naming every blocking difference (rule 1).
void check_comparable(const BenchReport& baseline, const BenchReport& current, bool counters_only = false,
                      bool allow_launch_mismatch = false);

// Throws UserError when some case's repetitions (baseline vs current) could
// not give p < alpha even for completely separated samples, naming the case
// and the repetitions needed (rule 3).
void check_timing_power(const BenchReport& baseline, const BenchReport& current, double alpha);

// check_comparable, check_timing_power unless counters_only, then rules 2 and 3.
GateResult run_gate(const BenchReport& baseline, const BenchReport& current, const GateOptions& opt);

// An aligned table (case, metric, baseline, current, change, verdict, detail),
// the notes above it and a one-line summary below it.
std::string format_gate_table(const GateResult& result, const GateOptions& opt);

}  // namespace tr::bench
