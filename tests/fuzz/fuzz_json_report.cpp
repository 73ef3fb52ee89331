// Fuzzes the report readers of `tr-bench gate` and `tr-bench report`: bytes
// parsed by nlohmann (a parse error is a fine answer), then read both as a
// bench report (harness/lib/json_report.h) and as a time-to-accuracy report
// (harness/lib/tta_report.h). A bench report that reads must also survive
// being written and read back. Bad input must end in a tr::UserError;
// anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "harness/lib/json_report.h"
#include "harness/lib/tta_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {  // not JSON, or a number past double
    return 0;
  }
  try {
    const tr::bench::BenchReport r = tr::bench::report_from_json(j, "fuzz.json");
    const auto again = nlohmann::json::parse(tr::bench::to_json(r).dump());
    try {
      (void)tr::bench::report_from_json(again, "fuzz-again.json");
    } catch (const tr::UserError&) {
      std::abort();  // a report we accepted and wrote must read back
    }
  } catch (const tr::UserError&) {
  }
  try {
    (void)tr::bench::is_tta_json(j);
    (void)tr::bench::tta_report_from_json(j, "fuzz.json");
  } catch (const tr::UserError&) {
  }
  return 0;
}
