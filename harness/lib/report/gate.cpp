#include "harness/lib/report/gate.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "framework/core/error.h"
#include "harness/lib/bench/nvml.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kRegression: return "REGRESSION";
    case Verdict::kImprovement: return "improved";
    case Verdict::kNotSignificant: return "not significant";
    case Verdict::kNotJudged: return "not judged";
    case Verdict::kNew: return "new";
  }
  return "?";
}

namespace {

// Shortest text that reads back as the same double: counters are compared
// exactly, so the printed values must show any difference.
std::string exact(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string fixed(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string ms(double v) { return v >= 1000 ? fixed("%.1f", v) : fixed("%.4g", v); }

std::string percent(double rel) {
  if (std::isinf(rel)) return rel > 0 ? "+inf%" : "-inf%";
  return fixed("%+.1f%%", rel * 100);
}

double relative_change(double base, double cur) {
  if (base == cur) return 0;
  if (base == 0) return cur > 0 ? INFINITY : -INFINITY;
  return (cur - base) / std::abs(base);
}

std::string reps(size_t a, size_t b) { return cat(a, " vs ", b, " reps"); }

void add_timing_row(GateResult& res, const std::string& name, const BenchCase& b, const BenchCase& c,
                    const GateOptions& opt) {
  GateRow row;
  row.case_name = name;
  row.metric = "step time median (ms)";
  const double mb = median(b.step_ms), mc = median(c.step_ms);
  row.baseline = ms(mb);
  row.current = ms(mc);
  const double rel = relative_change(mb, mc);
  row.change = percent(rel);
  const MannWhitney t = mann_whitney_u(b.step_ms, c.step_ms);
  if (opt.counters_only) {
    row.verdict = Verdict::kNotJudged;
    row.detail = "--counters-only";
    ++res.not_judged;
  } else if (!t.decidable) {
    row.verdict = Verdict::kNotJudged;
    row.detail = cat(reps(b.step_ms.size(), c.step_ms.size()), "; the U test needs >= ", kMinRepetitionsForUTest,
                     " on each side");
    ++res.not_judged;
  } else {
    row.p_value = t.p_value;
    row.detail = cat("p=", fixed("%.3g", t.p_value), ", ", reps(b.step_ms.size(), c.step_ms.size()));
    if (std::abs(rel) <= opt.threshold) {
      row.verdict = Verdict::kOk;
    } else if (t.p_value < opt.alpha) {
      row.verdict = rel > 0 ? Verdict::kRegression : Verdict::kImprovement;
      ++(rel > 0 ? res.regressions : res.improvements);
    } else {
      row.verdict = Verdict::kNotSignificant;
      ++res.not_significant;
    }
  }
  res.rows.push_back(std::move(row));
}

// Note [machine state]: repetitions that ran while the GPU throttled time a
// slower GPU; the gate says which, in either report.
void note_throttling(GateResult& res, const std::string& name, const char* which, const BenchCase& c) {
  const auto n = c.counters.find("throttled_repetitions");
  if (n == c.counters.end() || n->second <= 0) return;
  const auto r = c.counters.find("throttle_reasons");
  res.notes.push_back(cat(name, ": ", n->second, " of ", c.step_ms.size(), " repetitions in the ", which,
                          " ran throttled (", throttle_names(r == c.counters.end() ? 0 : uint64_t(r->second)), ")"));
}

void add_counter_rows(GateResult& res, const std::string& name, const BenchCase& b, const BenchCase& c) {
  std::set<std::string> keys;
  for (const auto& kv : b.counters)
    if (is_deterministic_counter(kv.first)) keys.insert(kv.first);
  for (const auto& kv : c.counters)
    if (is_deterministic_counter(kv.first)) keys.insert(kv.first);
  int same = 0;
  for (const std::string& k : keys) {
    const auto ib = b.counters.find(k), ic = c.counters.find(k);
    const bool in_b = ib != b.counters.end(), in_c = ic != c.counters.end();
    if (in_b && in_c && ib->second == ic->second) {
      ++same;
      continue;
    }
    GateRow row;
    row.case_name = name;
    row.metric = k;
    row.baseline = in_b ? exact(ib->second) : "missing";
    row.current = in_c ? exact(ic->second) : "missing";
    if (in_b && in_c) {
      const double d = ic->second - ib->second;
      row.change = cat(d > 0 ? "+" : "", exact(d), " (", percent(relative_change(ib->second, ic->second)), ")");
      row.verdict = Verdict::kRegression;
      row.detail = "deterministic counter changed";
    } else if (in_b) {
      row.change = "gone";
      row.verdict = Verdict::kRegression;
      row.detail = "deterministic counter no longer reported";
    } else {
      row.change = "added";
      row.verdict = Verdict::kNew;
      row.detail = "not in the baseline; refresh it to gate on this counter";
    }
    if (row.verdict == Verdict::kRegression) ++res.regressions;
    res.rows.push_back(std::move(row));
  }
  if (same > 0) {
    GateRow row;
    row.case_name = name;
    row.metric = "deterministic counters";
    row.baseline = row.current = cat(same, " identical");
    row.change = "none";
    row.detail = "exact match";
    res.rows.push_back(std::move(row));
  }
}

}  // namespace

void check_comparable(const BenchReport& baseline, const BenchReport& current, bool counters_only,
                      bool allow_launch_mismatch) {
  const BenchContext &b = baseline.context, &c = current.context;
  std::vector<std::string> problems;
  auto same = [&](const std::string& x, const std::string& y, const char* what) {
    if (x != y) problems.push_back(cat(what, " differs (baseline '", x, "', current '", y, "')"));
  };
  same(b.device_kind, c.device_kind, "device_kind");
  // Deterministic counters do not depend on which CPU or GPU model ran them.
  if (!counters_only) same(b.device_name, c.device_name, "device_name");
  same(b.build_type, c.build_type, "build type");
  same(b.precision, c.precision, "precision");
  same(b.bn_sync, c.bn_sync, "BN sync");
  same(cat(b.bucket_mb), cat(c.bucket_mb), "gradient bucket MB");
  same(b.cudnn_benchmark ? "on" : "off", c.cudnn_benchmark ? "on" : "off", "cuDNN benchmark");
  // Timed plans differ between processes unless a --conv-plans file fixes
  // them: two timed reports compare only when they ran the same plans.
  if (b.cudnn_benchmark && c.cudnn_benchmark && !b.conv_plans_digest.empty() && !c.conv_plans_digest.empty() &&
      b.conv_plans_digest != c.conv_plans_digest)
    problems.push_back(cat("the timed convolution plans differ (baseline digest ", b.conv_plans_digest, ", current ",
                           c.conv_plans_digest, "); run both with the same --conv-plans FILE"));
  same(b.fusion ? "on" : "off", c.fusion ? "on" : "off", "fusion");
  same(b.deterministic ? "deterministic" : "non-deterministic", c.deterministic ? "deterministic" : "non-deterministic",
       "algorithms");
  same(b.programmatic_launch ? "on" : "off", c.programmatic_launch ? "on" : "off", "programmatic launch");
  same(b.tc_filter_grad ? "tr" : "cuDNN", c.tc_filter_grad ? "tr" : "cuDNN", "3x3 filter gradient");
  same(b.memset_kernels ? "kernels" : "kept", c.memset_kernels ? "kernels" : "kept", "memset nodes");
  same(b.grid_sync ? "on" : "off", c.grid_sync ? "on" : "off", "grid sync");
  same(b.side_streams, c.side_streams, "side streams");
  same(cat(b.host_delay_us, " us"), cat(c.host_delay_us, " us"), "host delay before each step");
  if (!allow_launch_mismatch && b.launch != c.launch)
    problems.push_back(cat("launch differs (baseline '", b.launch, "', current '", c.launch,
                           "'; --allow-launch-mismatch compares them anyway)"));
  if (problems.empty()) {
    std::set<std::string> nb, nc;
    for (const BenchCase& x : baseline.cases) nb.insert(x.name(b.device_kind));
    for (const BenchCase& x : current.cases) nc.insert(x.name(c.device_kind));
    std::string only_b, only_c;
    for (const std::string& n : nb)
      if (!nc.count(n)) only_b += (only_b.empty() ? "" : ", ") + n;
    for (const std::string& n : nc)
      if (!nb.count(n)) only_c += (only_c.empty() ? "" : ", ") + n;
    if (!only_b.empty()) problems.push_back("only in baseline: " + only_b);
    if (!only_c.empty()) problems.push_back("only in current: " + only_c);
  }
  if (problems.empty()) return;
  std::string msg = "cannot compare the reports: ";
  for (size_t i = 0; i < problems.size(); ++i) msg += (i ? "; " : "") + problems[i];
  throw UserError(msg);
}

void check_timing_power(const BenchReport& baseline, const BenchReport& current, double alpha) {
  TR_CHECK(alpha > 0 && alpha <= 1, "alpha ", alpha);
  std::map<std::string, size_t> cur;
  for (const BenchCase& c : current.cases) cur[c.name(current.context.device_kind)] = c.step_ms.size();
  std::string weak;
  int cases = 0;
  double floor_p = 0;
  for (const BenchCase& b : baseline.cases) {
    const std::string name = b.name(baseline.context.device_kind);
    const auto it = cur.find(name);
    if (it == cur.end()) continue;  // check_comparable names it
    const double p = min_two_sided_p(static_cast<int>(b.step_ms.size()), static_cast<int>(it->second));
    if (p < alpha) continue;
    if (cases++ == 0) {
      weak = cat(name, " (", reps(b.step_ms.size(), it->second), ")");
      floor_p = p;
    }
  }
  if (cases == 0) return;
  throw UserError(cat("the step times cannot fail this gate: ", weak,
                      cases > 1 ? cat(" and ", cases - 1, " more case(s)") : "", " can reach no p below ",
                      fixed("%.3g", floor_p), ", and alpha is ", fixed("%g", alpha),
                      "; run both reports with --repetitions ", repetitions_for_alpha(alpha),
                      " or more, or gate with --counters-only"));
}

GateResult run_gate(const BenchReport& baseline, const BenchReport& current, const GateOptions& opt) {
  check_comparable(baseline, current, opt.counters_only, opt.allow_launch_mismatch);
  if (!opt.counters_only) check_timing_power(baseline, current, opt.alpha);
  GateResult res;
  const BenchContext &bx = baseline.context, &cx = current.context;
  auto note = [&](const std::string& x, const std::string& y, const char* what) {
    if (x != y) res.notes.push_back(cat(what, " differs: baseline '", x, "', current '", y, "'"));
  };
  note(bx.host_name, cx.host_name, "host_name");
  note(bx.driver_version, cx.driver_version, "driver_version");
  note(bx.cuda_runtime_version, cx.cuda_runtime_version, "cuda_runtime_version");
  note(bx.cudnn_version, cx.cudnn_version, "cudnn_version");
  note(bx.nccl_version, cx.nccl_version, "nccl_version");
  note(bx.launcher, cx.launcher, "launcher");
  if (!bx.conv_plans_digest.empty() && !cx.conv_plans_digest.empty())  // the heuristic's, with another cuDNN
    note(bx.conv_plans_digest, cx.conv_plans_digest, "convolution plans");

  std::map<std::string, const BenchCase*> cur;
  for (const BenchCase& c : current.cases) cur[c.name(cx.device_kind)] = &c;
  for (const BenchCase& b : baseline.cases) {
    const std::string name = b.name(bx.device_kind);
    const BenchCase& c = *cur.at(name);
    ++res.cases;
    if (b.iterations != c.iterations)
      res.notes.push_back(
          cat(name, ": ", b.iterations, " steps per repetition in the baseline, ", c.iterations, " now"));
    add_timing_row(res, name, b, c, opt);
    add_counter_rows(res, name, b, c);
    note_throttling(res, name, "baseline", b);
    note_throttling(res, name, "current", c);
  }
  return res;
}

std::string format_gate_table(const GateResult& r, const GateOptions& opt) {
  std::ostringstream os;
  for (const std::string& n : r.notes) os << "note: " << n << "\n";
  const std::vector<std::string> head = {"case", "metric", "baseline", "current", "change", "verdict", "detail"};
  std::vector<std::vector<std::string>> cells;
  for (const GateRow& x : r.rows)
    cells.push_back({x.case_name, x.metric, x.baseline, x.current, x.change, verdict_name(x.verdict), x.detail});
  std::vector<size_t> w(head.size());
  for (size_t k = 0; k < head.size(); ++k) {
    w[k] = head[k].size();
    for (const auto& row : cells) w[k] = std::max(w[k], row[k].size());
  }
  // Numbers right-aligned, words left-aligned; no padding after the last column.
  auto line = [&](const std::vector<std::string>& row) {
    std::string s;
    for (size_t k = 0; k < row.size(); ++k) {
      const bool right = k >= 2 && k <= 4;
      const std::string pad(w[k] - row[k].size(), ' ');
      std::string cell = right ? pad + row[k] : (k + 1 < row.size() ? row[k] + pad : row[k]);
      s += (k ? "  " : "") + cell;
    }
    os << s << "\n";
  };
  line(head);
  size_t total = 0;
  for (size_t k = 0; k < w.size(); ++k) total += w[k] + (k ? 2 : 0);
  os << std::string(total, '-') << "\n";
  for (const auto& row : cells) line(row);
  os << "\n"
     << (r.regressed() ? "gate: FAILED: " : "gate: passed: ") << r.regressions << " regression(s), " << r.improvements
     << " improvement(s), " << r.not_significant << " not significant, " << r.not_judged << " not judged, over "
     << r.cases << " case(s) (threshold " << fixed("%g", opt.threshold * 100) << "%, alpha " << fixed("%g", opt.alpha)
     << ")\n";
  return os.str();
}

}  // namespace tr::bench
