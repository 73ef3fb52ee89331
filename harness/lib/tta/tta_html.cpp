#include "harness/lib/tta/tta_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/html_report.h"

namespace tr::bench {
namespace {

const char* const kSeedColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Accuracy (%) against cumulative training seconds, 640 x 320.
std::string accuracy_chart(const TtaReport& r) {
  constexpr double W = 640, H = 320, L = 56, R = 16, T = 16, B = 44;
  double t_max = 0, a_min = r.target_acc, a_max = r.target_acc;
  for (const TtaRun& run : r.runs)
    for (const TtaEpoch& e : run.epochs) {
      t_max = std::max(t_max, e.train_seconds);
      a_min = std::min(a_min, e.acc);
      a_max = std::max(a_max, e.acc);
    }
  // Percent axis in whole steps of 0.5 around the data.
  const double lo = std::floor(a_min * 200) / 2, hi = std::ceil(a_max * 200) / 2 + 0.5;
  t_max = t_max > 0 ? t_max * 1.05 : 1;
  auto x = [&](double t) { return L + (W - L - R) * t / t_max; };
  auto y = [&](double acc) { return T + (H - T - B) * (1 - (100 * acc - lo) / (hi - lo)); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" role=\"img\" aria-label=\"test accuracy against training time\">\n";
  const double ystep = (hi - lo) > 8 ? 2 : (hi - lo) > 3 ? 1 : 0.5;
  for (double v = lo; v <= hi + 1e-9; v += ystep) {
    const double yy = y(v / 100);
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << yy << "\" y2=\"" << yy
      << "\" stroke=\"#ddd\"/><text x=\"" << L - 6 << "\" y=\"" << yy + 4 << "\" text-anchor=\"end\" font-size=\"11\">"
      << fmt_double("%g", v) << "</text>\n";
  }
  const double xstep = std::pow(10, std::floor(std::log10(t_max / 2)));
  for (double t = 0; t <= t_max + 1e-12; t += xstep * (t_max / xstep > 10 ? 2 : 1))
    o << "<text x=\"" << x(t) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\" font-size=\"11\">"
      << fmt_double("%g", t) << "</text>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8
    << "\" text-anchor=\"middle\" font-size=\"12\">training time (s)</text>\n"
    << "<text x=\"14\" y=\"" << (T + H - B) / 2 << "\" transform=\"rotate(-90 14 " << (T + H - B) / 2
    << ")\" text-anchor=\"middle\" font-size=\"12\">test accuracy (%)</text>\n";
  o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << y(r.target_acc) << "\" y2=\"" << y(r.target_acc)
    << "\" stroke=\"#000\" stroke-dasharray=\"6 4\"/><text x=\"" << W - R << "\" y=\"" << y(r.target_acc) - 4
    << "\" text-anchor=\"end\" font-size=\"11\">target " << fmt_double("%g", 100 * r.target_acc) << " %</text>\n";
  for (size_t k = 0; k < r.runs.size(); ++k) {
    const char* color = kSeedColors[k % (sizeof kSeedColors / sizeof *kSeedColors)];
    std::ostringstream pts;
    for (const TtaEpoch& e : r.runs[k].epochs) pts << x(e.train_seconds) << "," << y(e.acc) << " ";
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"" << pts.str()
      << "\"><title>seed " << r.runs[k].seed << "</title></polyline>\n";
    for (const TtaEpoch& e : r.runs[k].epochs)
      o << "<circle cx=\"" << x(e.train_seconds) << "\" cy=\"" << y(e.acc) << "\" r=\"2.5\" fill=\"" << color
        << "\"><title>seed " << r.runs[k].seed << ", epoch " << e.epoch << ": " << fmt_double("%.2f", 100 * e.acc)
        << " % at " << fmt_double("%.3f", e.train_seconds) << " s</title></circle>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

std::string render_tta_section(const std::string& label, const TtaReport& r) {
  const TtaSummary s = summarize_tta(r.runs);
  std::ostringstream o;
  o << "<h2>" << html_escape("Time to accuracy: " + r.model + " (" + label + ")") << "</h2>\n";
  o << "<p class=\"sub\">" << html_escape(r.context.device_name) << " \xC2\xB7 " << html_escape(r.context.precision)
    << " \xC2\xB7 " << html_escape(r.context.date) << " \xC2\xB7 <code>" << html_escape(r.context.command_line)
    << "</code></p>\n";
  o << "<p>Target " << fmt_double("%.2f", 100 * r.target_acc) << " % test accuracy (" << html_escape(r.eval)
    << " weights): reached by " << s.reached << " of " << s.runs << " runs";
  if (s.time_to_target)
    o << ", in " << fmt_double("%.3f", s.time_to_target->mean) << " \xC2\xB1 "
      << fmt_double("%.3f", s.time_to_target->stddev) << " s of training (min "
      << fmt_double("%.3f", s.time_to_target->min) << ", max " << fmt_double("%.3f", s.time_to_target->max) << ")";
  o << ". Final accuracy " << fmt_double("%.2f", 100 * s.final_acc.mean) << " \xC2\xB1 "
    << fmt_double("%.2f", 100 * s.final_acc.stddev) << " %. Set-up (compile, plan, capture) "
    << fmt_double("%.3f", s.setup_seconds.mean) << " s per run, not counted.</p>\n";
  o << "<div class=\"charts\">\n" << accuracy_chart(r) << "</div>\n";
  o << "<table><tr><th>seed</th><th>set-up s</th><th>capture ms</th><th>epochs to target</th>"
       "<th>time to target s</th><th>training s</th><th>final accuracy %</th></tr>\n";
  for (const TtaRun& run : r.runs)
    o << "<tr><td>" << run.seed << "</td><td>" << fmt_double("%.3f", run.setup_seconds) << "</td><td>"
      << fmt_double("%.1f", run.capture_ms) << "</td><td>"
      << (run.time_to_target ? std::to_string(run.epochs_to_target) : "-") << "</td><td>"
      << (run.time_to_target ? fmt_double("%.3f", *run.time_to_target) : std::string("missed")) << "</td><td>"
      << fmt_double("%.3f", run.epochs.back().train_seconds) << "</td><td>" << fmt_double("%.2f", 100 * run.final_acc)
      << "</td></tr>\n";
  o << "</table>\n<p class=\"sub\">recipe <code>" << html_escape(r.recipe.dump()) << "</code></p>\n";
  return o.str();
}

}  // namespace tr::bench
