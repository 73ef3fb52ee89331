#include "harness/lib/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "framework/core/error.h"
#include "harness/lib/report/case_values.h"
#include "harness/lib/report/fmt_double.h"
#include "harness/lib/report/statistics.h"

namespace tr::bench {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (const char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

namespace {

// ---------------------------------------------------------------- numbers

// Short axis labels: 1.5M, 200k, 0.05.
std::string short_num(double v) {
  const double a = std::abs(v);
  if (a >= 1e9) return fmt_double("%gG", v / 1e9);
  if (a >= 1e6) return fmt_double("%gM", v / 1e6);
  if (a >= 1e4) return fmt_double("%gk", v / 1e3);
  return fmt_double("%g", v);
}

std::string ms(double v) { return fmt_double("%.4g", v); }

// ---------------------------------------------------------------- ordering

int rank_of(const std::vector<std::string>& known, const std::string& s) {
  const auto it = std::find(known.begin(), known.end(), s);
  return it == known.end() ? static_cast<int>(known.size()) : static_cast<int>(it - known.begin());
}
const std::vector<std::string> kModes = {"eager", "partial-capture", "full-capture"};
const std::vector<std::string> kVariants = {"train_base",        "train_last", "train_lowres",
                                            "train_lowres_last", "val_base",   "val_last"};
bool mode_less(const std::string& a, const std::string& b) {
  const int ra = rank_of(kModes, a), rb = rank_of(kModes, b);
  return ra != rb ? ra < rb : a < b;
}
bool variant_less(const std::string& a, const std::string& b) {
  const int ra = rank_of(kVariants, a), rb = rank_of(kVariants, b);
  return ra != rb ? ra < rb : a < b;
}

std::string color_of_mode(const std::string& mode, size_t index) {
  if (mode == "eager") return "#d1495b";
  if (mode == "partial-capture") return "#edae49";
  if (mode == "full-capture") return "#00798c";
  static const char* extra[] = {"#30638e", "#8d6a9f", "#6b8f71", "#a05c34"};
  return extra[index % 4];
}

std::string ranks_label(int ranks, const std::string& device_kind) {
  if (device_kind == "cuda") return cat(ranks, ranks == 1 ? " GPU" : " GPUs");
  return cat(ranks, ranks == 1 ? " rank" : " ranks");
}

// ---------------------------------------------------------------- SVG bar chart

struct Bar {
  double value = 0;
  std::optional<double> lo, hi;  // whisker
  std::string tip;               // hover text (<title>)
};

struct BarChart {
  std::string title, y_label, caption;
  std::vector<std::vector<std::string>> categories;  // label lines per category
  std::vector<std::string> series, colors;
  std::vector<std::vector<std::optional<Bar>>> bars;  // [category][series]
  bool value_labels = false;
};

// A "nice" axis top and tick step (1, 2 or 5 times a power of ten) for ~5 ticks.
std::pair<double, double> nice_axis(double max_value) {
  if (!(max_value > 0)) return {1, 0.2};
  const double raw = max_value / 5;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  double step = p;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  return {std::ceil(max_value / step - 1e-9) * step, step};
}

std::string svg_bar_chart(const BarChart& ch) {
  const double left = 78, right = 24, top = 62, plot_h = 250;
  const double bottom = 56;
  const size_t ns = std::max<size_t>(ch.series.size(), 1), nc = std::max<size_t>(ch.categories.size(), 1);
  // Categories share the plot width; bars keep a readable width and stay
  // centred in their category however few there are.
  const double plot_w = std::max(330.0, std::max(120.0, static_cast<double>(ns) * 26 + 36) * static_cast<double>(nc));
  const double cat_w = plot_w / static_cast<double>(nc);
  const double bw = std::min(46.0, cat_w * 0.8 / static_cast<double>(ns));
  const double width = left + plot_w + right, height = top + plot_h + bottom;
  double vmax = 0;
  for (const auto& row : ch.bars)
    for (const auto& b : row)
      if (b) vmax = std::max({vmax, b->value, b->hi.value_or(0)});
  const auto [ytop, ystep] = nice_axis(vmax * (ch.value_labels ? 1.08 : 1.0));
  auto y = [&, ytop = ytop](double v) { return top + plot_h - v / ytop * plot_h; };

  std::ostringstream o;
  o << "<figure style=\"width:" << width << "px\">\n";
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" role=\"img\" aria-label=\"" << html_escape(ch.title)
    << "\">\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  o << "<text x=\"" << left << "\" y=\"22\" class=\"ct\">" << html_escape(ch.title) << "</text>\n";
  // legend
  double lx = left;
  for (size_t s = 0; s < ch.series.size(); ++s) {
    o << "<rect x=\"" << lx << "\" y=\"34\" width=\"12\" height=\"12\" fill=\"" << ch.colors[s] << "\"/>";
    o << "<text x=\"" << lx + 17 << "\" y=\"44\" class=\"lg\">" << html_escape(ch.series[s]) << "</text>\n";
    lx += 30 + 7.0 * static_cast<double>(ch.series[s].size());
  }
  // grid and y axis
  for (double v = 0; v <= ytop + ystep * 1e-6; v += ystep) {
    o << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << y(v) << "\" y2=\"" << y(v)
      << "\" stroke=\"" << (v == 0 ? "#333" : "#e3e3e3") << "\"/>";
    o << "<text x=\"" << left - 6 << "\" y=\"" << y(v) + 4 << "\" class=\"tk\" text-anchor=\"end\">" << short_num(v)
      << "</text>\n";
  }
  o << "<line x1=\"" << left << "\" x2=\"" << left << "\" y1=\"" << top << "\" y2=\"" << top + plot_h
    << "\" stroke=\"#333\"/>\n";
  o << "<text transform=\"translate(18," << top + plot_h / 2 << ") rotate(-90)\" class=\"al\" text-anchor=\"middle\">"
    << html_escape(ch.y_label) << "</text>\n";
  // bars
  for (size_t c = 0; c < ch.categories.size(); ++c) {
    const double gx = left + cat_w * static_cast<double>(c);
    const double g0 = gx + (cat_w - bw * static_cast<double>(ns)) / 2;
    for (size_t s = 0; s < ch.series.size() && s < ch.bars[c].size(); ++s) {
      if (!ch.bars[c][s]) continue;
      const Bar& b = *ch.bars[c][s];
      const double x = g0 + bw * static_cast<double>(s), cx = x + bw / 2;
      o << "<rect x=\"" << x + 1 << "\" y=\"" << y(b.value) << "\" width=\"" << bw - 2 << "\" height=\""
        << y(0) - y(b.value) << "\" fill=\"" << ch.colors[s] << "\"><title>" << html_escape(b.tip)
        << "</title></rect>\n";
      if (b.lo && b.hi) {
        const double cap = bw * 0.2;
        o << "<path d=\"M" << cx << " " << y(*b.lo) << "V" << y(*b.hi) << "M" << cx - cap << " " << y(*b.lo) << "H"
          << cx + cap << "M" << cx - cap << " " << y(*b.hi) << "H" << cx + cap
          << "\" stroke=\"#222\" stroke-width=\"1.3\" fill=\"none\"/>\n";
      }
      if (ch.value_labels)
        o << "<text x=\"" << cx << "\" y=\"" << y(b.value) - 4 << "\" class=\"vl\" text-anchor=\"middle\">"
          << short_num(b.value) << "</text>\n";
    }
    // category label, one line per entry
    const double lx0 = gx + cat_w / 2;
    o << "<text x=\"" << lx0 << "\" y=\"" << top + plot_h + 18 << "\" class=\"cl\" text-anchor=\"middle\">";
    for (size_t i = 0; i < ch.categories[c].size(); ++i)
      o << "<tspan x=\"" << lx0 << "\" dy=\"" << (i ? 14 : 0) << "\">" << html_escape(ch.categories[c][i])
        << "</tspan>";
    o << "</text>\n";
  }
  o << "</svg>\n";
  if (!ch.caption.empty()) o << "<figcaption>" << html_escape(ch.caption) << "</figcaption>\n";
  o << "</figure>\n";
  return o.str();
}

// ---------------------------------------------------------------- per model charts

struct Shape {  // a chart category: everything but the mode
  std::string variant;
  int ranks;
  int64_t batch;
  bool operator<(const Shape& o) const {
    if (variant != o.variant) return variant_less(variant, o.variant);
    if (ranks != o.ranks) return ranks < o.ranks;
    return batch < o.batch;
  }
};

std::vector<std::string> modes_of(const std::vector<const BenchCase*>& cases) {
  std::vector<std::string> modes;
  for (const BenchCase* c : cases)
    if (std::find(modes.begin(), modes.end(), c->mode) == modes.end()) modes.push_back(c->mode);
  std::sort(modes.begin(), modes.end(), mode_less);
  return modes;
}

// Step time and samples/s, categories = (variant, ranks, batch), series = mode.
std::string timing_charts(const std::string& model, const std::vector<const BenchCase*>& cases,
                          const std::string& kind) {
  const std::vector<std::string> modes = modes_of(cases);
  std::map<Shape, std::map<std::string, const BenchCase*>> grid;
  for (const BenchCase* c : cases) grid[{c->variant, c->ranks, c->batch}][c->mode] = c;
  BarChart step, rate;
  step.title = model + ": step time (median of repetitions)";
  step.y_label = "ms per step (lower is better)";
  step.caption =
      "Bars: median wall time per training step over the repetitions; whiskers: fastest and slowest "
      "repetition.";
  rate.title = model + ": throughput";
  rate.y_label = "samples/s (higher is better)";
  rate.caption = "Samples per second at the median step time; whiskers: at the slowest and fastest repetition.";
  for (size_t i = 0; i < modes.size(); ++i) {
    for (BarChart* ch : {&step, &rate}) {
      ch->series.push_back(modes[i]);
      ch->colors.push_back(color_of_mode(modes[i], i));
    }
  }
  for (const auto& [shape, by_mode] : grid) {
    const std::vector<std::string> label = {shape.variant,
                                            cat("batch ", shape.batch, " \xC2\xB7 ", ranks_label(shape.ranks, kind))};
    step.categories.push_back(label);
    rate.categories.push_back(label);
    auto& srow = step.bars.emplace_back(modes.size());
    auto& rrow = rate.bars.emplace_back(modes.size());
    for (size_t m = 0; m < modes.size(); ++m) {
      const auto it = by_mode.find(modes[m]);
      if (it == by_mode.end()) continue;
      const BenchCase& c = *it->second;
      const Summary s = summarize(c.step_ms);
      const std::string who = c.name(kind);
      srow[m] = Bar{s.median, s.min, s.max,
                    cat(who, ": median ", ms(s.median), " ms (min ", ms(s.min), ", max ", ms(s.max), ", n=", s.n, ")")};
      const double sps = samples_per_second(c);
      // Throughput scales as 1 / step time: the slowest repetition is the low whisker.
      rrow[m] = Bar{sps, s.max > 0 ? std::optional(sps * s.median / s.max) : std::nullopt,
                    s.min > 0 ? std::optional(sps * s.median / s.min) : std::nullopt,
                    cat(who, ": ", grouped(sps), " samples/s")};
    }
  }
  return svg_bar_chart(step) + svg_bar_chart(rate);
}

// Launches per step by mode, from one representative case per mode (the
// train_base variant, fewest ranks, smallest batch, when present). Series are
// the launch counters the model's cases report; node launches (graph nodes run
// one by one, the eager work) appear when the runner counts them.
std::string launch_chart(const std::string& model, const std::vector<const BenchCase*>& cases,
                         const std::string& kind) {
  struct Series {
    const char* key;
    const char* label;
    const char* color;
  };
  static const Series kAll[] = {{"graph_launches_per_step", "graph launches", "#30638e"},
                                {"kernel_launches_per_step", "kernel launches", "#8d6a9f"},
                                {"node_launches_per_step", "node launches", "#6b8f71"}};
  std::vector<Series> series;
  for (const Series& s : kAll)
    if (std::any_of(cases.begin(), cases.end(), [&](const BenchCase* c) { return counter(*c, s.key).has_value(); }))
      series.push_back(s);
  if (series.empty()) return "<p class=\"cap\">No launch counters in this report.</p>\n";
  BarChart ch;
  ch.title = model + ": launches per step by mode";
  ch.y_label = "launches per step";
  ch.caption =
      "Host-side launches per training step: CUDA graph launches, individual kernel launches and graph "
      "nodes launched one by one. Full capture replaces the per-node work by a short, fixed list of graphs.";
  ch.value_labels = true;
  for (const Series& s : series) {
    ch.series.push_back(s.label);
    ch.colors.push_back(s.color);
  }
  for (const std::string& mode : modes_of(cases)) {
    const BenchCase* rep = nullptr;
    for (const BenchCase* c : cases) {
      if (c->mode != mode) continue;
      if (!rep || Shape{c->variant, c->ranks, c->batch} < Shape{rep->variant, rep->ranks, rep->batch}) rep = c;
    }
    ch.categories.push_back({mode, cat(rep->variant, " \xC2\xB7 ", ranks_label(rep->ranks, kind))});
    auto& row = ch.bars.emplace_back(series.size());
    for (size_t s = 0; s < series.size(); ++s)
      if (const auto v = counter(*rep, series[s].key))
        row[s] = Bar{*v, std::nullopt, std::nullopt, cat(rep->name(kind), ": ", grouped(*v), " ", series[s].label)};
  }
  return svg_bar_chart(ch);
}

// ---------------------------------------------------------------- tables

std::string context_table(const std::vector<LabeledReport>& reports) {
  using Get = std::string (*)(const BenchContext&);
  static const std::vector<std::pair<const char*, Get>> rows = {
      {"device", [](const BenchContext& x) { return x.device_kind + ": " + x.device_name; }},
      {"driver", [](const BenchContext& x) { return x.driver_version; }},
      {"CUDA runtime", [](const BenchContext& x) { return x.cuda_runtime_version; }},
      {"cuDNN", [](const BenchContext& x) { return x.cudnn_version; }},
      {"NCCL", [](const BenchContext& x) { return x.nccl_version; }},
      {"build type", [](const BenchContext& x) { return x.build_type; }},
      {"precision", [](const BenchContext& x) { return x.precision; }},
      {"BN sync", [](const BenchContext& x) { return x.bn_sync; }},
      {"bucket MB", [](const BenchContext& x) { return cat(x.bucket_mb); }},
      {"cuDNN benchmark", [](const BenchContext& x) { return std::string(x.cudnn_benchmark ? "on" : "off"); }},
      {"convolution plans",
       [](const BenchContext& x) {
         if (x.conv_plans_digest.empty()) return std::string("-");
         return x.conv_plans_file.empty() ? x.conv_plans_digest
                                          : cat(x.conv_plans_digest, " (", x.conv_plans_file, ")");
       }},
      {"fusion", [](const BenchContext& x) { return std::string(x.fusion ? "on" : "off"); }},
      {"algorithms",
       [](const BenchContext& x) {
         return std::string(x.deterministic ? "deterministic" : "non-deterministic allowed");
       }},
      {"programmatic launch", [](const BenchContext& x) { return std::string(x.programmatic_launch ? "on" : "off"); }},
      {"host delay before each step", [](const BenchContext& x) { return cat(x.host_delay_us, " us"); }},
      {"3x3 filter gradient",
       [](const BenchContext& x) { return std::string(x.tc_filter_grad ? "tr tensor-core kernel" : "cuDNN"); }},
      {"memset nodes", [](const BenchContext& x) { return std::string(x.memset_kernels ? "run as kernels" : "kept"); }},
      {"grid sync", [](const BenchContext& x) { return std::string(x.grid_sync ? "on" : "off"); }},
      {"side streams", [](const BenchContext& x) { return x.side_streams; }},
      {"launch",
       [](const BenchContext& x) { return x.processes > 1 ? cat(x.launch, " (", x.processes, ")") : x.launch; }},
      {"host",
       [](const BenchContext& x) { return cat(x.host_name, " (", x.num_cpus, " CPUs, ", x.mhz_per_cpu, " MHz)"); }},
      {"date", [](const BenchContext& x) { return x.date; }},
      {"git commit", [](const BenchContext& x) { return x.git_commit; }},
      {"command line", [](const BenchContext& x) { return x.command_line; }},
      {"executable", [](const BenchContext& x) { return x.executable; }},
      {"schema version", [](const BenchContext& x) { return std::to_string(x.schema_version); }},
  };
  std::ostringstream o;
  o << "<table class=\"ctx\"><tr><th></th>";
  for (const LabeledReport& r : reports) o << "<th>" << html_escape(r.label) << "</th>";
  o << "</tr>\n";
  for (const auto& [name, get] : rows) {
    o << "<tr><th>" << name << "</th>";
    for (const LabeledReport& r : reports) {
      const std::string v = get(r.report.context);
      o << "<td>" << (v.empty() ? "<span class=\"na\">n/a</span>" : "<code>" + html_escape(v) + "</code>") << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string case_table(const BenchReport& r) {
  const std::string& kind = r.context.device_kind;
  // Note [busy fraction]: a kernel resident (waiting included), and busy with its own work.
  bool resident = false, busy = false, nodes = false, weak = false, allreduce = false;
  for (const BenchCase& c : r.cases) {
    resident = resident || counter(c, "gpu_resident_fraction").has_value();
    busy = busy || counter(c, "gpu_busy_fraction").has_value();
    nodes = nodes || counter(c, "node_launches_per_step").has_value();
    weak = weak || counter(c, "weak_scaling_efficiency").has_value();
    allreduce = allreduce || counter(c, "grad_allreduce_busbw_gbps").has_value();
  }
  std::ostringstream o;
  o << "<div class=\"wide\"><table class=\"cases\"><tr><th>case</th><th>reps</th><th>steps/rep</th><th>median ms</th>"
       "<th>stddev ms</th><th>cv</th><th>min ms</th><th>max ms</th><th>samples/s</th>"
       "<th>graph launches/step</th><th>kernel launches/step</th>"
    << (nodes ? "<th>node launches/step</th>" : "") << (resident ? "<th>GPU resident</th>" : "")
    << (busy ? "<th>GPU busy</th>" : "") << (weak ? "<th>weak scaling efficiency</th>" : "")
    << (allreduce ? "<th>grad all-reduce GB/s in step (bus)</th><th>all-reduce GB/s alone (bus)</th>" : "")
    << "</tr>\n";
  auto opt_int = [](std::optional<double> v) { return v ? grouped(*v) : std::string("<span class=\"na\">-</span>"); };
  for (const BenchCase& c : r.cases) {
    const Summary s = summarize(c.step_ms);
    o << "<tr><td class=\"name\">" << html_escape(c.name(kind)) << "</td><td>" << s.n << "</td><td>" << c.iterations
      << "</td><td>" << ms(s.median) << "</td><td>" << ms(s.stddev) << "</td><td>" << fmt_double("%.2f%%", s.cv * 100)
      << "</td><td>" << ms(s.min) << "</td><td>" << ms(s.max) << "</td><td>" << grouped(samples_per_second(c))
      << "</td><td>" << opt_int(counter(c, "graph_launches_per_step")) << "</td><td>"
      << opt_int(counter(c, "kernel_launches_per_step")) << "</td>";
    if (nodes) o << "<td>" << opt_int(counter(c, "node_launches_per_step")) << "</td>";
    auto cell = [&](const char* key, const char* format, double scale) {
      const auto v = counter(c, key);
      o << "<td>" << (v ? fmt_double(format, *v * scale) : "<span class=\"na\">-</span>") << "</td>";
    };
    if (resident) cell("gpu_resident_fraction", "%.1f%%", 100);
    if (busy) cell("gpu_busy_fraction", "%.1f%%", 100);
    if (weak) cell("weak_scaling_efficiency", "%.3f", 1);
    if (allreduce) {
      cell("grad_allreduce_busbw_gbps", "%.1f", 1);
      cell("allreduce_alone_busbw_gbps", "%.1f", 1);
    }
    o << "</tr>\n";
  }
  o << "</table></div>\n";
  return o.str();
}

std::string comparison_table(const std::vector<LabeledReport>& reports) {
  std::vector<std::string> names;
  std::vector<std::map<std::string, const BenchCase*>> by_name(reports.size());
  for (size_t i = 0; i < reports.size(); ++i)
    for (const BenchCase& c : reports[i].report.cases) {
      const std::string n = c.name(reports[i].report.context.device_kind);
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      by_name[i][n] = &c;
    }
  std::ostringstream o;
  o << "<div class=\"wide\"><table class=\"cases\"><tr><th>case</th>";
  for (size_t i = 0; i < reports.size(); ++i)
    o << "<th>" << html_escape(reports[i].label) << "<br>median ms</th>" << (i ? "<th>vs first</th>" : "");
  o << "</tr>\n";
  for (const std::string& n : names) {
    o << "<tr><td class=\"name\">" << html_escape(n) << "</td>";
    std::optional<double> first;
    for (size_t i = 0; i < reports.size(); ++i) {
      const auto it = by_name[i].find(n);
      std::optional<double> m;
      if (it != by_name[i].end()) m = median(it->second->step_ms);
      if (i == 0) first = m;
      o << "<td>" << (m ? ms(*m) : "<span class=\"na\">-</span>") << "</td>";
      if (i) o << "<td>" << (m && first && *first > 0 ? fmt_double("%+.1f%%", (*m / *first - 1) * 100) : "") << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</table></div>\n";
  return o.str();
}

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", system-ui, sans-serif; margin: 24px; color: #1d1d1d; max-width: 1500px; }
h1 { font-size: 24px; margin: 0 0 4px 0; } h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #ccc; }
h3 { font-size: 16px; margin: 22px 0 6px 0; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #d4d4d4; padding: 3px 8px; vertical-align: top; }
th { background: #f1f3f5; text-align: left; }
table.cases td { text-align: right; font-variant-numeric: tabular-nums; }
table.cases td.name { text-align: left; font-family: "DejaVu Sans Mono", monospace; font-size: 12px;
                      overflow-wrap: anywhere; min-width: 16em; }
.wide { max-width: 100%; overflow-x: auto; }
code { white-space: pre-wrap; word-break: break-all; font-size: 12px; }
.na { color: #999; } .sub { color: #555; font-size: 13px; }
svg.chart { display: block; border: 1px solid #e6e6e6; }
svg text { font-family: "DejaVu Sans", sans-serif; }
.ct { font-size: 15px; font-weight: bold; } .lg { font-size: 12px; } .tk { font-size: 11px; fill: #444; }
.al { font-size: 12px; fill: #333; } .cl { font-size: 11px; fill: #333; } .vl { font-size: 10px; fill: #222; }
.cap, figcaption { color: #555; font-size: 12px; margin: 2px 0 0 0; }
table.history td, table.history code { white-space: nowrap; word-break: normal; }
.charts { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
figure { margin: 0; }
)";

}  // namespace

std::string render_html(const std::vector<LabeledReport>& reports, const std::vector<std::string>& sections) {
  TR_CHECK(!reports.empty() || !sections.empty(), "render_html without reports");
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tr-bench report</title>\n"
    << "<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>tr-bench report</h1>\n";
  size_t total = 0;
  for (const LabeledReport& r : reports) total += r.report.cases.size();
  if (!reports.empty()) {
    o << "<p class=\"sub\">" << reports.size() << (reports.size() == 1 ? " report, " : " reports, ") << total
      << " cases. Step time is wall time per training step; every chart and number below comes from the JSON "
         "report(s) named here.</p>\n";
    o << "<h2>Context</h2>\n" << context_table(reports);
  }
  for (const LabeledReport& r : reports) {
    const std::string& kind = r.report.context.device_kind;
    o << "<h2>" << html_escape(reports.size() == 1 ? "Results" : "Results: " + r.label) << "</h2>\n";
    o << "<p class=\"sub\">" << html_escape(r.report.context.device_name) << " \xC2\xB7 "
      << html_escape(r.report.context.build_type) << " build \xC2\xB7 " << html_escape(r.report.context.date)
      << "</p>\n";
    std::vector<std::string> models;
    for (const BenchCase& c : r.report.cases)
      if (std::find(models.begin(), models.end(), c.model) == models.end()) models.push_back(c.model);
    for (const std::string& model : models) {
      std::vector<const BenchCase*> cases;
      for (const BenchCase& c : r.report.cases)
        if (c.model == model) cases.push_back(&c);
      o << "<h3>Model " << html_escape(model) << "</h3>\n<div class=\"charts\">\n"
        << timing_charts(model, cases, kind) << launch_chart(model, cases, kind) << "</div>\n";
    }
    o << "<h3>All cases</h3>\n" << case_table(r.report);
  }
  if (reports.size() > 1) o << "<h2>Comparison of median step times</h2>\n" << comparison_table(reports);
  for (const std::string& s : sections) o << s;
  o << "</body>\n</html>\n";
  return o.str();
}

}  // namespace tr::bench
