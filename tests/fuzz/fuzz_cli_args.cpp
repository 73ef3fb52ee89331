// Fuzzes CliArgs (harness/lib/cli/cli_args.h) with a small flag table: the parse,
// then every typed read, and --name read as a list. A tr::UserError is the expected answer to bad input;
// anything else escaping (or a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>

#include "framework/core/error.h"
#include "harness/lib/cli/cli_args.h"
#include "tests/fuzz/fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::fuzz::Argv args(data, size, "tr-fuzz");
  try {
    const tr::CliArgs a(args.argc(), args.argv(), {"--name", "--count", "--rate"}, {"--flag", "--help"});
    (void)a.str("--name", "x");
    (void)tr::list_items("--name", a.str("--name", "x"));
    (void)a.integer("--count", 1, -5, 1 << 20);
    (void)a.real("--rate", 0.5, 0.0, 1e3);
    (void)a.flag("--flag");
    (void)a.positional();
  } catch (const tr::UserError&) {}
  return 0;
}
