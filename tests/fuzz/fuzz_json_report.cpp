// Fuzzes the report readers of `tr-bench gate` and `tr-bench report`: bytes
// parsed as they are from a file (harness/lib/report/json_file.h: not JSON, a number
// out of range and a repeated key are UserErrors), then read both as a
// bench report (harness/lib/report/json_report.h) and as a time-to-accuracy report
// (harness/lib/tta/tta_report.h). A bench report that reads must also survive
// being written and read back. Bad input must end in a tr::UserError;
// anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/report/json_report.h"
#include "harness/lib/tta/tta_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = tr::bench::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const tr::UserError&) {
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
  } catch (const tr::UserError&) {}
  try {
    (void)tr::bench::is_tta_json(j);
    (void)tr::bench::tta_report_from_json(j, "fuzz.json");
  } catch (const tr::UserError&) {}
  return 0;
}
