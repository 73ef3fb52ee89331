// Fuzzes tr-bench's command line (harness/lib/bench/bench_options.h). Bad input must
// end in a tr::UserError; anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "framework/core/error.h"
#include "harness/lib/bench/bench_options.h"
#include "tests/fuzz/fuzz_args.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::fuzz::Argv args(data, size, "tr-bench");
  try {
    (void)tr::bench::parse_bench_options(args.argc(), args.argv());
  } catch (const tr::UserError&) {}
  return 0;
}
