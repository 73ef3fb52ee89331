#include "harness/lib/report/history_html.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "framework/core/error.h"
#include "harness/lib/report/chart_axis.h"
#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/html_report.h"

namespace tr::bench {
namespace {

constexpr const char* kColor = "#00798c";
constexpr const char* kDash = "\xE2\x80\x94";  // an em dash: no value

using Figure = std::pair<std::string, std::vector<const HistoryLine*>>;

// The figures in the order they first appear, each with its lines in file order.
std::vector<Figure> by_figure(const std::vector<HistoryLine>& lines) {
  std::vector<Figure> figures;
  for (const HistoryLine& h : lines) {
    auto it = std::find_if(figures.begin(), figures.end(), [&](const Figure& f) { return f.first == h.figure; });
    if (it == figures.end()) it = figures.insert(figures.end(), {h.figure, {}});
    it->second.push_back(&h);
  }
  return figures;
}

std::string day(const HistoryLine& h) { return h.date.substr(0, 10); }

std::string interval(const HistoryLine& h) {
  return h.ci_low ? fmt_double("%.3f", *h.ci_low) + " \xE2\x80\x93 " + fmt_double("%.3f", *h.ci_high) : kDash;
}

std::string point_title(const HistoryLine& h) {
  std::string t = cat("line ", h.line, ": ", h.date, ", commit ", h.commit, ", ", h.machine, ": tr \xC3\xB7 peer ",
                      fmt_double("%.3f", h.ratio));
  if (h.ci_low) t += cat(" (95 % interval ", interval(h), h.rounds ? cat(", ", *h.rounds, " rounds") : "", ")");
  return html_escape(t);
}

// The plot's frame: where a line's index and a ratio land, 56 px for the y
// labels on the left, 84 px below for the dates (slanted, so they do not collide).
struct Frame {
  static constexpr double H = 320, L = 56, R = 16, T = 16, B = 84;
  double n = 1, plot_w = 360, lo = 0, hi = 1, ystep = 0.2;
  double width() const { return L + plot_w + R; }
  double x(size_t i) const { return L + plot_w * (static_cast<double>(i) + 0.5) / n; }
  double y(double v) const { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); }
};

Frame frame_of(const std::vector<const HistoryLine*>& lines) {
  Frame f;
  f.n = static_cast<double>(lines.size());
  f.plot_w = std::clamp(36.0 * f.n, 360.0, 960.0);
  double v_min = 1, v_max = 1;  // parity is always in sight
  for (const HistoryLine* h : lines) {
    v_min = std::min({v_min, h->ratio, h->ci_low.value_or(h->ratio)});
    v_max = std::max({v_max, h->ratio, h->ci_high.value_or(h->ratio)});
  }
  f.ystep = grid_step(v_max - v_min);
  // A step of headroom above the highest value keeps the parity line's label inside the plot.
  f.lo = std::floor(v_min / f.ystep) * f.ystep;
  f.hi = std::ceil(v_max / f.ystep) * f.ystep + f.ystep;
  return f;
}

// Gridlines with their ratios, a date under each point where the date changes, the axis titles, parity dashed.
std::string axes(const Frame& f, const std::vector<const HistoryLine*>& lines) {
  std::ostringstream o;
  const double right = f.width() - Frame::R, bottom = Frame::H - Frame::B;
  for (double v = f.lo; v <= f.hi + 1e-9 * f.ystep; v += f.ystep)
    o << "<line x1=\"" << Frame::L << "\" x2=\"" << right << "\" y1=\"" << f.y(v) << "\" y2=\"" << f.y(v)
      << "\" stroke=\"#ddd\"/><text x=\"" << Frame::L - 6 << "\" y=\"" << f.y(v) + 4
      << "\" text-anchor=\"end\" font-size=\"11\">" << fmt_double("%g", v) << "</text>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0 && day(*lines[i]) == day(*lines[i - 1])) continue;
    o << "<text x=\"" << f.x(i) << "\" y=\"" << bottom + 14 << "\" transform=\"rotate(-40 " << f.x(i) << " "
      << bottom + 14 << ")\" text-anchor=\"end\" font-size=\"10\">" << html_escape(day(*lines[i])) << "</text>\n";
  }
  o << "<text x=\"" << (Frame::L + right) / 2 << "\" y=\"" << Frame::H - 6
    << "\" text-anchor=\"middle\" font-size=\"12\">measurements in file order, by date</text>\n"
    << "<text x=\"14\" y=\"" << (Frame::T + bottom) / 2 << "\" transform=\"rotate(-90 14 " << (Frame::T + bottom) / 2
    << ")\" text-anchor=\"middle\" font-size=\"12\">tr \xC3\xB7 peer</text>\n";
  o << "<line x1=\"" << Frame::L << "\" x2=\"" << right << "\" y1=\"" << f.y(1) << "\" y2=\"" << f.y(1)
    << "\" stroke=\"#000\" stroke-dasharray=\"6 4\"/><text x=\"" << right << "\" y=\"" << f.y(1) - 4
    << "\" text-anchor=\"end\" font-size=\"11\">1: parity (below: tr is faster)</text>\n";
  return o.str();
}

