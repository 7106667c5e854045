#include "omni/cluster/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace omni::cluster {
namespace {

// A colour-blind-friendly palette (Okabe-Ito).
constexpr const char* kColours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#F0E442", "#000000"};

std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Round axis ticks: 1, 2 or 5 times a power of ten.
double nice_step(double span, int wanted) {
  const double raw = span / std::max(1, wanted);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string tick_label(double value) {
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e6) return fmt::format("{:g}M", value / 1e6);
  if (magnitude >= 1e4) return fmt::format("{:g}k", value / 1e3);
  if (magnitude < 1e-2) return fmt::format("{:.0e}", value);
  if (magnitude >= 10) return fmt::format("{:.0f}", value);
  return fmt::format("{:.3g}", value);
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};

}  // namespace

std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& options) {
  const int left = 64, right = 150, top = 28, bottom = 44;
  const int plot_w = options.width - left - right;
  const int plot_h = options.height - top - bottom;
  Range xs, ys;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      if (options.log_x && x <= 0) continue;
      xs.add(options.log_x ? std::log10(x) : x);
      ys.add(y);
    }
  }
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="11">)"
      "\n",
      options.width, options.height);
  svg += fmt::format(R"(<text x="{}" y="16" font-size="13" font-weight="bold">{}</text>)"
                     "\n",
                     left, escape(options.title));
  if (xs.empty()) {
    svg += fmt::format(R"(<text x="{}" y="{}">no data</text></svg>)"
                       "\n",
                       left, top + 20);
    return svg;
  }
  ys.lo = std::min(ys.lo, 0.0);
  if (xs.hi == xs.lo) xs.hi = xs.lo + 1;
  if (ys.hi == ys.lo) ys.hi = ys.lo + 1;
  const auto px = [&](double x) {
    const double v = options.log_x ? std::log10(x) : x;
    return left + (v - xs.lo) / (xs.hi - xs.lo) * plot_w;
  };
  const auto py = [&](double y) { return top + plot_h - (y - ys.lo) / (ys.hi - ys.lo) * plot_h; };

  svg += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)"
                     "\n",
                     left, top, plot_w, plot_h);
  // Y ticks.
  const double y_step = nice_step(ys.hi - ys.lo, 5);
  for (double y = std::ceil(ys.lo / y_step) * y_step; y <= ys.hi + 1e-12; y += y_step) {
    svg += fmt::format(
        R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#eee"/><text x="{}" y="{:.1f}" text-anchor="end">{}</text>)"
        "\n",
        left, left + plot_w, py(y), py(y), left - 4, py(y) + 4, tick_label(y));
  }
  // X ticks: decades on a log axis, round steps otherwise.
  if (options.log_x) {
    for (double d = std::floor(xs.lo); d <= std::ceil(xs.hi); d += 1) {
      if (d < xs.lo - 1e-9 || d > xs.hi + 1e-9) continue;
      const double x = std::pow(10.0, d);
      svg += fmt::format(
          R"(<line x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" stroke="#eee"/><text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)"
          "\n",
          px(x), px(x), top, top + plot_h, px(x), top + plot_h + 14, tick_label(x));
    }
  } else {
    const double x_step = nice_step(xs.hi - xs.lo, 6);
    for (double x = std::ceil(xs.lo / x_step) * x_step; x <= xs.hi + 1e-12; x += x_step) {
      svg += fmt::format(
          R"(<line x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" stroke="#eee"/><text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)"
          "\n",
          px(x), px(x), top, top + plot_h, px(x), top + plot_h + 14, tick_label(x));
    }
  }
  svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)"
                     "\n",
                     left + plot_w / 2, options.height - 8, escape(options.x_label));
  svg += fmt::format(
      R"svg(<text x="14" y="{}" text-anchor="middle" transform="rotate(-90 14 {})">{}</text>)svg"
      "\n",
      top + plot_h / 2, top + plot_h / 2, escape(options.y_label));
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % std::size(kColours)];
    std::string path;
    for (const auto& [x, y] : series[i].points) {
      if (options.log_x && x <= 0) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(x), py(y));
    }
    if (!path.empty()) {
      svg += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="1.6"/>)"
                         "\n",
                         path, colour);
    }
    const int ly = top + 12 + static_cast<int>(i) * 16;
    svg += fmt::format(
        R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{}" stroke-width="3"/><text x="{}" y="{}">{}</text>)"
        "\n",
        left + plot_w + 10, left + plot_w + 28, ly - 4, ly - 4, colour, left + plot_w + 32, ly,
        escape(series[i].name));
  }
  svg += "</svg>\n";
  return svg;
}

