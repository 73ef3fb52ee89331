#pragma once
// A BenchReport as Google-Benchmark-compatible JSON, and back. The layout is
// documented in reports/schema.md; in short: a `context` object (Google
// Benchmark's keys plus ours, among them `tr_schema_version`) and a
// `benchmarks` array with, per case, one `run_type: "iteration"` entry per
// repetition followed by the `_mean`, `_median`, `_stddev` and `_cv`
// aggregates. Counters are extra numeric keys of each entry.
//
// Keys are written in Google Benchmark's order (hence ordered_json), so a
// report reads like one of its files and diffs cleanly.
#include <string>

#include <nlohmann/json.hpp>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

// The entry keys that are not counters (Google Benchmark's and ours). A
// counter must not use one of these names (write_report checks).
bool is_reserved_entry_key(const std::string& key);

nlohmann::ordered_json to_json(const BenchReport& report);
// The `context` block alone (other report kinds, e.g. tta_report.h, share it).
nlohmann::ordered_json context_to_json(const BenchContext& context);

// Writes to_json(report) with two-space indentation and a final newline.
// A file that cannot be written is a UserError naming it.
void write_report(const BenchReport& report, const std::string& path);

// Parses a report written by write_report (aggregates are ignored: they are
// recomputed from the repetitions). Throws tr::UserError with one line naming
// the file and what is wrong: missing file, not JSON, a Google Benchmark file
// without tr_schema_version, another schema version, a missing or mistyped field.
BenchReport read_report(const std::string& path);

// The same, from already parsed JSON; `path` only names the source in errors.
BenchReport report_from_json(const nlohmann::json& j, const std::string& path);

}  // namespace tr::bench
