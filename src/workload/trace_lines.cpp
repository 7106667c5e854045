// The Mooncake and Azure line parsers: pure, bounded, fuzzed (fuzz/trace_parsers).
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <charconv>
#include <cmath>
#include <string>

#include "omni/workload/trace.hpp"

namespace omni::workload {
namespace {

Error bad_line(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// A JSON number as a double, whatever its JSON representation.
Result<double> json_number(const boost::json::value& v, std::string_view field) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return bad_line(std::string(field) + ": expected a number");
}

// A whole, non-negative token count no larger than kMaxTraceTokens.
Result<std::uint32_t> json_tokens(const boost::json::object& obj, std::string_view field) {
  const auto* v = obj.if_contains(field);
  if (v == nullptr) return bad_line("missing field " + std::string(field));
  std::uint64_t n = 0;
  if (v->is_int64() && v->get_int64() >= 0) {
    n = static_cast<std::uint64_t>(v->get_int64());
  } else if (v->is_uint64()) {
    n = v->get_uint64();
  } else {
    return bad_line(std::string(field) + ": expected a non-negative integer");
  }
  if (n > kMaxTraceTokens) return bad_line(std::string(field) + ": larger than 2^30");
  return static_cast<std::uint32_t>(n);
}

Result<std::vector<std::uint64_t>> json_hash_ids(const boost::json::object& obj) {
  const auto* v = obj.if_contains("hash_ids");
  if (v == nullptr) return std::vector<std::uint64_t>{};  // no sharing information
  if (!v->is_array()) return bad_line("hash_ids: expected an array");
  std::vector<std::uint64_t> ids;
  ids.reserve(v->get_array().size());
  for (const auto& item : v->get_array()) {
    if (item.is_int64() && item.get_int64() >= 0) {
      ids.push_back(static_cast<std::uint64_t>(item.get_int64()));
    } else if (item.is_uint64()) {
      ids.push_back(item.get_uint64());
    } else {
      return bad_line("hash_ids: expected non-negative integers");
    }
  }
  return ids;
}

template <class T>
bool parse_whole(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

Result<std::uint32_t> csv_tokens(std::string_view text, std::string_view field) {
  std::uint64_t n = 0;
  if (!parse_whole(text, n))
    return bad_line(std::string(field) + ": expected a non-negative integer");
  if (n > kMaxTraceTokens) return bad_line(std::string(field) + ": larger than 2^30");
  return static_cast<std::uint32_t>(n);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

Result<MooncakeRow> parse_mooncake_line(std::string_view line) {
  if (line.size() > kMaxTraceLineBytes)
    return make_error(ErrorCode::kTooLarge, "line longer than 4 MiB");
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(line, ec);
  if (ec) return bad_line("not JSON: " + ec.message());
  if (!doc.is_object()) return bad_line("expected a JSON object");
  const auto& obj = doc.get_object();
  MooncakeRow row;
  const auto* ts = obj.if_contains("timestamp");
  if (ts == nullptr) return bad_line("missing field timestamp");
  auto ts_ms = json_number(*ts, "timestamp");
  if (!ts_ms) return ts_ms.error();
  if (!std::isfinite(*ts_ms) || *ts_ms < 0) return bad_line("timestamp: must be finite and >= 0");
  row.timestamp_ms = *ts_ms;
  auto input = json_tokens(obj, "input_length");
  if (!input) return input.error();
  auto output = json_tokens(obj, "output_length");
  if (!output) return output.error();
  auto ids = json_hash_ids(obj);
  if (!ids) return ids.error();
  row.input_length = *input;
  row.output_length = *output;
  row.hash_ids = std::move(*ids);
  return row;
}

Result<double> parse_azure_timestamp(std::string_view text) {
  // YYYY-MM-DD HH:MM:SS[.f+]
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' ||
      (text[10] != ' ' && text[10] != 'T') || text[13] != ':' || text[16] != ':') {
    return bad_line("timestamp: expected 'YYYY-MM-DD HH:MM:SS[.fraction]'");
  }
  int year = 0;
  unsigned month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!parse_whole(text.substr(0, 4), year) || !parse_whole(text.substr(5, 2), month) ||
      !parse_whole(text.substr(8, 2), day) || !parse_whole(text.substr(11, 2), hour) ||
      !parse_whole(text.substr(14, 2), minute) || !parse_whole(text.substr(17, 2), second)) {
    return bad_line("timestamp: expected digits in 'YYYY-MM-DD HH:MM:SS'");
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return bad_line("timestamp: field out of range");
  }
  double fraction = 0.0;
  std::string_view rest = text.substr(19);
  if (!rest.empty()) {
    if (rest.front() != '.' || rest.size() < 2 || rest.size() > 10) {
      return bad_line("timestamp: expected '.digits' after the seconds");
    }
    double scale = 0.1;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return bad_line("timestamp: expected digits after '.'");
      fraction += scale * (c - '0');
      scale /= 10;
    }
  }
  const std::int64_t days = days_from_civil(year, month, day);
  const double whole = static_cast<double>(days * 86400 + hour * 3600 + minute * 60 + second);
  return whole + fraction;
}

Result<AzureRow> parse_azure_line(std::string_view line) {
  if (line.size() > kMaxTraceLineBytes)
    return make_error(ErrorCode::kTooLarge, "line longer than 4 MiB");
  line = trim(line);
  const auto c1 = line.find(',');
  const auto c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
  if (c2 == std::string_view::npos || line.find(',', c2 + 1) != std::string_view::npos) {
    return bad_line("expected three comma-separated fields");
  }
  auto ts = parse_azure_timestamp(trim(line.substr(0, c1)));
  if (!ts) return ts.error();
  auto context = csv_tokens(trim(line.substr(c1 + 1, c2 - c1 - 1)), "ContextTokens");
  if (!context) return context.error();
  auto generated = csv_tokens(trim(line.substr(c2 + 1)), "GeneratedTokens");
  if (!generated) return generated.error();
  return AzureRow{*ts, *context, *generated};
}

Result<TraceFormat> detect_trace_format(std::string_view line) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\xef' ||
                           line.front() == '\xbb' || line.front() == '\xbf')) {
    line.remove_prefix(1);  // spaces and a UTF-8 byte-order mark
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  if (line.starts_with("{")) return TraceFormat::kMooncake;
  if (line.starts_with("TIMESTAMP") || line.find("ContextTokens") != std::string_view::npos ||
      parse_azure_line(line)) {
    return TraceFormat::kAzure;
  }
  const std::string head(line.substr(0, 60));
  return make_error(ErrorCode::kInvalidArgument,
                    "cannot tell the trace format from its first line '" + head +
                        "': a Mooncake trace has JSON lines, an Azure trace the header "
                        "TIMESTAMP,ContextTokens,GeneratedTokens");
}

std::string_view trace_format_name(TraceFormat format) {
  return format == TraceFormat::kMooncake ? "mooncake" : "azure";
}

Result<TraceFormat> parse_trace_format(std::string_view name) {
  if (name == "mooncake") return TraceFormat::kMooncake;
  if (name == "azure") return TraceFormat::kAzure;
  return bad_line("trace format: expected 'mooncake' or 'azure', got '" + std::string(name) + "'");
}

}  // namespace omni::workload
