// `omni-bench compare a.json b.json [c.json ...]`: headline metrics side by side, each with the
// direction that is better and each column's ratio to the first (the baseline).
#include <fmt/format.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <optional>

#include "omni/benchstat/summary.hpp"

namespace omni::benchstat {
namespace {

// The number at a path like {"ttft_ms", "p50"}; std::nullopt when absent or null.
std::optional<double> lookup(const boost::json::value& doc,
                             std::initializer_list<std::string_view> path) {
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

std::optional<std::string> text_at(const boost::json::value& doc, std::string_view a,
                                   std::string_view b) {
  const auto* o = doc.if_object();
  const auto* inner = o ? o->if_contains(a) : nullptr;
  const auto* obj = inner ? inner->if_object() : nullptr;
  const auto* v = obj ? obj->if_contains(b) : nullptr;
  if (v && v->is_string()) return std::string(v->get_string());
  return std::nullopt;
}

struct Column {
  std::string label;
  boost::json::value doc;
};

Status check_results(const boost::json::value& doc, const std::string& name) {
  if (!doc.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: not a results JSON object", name));
  }
  if (!doc.get_object().contains("completed")) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: no 'completed' field", name));
  }
  return ok_status();
}

// A file's columns: itself, or each element of an array (omni-cluster's multi-policy file).
Status add_columns(const ResultsFile& file, std::vector<Column>& columns) {
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(file.text, ec);
  if (ec)
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: not a results JSON object", file.name));
  auto label_of = [](const boost::json::value& d, const std::string& fallback) {
    if (auto l = text_at(d, "config", "label")) return *l;
    if (auto p = text_at(d, "config", "policy")) return *p;
    return fallback;
  };
  if (doc.is_array()) {
    const auto& items = doc.get_array();
    if (items.empty())
      return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: an empty array", file.name));
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string name = fmt::format("{}#{}", file.name, i);
      if (Status s = check_results(items[i], name); !s) return s;
      columns.push_back({label_of(items[i], name), items[i]});
    }
    return ok_status();
  }
  if (Status s = check_results(doc, file.name); !s) return s;
  columns.push_back({label_of(doc, file.name), std::move(doc)});
  return ok_status();
}

enum class Better { kHigher, kLower, kNeither };

struct Row {
  std::string label;
  std::initializer_list<std::string_view> path;
  Better better;
};

std::string cell(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "-"; }

std::string verdict(Better better, double base, double value) {
  if (better == Better::kNeither) return "";
  if (value == base) return "same";
  const bool higher = value > base;
  return higher == (better == Better::kHigher) ? "better" : "worse";
}

}  // namespace

