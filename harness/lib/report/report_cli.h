#pragma once
// `tr-bench report A.json [B.json ...] [--history FILE] -o out.html`: renders the
// reports, and the history of the headline figures, as one self-contained HTML
// page (html_report.h, history_html.h). Exit 0 on success; 2 with one line on
// stderr for bad flags, unreadable reports or history, or an unwritable output.
namespace tr::bench {

// argv[0] is the subcommand name ("report").
int report_main(int argc, char** argv);

}  // namespace tr::bench