namespace {

std::vector<Series> cdf_series(const std::vector<ClusterResult>& results,
                               const LogHistogram ClusterResult::*metric) {
  std::vector<Series> series;
  for (const ClusterResult& result : results) {
    series.push_back(Series{result.policy, (result.*metric).cdf()});
  }
  return series;
}

std::vector<Series> timeline_series(const ClusterResult& result, bool kv) {
  std::vector<Series> series;
  for (std::size_t i = 0; i < result.timeline_labels.size(); ++i) {
    Series s{result.timeline_labels[i], {}};
    for (const TimelinePoint& point : result.timeline) {
      if (i >= point.waiting.size()) continue;
      s.points.emplace_back(point.t,
                            kv ? point.kv_usage[i] * 100.0 : static_cast<double>(point.waiting[i]));
    }
    series.push_back(std::move(s));
  }
  Series mean{kv ? "decode mean" : "decode mean", {}};
  for (const TimelinePoint& point : result.timeline) {
    mean.points.emplace_back(point.t,
                             kv ? point.mean_kv_usage_decode * 100.0 : point.mean_waiting_decode);
  }
  series.push_back(std::move(mean));
  return series;
}

Status write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return make_error(ErrorCode::kIo, "cannot write " + path.string());
  return ok_status();
}

std::string summary_table(const std::vector<ClusterResult>& results) {
  std::string html =
      "<table><tr><th>policy</th><th>completed</th><th>failed</th><th>TTFT p50 / p99 (ms)</th>"
      "<th>TPOT p50 / p99 (ms)</th><th>ITL p50 (ms)</th><th>E2E p50 (s)</th>"
      "<th>req/s</th><th>out tok/s</th><th>goodput per s of arrivals (req/s)</th><th>cache "
      "hit</th></tr>\n";
  for (const ClusterResult& r : results) {
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f} / {:.1f}</td><td>{:.2f} / {:.2f}</td>"
        "<td>{:.2f}</td><td>{:.2f}</td><td>{:.3f}</td><td>{:.1f}</td><td>{:.3f}</td>"
        "<td>{:.1f}%</td></tr>\n",
        escape(r.policy), r.completed, r.failed, r.ttft_ms.quantile(0.5), r.ttft_ms.quantile(0.99),
        r.tpot_ms.quantile(0.5), r.tpot_ms.quantile(0.99), r.itl_ms.quantile(0.5),
        r.e2e_ms.quantile(0.5) / 1e3, r.request_throughput(), r.output_token_throughput(),
        r.goodput_offered(), r.prefix_cache_hit_rate() * 100.0);
  }
  return html + "</table>\n";
}

std::string shed_text(const std::map<std::string, std::uint64_t>& by_reason) {
  std::string text;
  for (const auto& [reason, count] : by_reason) {
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", count, reason);
  }
  return text.empty() ? "0" : text;
}

double mean_wait_ms(const ClassResult& c) {
  double total = 0.0;
  for (const double s : c.queue_wait_s) total += s;
  return c.legs_delayed > 0 ? total / static_cast<double>(c.legs_delayed) * 1e3 : 0.0;
}

