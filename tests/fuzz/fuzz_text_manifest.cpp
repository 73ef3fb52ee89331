// Fuzzes the text shards' manifest reader (harness/lib/text/shard_manifest.h):
// arbitrary bytes read as manifest.json. Bad input must end in a
// tr::UserError; a manifest that reads must write back to JSON that reads to
// the same manifest again. Anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "framework/core/error.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/text/shard_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::text::ShardManifest m;
  try {
    const auto j = tr::bench::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    m = tr::text::manifest_from_json(j, "fuzz.json");
  } catch (const tr::UserError&) {
    return 0;
  }
  const auto text = tr::text::manifest_to_json(m).dump();
  try {
    const auto again = tr::text::manifest_from_json(tr::bench::parse_json_text(text, "again"), "again.json");
    if (tr::text::manifest_to_json(again).dump() != text) std::abort();
  } catch (const tr::UserError&) {
    std::abort();  // a manifest we read and wrote must read back
  }
  return 0;
}
