// The report a person reads after a simulation: per-policy summary tables and SVG charts (TTFT
// and TPOT distributions per policy; queue depth and KV usage over time per instance), written
// as one self-contained HTML page plus the SVG files on their own.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "omni/cluster/simulator.hpp"
#include "omni/common/result.hpp"

namespace omni::cluster {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  int width = 640;
  int height = 320;
};

// A line chart as a standalone <svg> element (no scripts, no external resources).
std::string line_chart_svg(const std::vector<Series>& series, const ChartOptions& options);

struct ReportInput {
  std::string title;
  std::string command_line;  // shown verbatim so the figures can be reproduced
  std::string config_summary;
  std::vector<ClusterResult> results;  // one per policy, same workload
};

// The per-traffic-class figures of one result as a plain-text table (one row per class:
// requests, completed, failed, shed by reason, TTFT and E2E p50/p99, goodput per second of
// arrivals when `with_goodput`, legs delayed in the gateway and their mean wait); empty when the
// run had no classes.
std::string class_table_text(const ClusterResult& result, bool with_goodput);

// Writes DIR/report.html, DIR/ttft_cdf.svg, DIR/tpot_cdf.svg and, per policy,
// DIR/<policy>_queue.svg and DIR/<policy>_kv.svg. Creates DIR.
Status write_report(const std::string& dir, const ReportInput& input);

}  // namespace omni::cluster
