// Fuzzes the training flags of tr-train and `tr-bench tta`
// (harness/lib/cli/train_flags.h) through parse_train_setup, which ends by making
// the data: --synthetic is appended so nothing is read from disk, subsets of 8
// images are appended where the input sets none, and inputs asking for large
// images or subsets are skipped, so one input runs in milliseconds (synthetic
// data is made only as large as the subsets). Bad input must end in a
// tr::UserError; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/core/error.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/cli/train_flags.h"
#include "tests/fuzz/fuzz_args.h"

namespace {

constexpr int64_t kMaxSide = 64, kMaxSubset = 64;

tr::CliArgs parse(tr::fuzz::Argv& args) {
  return tr::CliArgs(args.argc(), args.argv(), tr::train_value_flags(), tr::train_bool_flags());
}

bool above(const tr::CliArgs& a, const char* flag, int64_t cap) {
  const auto v = tr::parse_int(a.str(flag, "0"));
  return v && *v > cap;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::fuzz::Argv args(data, size, "tr-train");
  args.append({"--synthetic"});
  try {
    const tr::CliArgs first = parse(args);
    // An input ending in a value flag takes the appended --synthetic as its
    // value: the real data would be read (and padded to 224x224 for the zoo's
    // models: seconds per input under ASan), so such inputs are skipped.
    if (!first.flag("--synthetic")) return 0;
    if (above(first, "--image-size", kMaxSide) || above(first, "--train-subset", kMaxSubset) ||
        above(first, "--val-subset", kMaxSubset))
      return 0;
    if (!first.has("--train-subset")) args.append({"--train-subset", "8"});
    if (!first.has("--val-subset")) args.append({"--val-subset", "8"});
    (void)tr::parse_train_setup(parse(args), /*recipe_defaults=*/size % 2 == 1);
  } catch (const tr::UserError&) {}
  return 0;
}
