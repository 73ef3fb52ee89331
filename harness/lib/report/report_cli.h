#pragma once
// `tr-bench report A.json [B.json ...] -o out.html`: renders the reports as one
// self-contained HTML page (html_report.h). Exit 0 on success; 2 with one line
// on stderr for bad flags, unreadable reports or an unwritable output.
namespace tr::bench {

// argv[0] is the subcommand name ("report").
int report_main(int argc, char** argv);

}  // namespace tr::bench
