// `omni-bench compare a.json b.json`: headline metrics side by side with the ratio b/a.
#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <optional>

#include "omni/benchstat/summary.hpp"

namespace omni::benchstat {
namespace {

// The number at a path like {"ttft_ms", "p50"}; std::nullopt when absent or null.
std::optional<double> lookup(const boost::json::value& doc, std::initializer_list<std::string_view> path) {
  const boost::json::value* v = &doc;
  for (std::string_view key : path) {
    if (!v->is_object()) return std::nullopt;
    v = v->get_object().if_contains(key);
    if (v == nullptr) return std::nullopt;
  }
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return std::nullopt;
}

Result<boost::json::value> parse_results(std::string_view text, std::string_view name) {
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(text, ec);
  if (ec || !doc.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: not a results JSON object", name));
  }
  if (!doc.get_object().contains("completed")) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: no 'completed' field", name));
  }
  return doc;
}

std::string cell(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "-"; }

}  // namespace

Result<std::string> compare_results(std::string_view a_json, std::string_view b_json, std::string_view a_name,
                                    std::string_view b_name) {
  auto a = parse_results(a_json, a_name);
  if (!a) return a.error();
  auto b = parse_results(b_json, b_name);
  if (!b) return b.error();
  struct Row {
    std::string label;
    std::initializer_list<std::string_view> path;
  };
  const Row rows[] = {
      {"completed", {"completed"}},
      {"failed", {"failed"}},
      {"duration_s", {"duration_s"}},
      {"request_throughput", {"request_throughput"}},
      {"output_token_throughput", {"output_token_throughput"}},
      {"goodput", {"goodput"}},
      {"prefix_cache_hit_rate", {"prefix_cache_hit_rate"}},
      {"ttft_ms.mean", {"ttft_ms", "mean"}},  {"ttft_ms.p50", {"ttft_ms", "p50"}},
      {"ttft_ms.p90", {"ttft_ms", "p90"}},    {"ttft_ms.p99", {"ttft_ms", "p99"}},
      {"tpot_ms.mean", {"tpot_ms", "mean"}},  {"tpot_ms.p50", {"tpot_ms", "p50"}},
      {"tpot_ms.p90", {"tpot_ms", "p90"}},    {"tpot_ms.p99", {"tpot_ms", "p99"}},
      {"itl_ms.mean", {"itl_ms", "mean"}},    {"itl_ms.p50", {"itl_ms", "p50"}},
      {"itl_ms.p90", {"itl_ms", "p90"}},      {"itl_ms.p99", {"itl_ms", "p99"}},
      {"e2e_ms.mean", {"e2e_ms", "mean"}},    {"e2e_ms.p50", {"e2e_ms", "p50"}},
      {"e2e_ms.p90", {"e2e_ms", "p90"}},      {"e2e_ms.p99", {"e2e_ms", "p99"}},
  };
  std::string out = fmt::format("{:<26}{:>14}{:>14}{:>10}\n", "metric", a_name, b_name, "b/a");
  for (const Row& row : rows) {
    const auto va = lookup(*a, row.path);
    const auto vb = lookup(*b, row.path);
    std::string ratio = "-";
    if (va && vb && *va != 0.0) ratio = fmt::format("{:.3f}", *vb / *va);
    out += fmt::format("{:<26}{:>14}{:>14}{:>10}\n", row.label, cell(va), cell(vb), ratio);
  }
  return out;
}

}  // namespace omni::benchstat