// One point per line, filled where the line has an interval (drawn first, as a
// capped vertical bar) and hollow where it has none; a thin line joins them.
std::string points(const Frame& f, const std::vector<const HistoryLine*>& lines) {
  std::ostringstream o, joined;
  for (size_t i = 0; i < lines.size(); ++i) joined << f.x(i) << "," << f.y(lines[i]->ratio) << " ";
  o << "<polyline fill=\"none\" stroke=\"#9ab\" stroke-width=\"1\" points=\"" << joined.str() << "\"/>\n";
  for (size_t i = 0; i < lines.size(); ++i) {
    const HistoryLine& h = *lines[i];
    const double x = f.x(i);
    if (h.ci_low)
      o << "<path d=\"M" << x << " " << f.y(*h.ci_low) << "V" << f.y(*h.ci_high) << "M" << x - 4 << " "
        << f.y(*h.ci_low) << "H" << x + 4 << "M" << x - 4 << " " << f.y(*h.ci_high) << "H" << x + 4 << "\" stroke=\""
        << kColor << "\" stroke-width=\"1.3\" fill=\"none\"/>\n";
    o << "<circle cx=\"" << x << "\" cy=\"" << f.y(h.ratio) << "\" r=\"3.5\" fill=\"" << (h.ci_low ? kColor : "#fff")
      << "\" stroke=\"" << kColor << "\" stroke-width=\"1.5\"><title>" << point_title(h) << "</title></circle>\n";
  }
  return o.str();
}

std::string ratio_chart(const std::string& figure, const std::vector<const HistoryLine*>& lines) {
  const Frame f = frame_of(lines);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f.width() << "\" height=\"" << Frame::H
    << "\" viewBox=\"0 0 " << f.width() << " " << Frame::H << "\" role=\"img\" aria-label=\""
    << html_escape(figure + ": tr \xC3\xB7 peer over time") << "\">\n"
    << axes(f, lines) << points(f, lines) << "</svg>\n";
  return o.str();
}

std::string lines_table(const std::vector<const HistoryLine*>& lines) {
  std::ostringstream o;
  o << "<div class=\"wide\"><table class=\"history\">\n<tr><th>line</th><th>date</th><th>commit</th>"
       "<th>machine</th><th>tr</th><th>peer</th><th>tr \xC3\xB7 peer</th><th>95 % interval</th><th>rounds</th>"
       "<th>source</th></tr>\n";
  for (const HistoryLine* h : lines)
    o << "<tr><td>" << h->line << "</td><td>" << html_escape(h->date) << "</td><td><code>" << html_escape(h->commit)
      << "</code></td><td>" << html_escape(h->machine) << "</td><td>" << fmt_double("%.4f", h->tr) << "</td><td>"
      << fmt_double("%.4f", h->peer) << "</td><td>" << fmt_double("%.3f", h->ratio) << "</td><td>" << interval(*h)
      << "</td><td>" << (h->rounds ? std::to_string(*h->rounds) : kDash) << "</td><td><code>" << html_escape(h->source)
      << "</code></td></tr>\n";
  o << "</table></div>\n";
  return o.str();
}

}  // namespace

std::string render_history_section(const std::string& label, const std::vector<HistoryLine>& lines) {
  TR_CHECK(!lines.empty(), "a history without lines");
  const std::vector<Figure> figures = by_figure(lines);
  std::ostringstream o;
  o << "<h2>" << html_escape("History of the headline figures (" + label + ")") << "</h2>\n";
  o << "<p class=\"sub\">" << lines.size() << (lines.size() == 1 ? " line, " : " lines, ") << figures.size()
    << (figures.size() == 1 ? " figure" : " figures")
    << ". Each chart shows tr \xC3\xB7 peer for every line of its figure, in the file's order; below 1, tr is faster. "
       "Filled points are interleaved runs, with their 95 % confidence interval as a bar; hollow points are "
       "measurements without one.</p>\n";
  for (const auto& [figure, figure_lines] : figures)
    o << "<h3>" << html_escape(figure) << "</h3>\n<div class=\"charts\">\n"
      << ratio_chart(figure, figure_lines) << "</div>\n"
      << lines_table(figure_lines);
  return o.str();
}

}  // namespace tr::bench