std::string class_table_html(const ClusterResult& r) {
  if (r.classes.empty()) return {};
  std::string html = fmt::format(
      "<h3>Traffic classes ({})</h3>\n<table><tr><th>class</th><th>band</th><th>tenant</th>"
      "<th>requests</th><th>completed</th><th>failed</th><th>shed</th><th>TTFT p50 / p99 "
      "(ms)</th><th>E2E p50 / p99 (s)</th><th>good</th><th>legs delayed</th><th>mean delay "
      "(ms)</th></tr>\n",
      escape(r.policy));
  for (const ClassResult& c : r.classes) {
    html += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{:.1f} / {:.1f}</td><td>{:.2f} / {:.2f}</td><td>{}</td><td>{}</td><td>{:.1f}</td>"
        "</tr>\n",
        escape(c.name), escape(c.band), c.tenant, c.requests, c.completed, c.failed,
        escape(shed_text(c.shed_by_reason)), c.ttft_ms.quantile(0.5), c.ttft_ms.quantile(0.99),
        c.e2e_ms.quantile(0.5) / 1e3, c.e2e_ms.quantile(0.99) / 1e3, c.good, c.legs_delayed,
        mean_wait_ms(c));
  }
  return html + "</table>\n";
}

}  // namespace

std::string class_table_text(const ClusterResult& r, bool with_goodput) {
  if (r.classes.empty()) return {};
  std::string text = fmt::format(
      "{:<14} {:>8} {:>6} {:>8} {:>9} {:>7} {:>19} {:>19} {:>17}{} {:>9} {:>10}\n", "class", "band",
      "tenant", "requests", "completed", "failed", "TTFT p50/p99 (ms)", "E2E p50/p99 (s)", "shed",
      with_goodput ? fmt::format(" {:>12}", "goodput/s") : "", "delayed", "wait (ms)");
  for (const ClassResult& c : r.classes) {
    text += fmt::format(
        "{:<14} {:>8} {:>6} {:>8} {:>9} {:>7} {:>19} {:>19} {:>17}{} {:>9} {:>10.1f}\n", c.name,
        c.band, c.tenant, c.requests, c.completed, c.failed,
        fmt::format("{:.1f}/{:.1f}", c.ttft_ms.quantile(0.5), c.ttft_ms.quantile(0.99)),
        fmt::format("{:.2f}/{:.2f}", c.e2e_ms.quantile(0.5) / 1e3, c.e2e_ms.quantile(0.99) / 1e3),
        shed_text(c.shed_by_reason),
        with_goodput ? fmt::format(" {:>12.3f}", c.goodput_offered(r)) : "", c.legs_delayed,
        mean_wait_ms(c));
  }
  return text;
}

Status write_report(const std::string& dir, const ReportInput& input) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::kIo, "cannot create " + dir + ": " + ec.message());
  const std::filesystem::path root(dir);

  std::vector<std::pair<std::string, std::string>> charts;  // file name, svg
  charts.emplace_back("ttft_cdf.svg",
                      line_chart_svg(cdf_series(input.results, &ClusterResult::ttft_ms),
                                     {"TTFT distribution per policy", "TTFT (ms, log scale)",
                                      "fraction of requests", true}));
  charts.emplace_back("tpot_cdf.svg",
                      line_chart_svg(cdf_series(input.results, &ClusterResult::tpot_ms),
                                     {"TPOT distribution per policy", "TPOT (ms, log scale)",
                                      "fraction of requests", true}));
  for (const ClusterResult& result : input.results) {
    charts.emplace_back(result.policy + "_queue.svg",
                        line_chart_svg(timeline_series(result, false),
                                       {"Waiting requests over time (" + result.policy + ")",
                                        "virtual time (s)", "waiting requests"}));
    charts.emplace_back(result.policy + "_kv.svg",
                        line_chart_svg(timeline_series(result, true),
                                       {"KV-cache usage over time (" + result.policy + ")",
                                        "virtual time (s)", "KV usage (%)"}));
  }

  std::string html = fmt::format(
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title>\n"
      "<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}}"
      "table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 8px;"
      "text-align:right}}code{{background:#f4f4f4}}</style></head><body>\n<h1>{0}</h1>\n"
      "<p>Command: <code>{1}</code></p>\n<p>{2}</p>\n",
      escape(input.title), escape(input.command_line), escape(input.config_summary));
  html += summary_table(input.results);
  for (const ClusterResult& result : input.results) html += class_table_html(result);
  for (const auto& [name, svg] : charts) {
    if (auto status = write_file(root / name, svg); !status.ok()) return status;
    html += "<div>" + svg + "</div>\n";
  }
  html += "</body></html>\n";
  return write_file(root / "report.html", html);
}

}  // namespace omni::cluster
