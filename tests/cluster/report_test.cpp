#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "omni/cluster/report.hpp"

namespace omni::cluster {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LineChart, DrawsOnePathPerSeriesWithLegendAndEscapedText) {
  const std::string svg = line_chart_svg(
      {Series{"a<b", {{1, 0.1}, {10, 0.5}, {100, 1.0}}}, Series{"c", {{2, 0.2}, {20, 0.9}}}},
      {"TTFT & co", "ms", "fraction", true});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  std::size_t paths = 0;
  for (std::size_t at = svg.find("<path"); at != std::string::npos; at = svg.find("<path", at + 1))
    ++paths;
  EXPECT_EQ(paths, 2u);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_NE(svg.find("TTFT &amp; co"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
}

TEST(LineChart, EmptyDataSaysSo) {
  EXPECT_NE(line_chart_svg({}, {"t", "x", "y"}).find("no data"), std::string::npos);
}

TEST(Report, WritesHtmlWithTheTableAndEveryChart) {
  ClusterResult result;
  result.policy = "round-robin";
  result.completed = 3;
  result.duration_s = 2;
  for (const double v : {10.0, 20.0, 30.0}) {
    result.ttft_ms.add(v);
    result.tpot_ms.add(v / 10);
  }
  result.timeline_labels = {"decode-0"};
  TimelinePoint p;
  p.t = 1;
  p.waiting = {2};
  p.running = {1};
  p.kv_usage = {0.5};
  result.timeline.push_back(p);
  const auto dir = std::filesystem::temp_directory_path() / "omni_cluster_report_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_report(dir.string(), {"title", "omni-cluster --x", "cfg", {result}}).ok());
  const std::string html = read(dir / "report.html");
  EXPECT_NE(html.find("<td>round-robin</td>"), std::string::npos);
  EXPECT_NE(html.find("omni-cluster --x"), std::string::npos);
  for (const char* file :
       {"ttft_cdf.svg", "tpot_cdf.svg", "round-robin_queue.svg", "round-robin_kv.svg"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / file)) << file;
  }
  std::filesystem::remove_all(dir);
}

TEST(Report, ClassTableListsEveryClassWithItsSheds) {
  ClusterResult result;
  result.policy = "least-tokens";
  EXPECT_EQ(class_table_text(result, false), "");
  ClassResult high;
  high.name = "interactive";
  high.band = "high";
  high.requests = 2;
  high.completed = 2;
  high.ttft_ms.add(100);
  high.ttft_ms.add(100);
  ClassResult low;
  low.name = "batch";
  low.band = "low";
  low.requests = 5;
  low.failed = 3;
  low.shed_by_reason["band_timeout"] = 3;
  result.classes = {high, low};
  const std::string text = class_table_text(result, true);
  EXPECT_NE(text.find("interactive"), std::string::npos);
  EXPECT_NE(text.find("3 band_timeout"), std::string::npos);
  EXPECT_NE(text.find("goodput/s"), std::string::npos);
  EXPECT_EQ(class_table_text(result, false).find("goodput/s"), std::string::npos);
  const auto dir = std::filesystem::temp_directory_path() / "omni_cluster_class_report_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_report(dir.string(), {"title", "cmd", "cfg", {result}}).ok());
  const std::string html = read(dir / "report.html");
  EXPECT_NE(html.find("Traffic classes (least-tokens)"), std::string::npos);
  EXPECT_NE(html.find("<td>batch</td><td>low</td>"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omni::cluster