Result<std::string> compare_results(std::span<const ResultsFile> files,
                                    std::span<const std::string> labels) {
  std::vector<Column> columns;
  for (const ResultsFile& f : files) {
    if (Status s = add_columns(f, columns); !s) return std::move(s).error();
  }
  if (columns.size() < 2) {
    return make_error(ErrorCode::kInvalidArgument,
                      "compare needs at least two results (files or array elements)");
  }
  if (!labels.empty() && labels.size() != columns.size()) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("--labels: {} labels for {} columns",
                                                               labels.size(), columns.size()));
  }
  for (std::size_t i = 0; i < labels.size(); ++i) columns[i].label = labels[i];
  const Row rows[] = {
      {"completed", {"completed"}, Better::kHigher},
      {"failed", {"failed"}, Better::kLower},
      {"duration_s", {"duration_s"}, Better::kNeither},
      {"request_throughput", {"request_throughput"}, Better::kHigher},
      {"output_token_throughput", {"output_token_throughput"}, Better::kHigher},
      {"goodput", {"goodput"}, Better::kHigher},
      {"prefix_cache_hit_rate", {"prefix_cache_hit_rate"}, Better::kHigher},
      {"ttft_ms.mean", {"ttft_ms", "mean"}, Better::kLower},
      {"ttft_ms.p50", {"ttft_ms", "p50"}, Better::kLower},
      {"ttft_ms.p90", {"ttft_ms", "p90"}, Better::kLower},
      {"ttft_ms.p99", {"ttft_ms", "p99"}, Better::kLower},
      {"tpot_ms.mean", {"tpot_ms", "mean"}, Better::kLower},
      {"tpot_ms.p50", {"tpot_ms", "p50"}, Better::kLower},
      {"tpot_ms.p90", {"tpot_ms", "p90"}, Better::kLower},
      {"tpot_ms.p99", {"tpot_ms", "p99"}, Better::kLower},
      {"itl_ms.mean", {"itl_ms", "mean"}, Better::kLower},
      {"itl_ms.p50", {"itl_ms", "p50"}, Better::kLower},
      {"itl_ms.p90", {"itl_ms", "p90"}, Better::kLower},
      {"itl_ms.p99", {"itl_ms", "p99"}, Better::kLower},
      {"e2e_ms.mean", {"e2e_ms", "mean"}, Better::kLower},
      {"e2e_ms.p50", {"e2e_ms", "p50"}, Better::kLower},
      {"e2e_ms.p90", {"e2e_ms", "p90"}, Better::kLower},
      {"e2e_ms.p99", {"e2e_ms", "p99"}, Better::kLower},
  };
  std::size_t width = 14;
  for (const Column& c : columns) width = std::max(width, c.label.size() + 2);
  const std::string& base = columns.front().label;
  std::string out = fmt::format("{:<26}{:<8}{:>{}}", "metric", "better", base, width);
  std::vector<std::size_t> ratio_width(columns.size(), 16);
  for (std::size_t k = 1; k < columns.size(); ++k) {
    const std::string head = fmt::format("{}/{}", columns[k].label, base);
    ratio_width[k] = std::max<std::size_t>(16, head.size() + 2);
    out += fmt::format("{:>{}}{:>{}}", columns[k].label, width, head, ratio_width[k]);
  }
  out += '\n';
  for (const Row& row : rows) {
    const auto va = lookup(columns.front().doc, row.path);
    const char* dir = row.better == Better::kHigher  ? "higher"
                      : row.better == Better::kLower ? "lower"
                                                     : "-";
    out += fmt::format("{:<26}{:<8}{:>{}}", row.label, dir, cell(va), width);
    for (std::size_t k = 1; k < columns.size(); ++k) {
      const auto vb = lookup(columns[k].doc, row.path);
      std::string ratio = "-";
      if (va && vb && *va != 0.0) {
        ratio = fmt::format("{:.3f} {}", *vb / *va, verdict(row.better, *va, *vb));
        while (ratio.back() == ' ') ratio.pop_back();
      } else if (va && vb) {
        ratio = verdict(row.better, *va, *vb);
      }
      out += fmt::format("{:>{}}{:>{}}", cell(vb), width, ratio, ratio_width[k]);
    }
    out += '\n';
  }
  // Times in different bases do not compare: say so.
  auto base_of = [](const boost::json::value& d) {
    const auto* o = d.if_object();
    const auto* t = o ? o->if_contains("time_base") : nullptr;
    return t && t->is_string() ? std::string(t->get_string()) : std::string("wall");
  };
  for (std::size_t k = 1; k < columns.size(); ++k) {
    if (base_of(columns[k].doc) != base_of(columns.front().doc)) {
      out += fmt::format("note: {} is in {} time, {} in {} time: their latencies do not compare\n",
                         columns[k].label, base_of(columns[k].doc), base,
                         base_of(columns.front().doc));
    }
  }
  return out;
}

Result<std::string> compare_results(std::string_view a_json, std::string_view b_json,
                                    std::string_view a_name, std::string_view b_name) {
  const ResultsFile files[] = {{std::string(a_name), std::string(a_json)},
                               {std::string(b_name), std::string(b_json)}};
  return compare_results(files);
}

}  // namespace omni::benchstat
