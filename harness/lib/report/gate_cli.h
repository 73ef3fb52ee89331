#pragma once
// `tr-bench gate --baseline A.json --current B.json [--threshold 0.05] [--alpha 0.05]`
// Prints the gate table (gate.h) to stdout. Exit codes: 0 nothing regressed,
// 1 a regression, 2 the reports could not be compared (bad flags, unreadable
// or mismatched reports, or an internal error): one line on stderr.
namespace tr::bench {

// argv[0] is the subcommand name ("gate").
int gate_main(int argc, char** argv);

}  // namespace tr::bench
