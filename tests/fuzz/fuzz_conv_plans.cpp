// Fuzzes the reader of --conv-plans files (harness/lib/cli/conv_plans_file.h):
// arbitrary bytes read into a plan book. Bad input must end in a
// tr::UserError; a file that reads must write back to text that reads to the
// same text again. Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "framework/core/error.h"
#include "framework/ops/conv_plans/conv_plan_book.h"
#include "harness/lib/cli/conv_plans_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::ConvPlanBook book(tr::ConvPlanUse::Replay, "fuzz.json");
  try {
    tr::read_conv_plans_json(std::string_view(reinterpret_cast<const char*>(data), size), book);
  } catch (const tr::UserError&) {
    return 0;
  }
  const std::string text = tr::conv_plans_json(book);
  tr::ConvPlanBook again(tr::ConvPlanUse::Replay, "fuzz-again.json");
  try {
    tr::read_conv_plans_json(text, again);
  } catch (const tr::UserError&) {
    std::abort();  // a book we read and wrote must read back
  }
  if (tr::conv_plans_json(again) != text) std::abort();
  return 0;
}
