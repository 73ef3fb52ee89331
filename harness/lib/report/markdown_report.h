#pragma once
// tr-bench report --markdown: a report's cases as one Markdown table, for a
// pull request, a CI summary or the docs (tests/report_markdown_docs.py checks
// that every block the docs include is what this renders from the committed
// report it cites). Per case:
//   | model | mode | variant | GPUs | batch | median ms | cv | samples/s | x eager |
// then the columns the report has for every case: tokens/s and MFU (GPT
// models), the resident and busy fractions (Note [busy fraction]), the peak
// device memory (Note [device memory]), joules per step (Note [machine
// state]). A line under the table names the source: the file as given, the
// device and driver, the date, the commit of the binaries and the command.
#include <string>

#include "harness/lib/bench/bench_types.h"

namespace tr::bench {

std::string render_markdown(const std::string& path, const BenchReport& report);

}  // namespace tr::bench
