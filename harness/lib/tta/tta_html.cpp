#include "harness/lib/tta/tta_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "framework/core/error.h"
#include "harness/lib/report/chart_axis.h"
#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/html_report.h"

namespace tr::bench {
namespace {

const char* const kSeedColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// A judged value as the chart and tables show it: accuracy in %, loss as it is.
double shown(const TtaReport& r, double v) { return r.target.is_loss() ? v : 100 * v; }

// The judged metric (test accuracy in %, or validation loss) at every
// validation against cumulative training seconds, 640 x 320.
std::string metric_chart(const TtaReport& r) {
  constexpr double W = 640, H = 320, L = 56, R = 16, T = 16, B = 44;
  double t_max = 0, v_min = shown(r, r.target.value), v_max = v_min;
  for (const TtaRun& run : r.runs)
    for (const TtaEval& e : run.evals) {
      t_max = std::max(t_max, e.train_seconds);
      v_min = std::min(v_min, shown(r, e.value));
      v_max = std::max(v_max, shown(r, e.value));
    }
  const double ystep = grid_step(v_max - v_min);
  const double lo = std::floor(v_min / ystep) * ystep, hi = std::ceil(v_max / ystep) * ystep + ystep;
  t_max = t_max > 0 ? t_max * 1.05 : 1;
  auto x = [&](double t) { return L + (W - L - R) * t / t_max; };
  auto y = [&](double v) { return T + (H - T - B) * (1 - (shown(r, v) - lo) / (hi - lo)); };
  const char* what = r.target.is_loss() ? "validation loss" : "test accuracy (%)";
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << " " << H << "\" role=\"img\" aria-label=\"" << (r.target.is_loss() ? "validation loss" : "test accuracy")
    << " against training time\">\n";
  for (double v = lo; v <= hi + 1e-9 * ystep; v += ystep) {
    const double yy = T + (H - T - B) * (1 - (v - lo) / (hi - lo));
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
    << ")\" text-anchor=\"middle\" font-size=\"12\">" << what << "</text>\n";
  const double yt = y(r.target.value);
  o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << yt << "\" y2=\"" << yt
    << "\" stroke=\"#000\" stroke-dasharray=\"6 4\"/><text x=\"" << W - R << "\" y=\"" << yt - 4
    << "\" text-anchor=\"end\" font-size=\"11\">target " << fmt_double("%g", shown(r, r.target.value))
    << (r.target.is_loss() ? "" : " %") << "</text>\n";
  for (size_t k = 0; k < r.runs.size(); ++k) {
    const char* color = kSeedColors[k % (sizeof kSeedColors / sizeof *kSeedColors)];
    std::ostringstream pts;
    for (const TtaEval& e : r.runs[k].evals) pts << x(e.train_seconds) << "," << y(e.value) << " ";
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"" << pts.str()
      << "\"><title>seed " << r.runs[k].seed << "</title></polyline>\n";
    for (const TtaEval& e : r.runs[k].evals)
      o << "<circle cx=\"" << x(e.train_seconds) << "\" cy=\"" << y(e.value) << "\" r=\"2.5\" fill=\"" << color
        << "\"><title>seed " << r.runs[k].seed << ", epoch " << e.epoch << ", step " << e.step << ": "
        << fmt_double(r.target.is_loss() ? "%.4f" : "%.2f %%", shown(r, e.value)) << " at "
        << fmt_double("%.3f", e.train_seconds) << " s</title></circle>\n";
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
  const std::string target = r.target.is_loss() ? cat("validation loss ", fmt_double("%.3f", r.target.value))
                                                : cat(fmt_double("%.2f", 100 * r.target.value), " % test accuracy");
  o << "<p>Target " << html_escape(target) << " (" << html_escape(r.eval) << " weights): reached by " << s.reached
    << " of " << s.runs << " runs";
  if (s.time_to_target)
    o << ", in " << fmt_double("%.3f", s.time_to_target->mean) << " \xC2\xB1 "
      << fmt_double("%.3f", s.time_to_target->stddev) << " s of training (min "
      << fmt_double("%.3f", s.time_to_target->min) << ", max " << fmt_double("%.3f", s.time_to_target->max) << ")";
  if (r.target.is_loss())
    o << ". Final validation loss " << fmt_double("%.4f", s.final_loss.mean) << " \xC2\xB1 "
      << fmt_double("%.4f", s.final_loss.stddev);
  else
    o << ". Final accuracy " << fmt_double("%.2f", 100 * s.final_acc.mean) << " \xC2\xB1 "
      << fmt_double("%.2f", 100 * s.final_acc.stddev) << " %";
  o << ". Set-up (compile, plan, capture) " << fmt_double("%.3f", s.setup_seconds.mean)
    << " s per run, not counted.</p>\n";
  o << "<div class=\"charts\">\n" << metric_chart(r) << "</div>\n";
  o << "<table><tr><th>seed</th><th>set-up s</th><th>capture ms</th><th>epochs to target</th>"
       "<th>time to target s</th><th>training s</th><th>"
    << (r.target.is_loss() ? "final validation loss" : "final accuracy %") << "</th></tr>\n";
  for (const TtaRun& run : r.runs)
    o << "<tr><td>" << run.seed << "</td><td>" << fmt_double("%.3f", run.setup_seconds) << "</td><td>"
      << fmt_double("%.1f", run.capture_ms) << "</td><td>"
      << (run.time_to_target ? std::to_string(run.epochs_to_target) : "-") << "</td><td>"
      << (run.time_to_target ? fmt_double("%.3f", *run.time_to_target) : std::string("missed")) << "</td><td>"
      << fmt_double("%.3f", run.epochs.back().train_seconds) << "</td><td>"
      << (r.target.is_loss() ? fmt_double("%.4f", run.final_loss) : fmt_double("%.2f", 100 * run.final_acc))
      << "</td></tr>\n";
  o << "</table>\n<p class=\"sub\">recipe <code>" << html_escape(r.recipe.dump()) << "</code></p>\n";
  return o.str();
}

}  // namespace tr::bench
