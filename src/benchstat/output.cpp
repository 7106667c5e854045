// The results JSON, the per-request lines and the end-of-run table.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "omni/benchstat/summary.hpp"
#include "omni/common/json_text.hpp"

namespace omni::benchstat {
namespace {

// Shortest round-trip decimal; JSON has no NaN or infinity, so those become null.
std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string optional_number(const std::optional<double>& v) { return v ? number(*v) : "null"; }

// A Stat in milliseconds; null fields when there were no samples.
std::string stat_ms(const Stat& s) {
  auto ms = [&](double seconds) {
    return s.count == 0 ? std::string("null") : number(seconds * 1000.0);
  };
  return fmt::format(R"({{"mean":{},"p50":{},"p90":{},"p99":{},"min":{},"max":{},"count":{}}})",
                     ms(s.mean), ms(s.p50), ms(s.p90), ms(s.p99), ms(s.min), ms(s.max), s.count);
}

std::string count_map(const std::map<std::string, std::uint64_t>& counts) {
  std::string out = "{";
  for (const auto& [key, n] : counts) {
    if (out.size() > 1) out.push_back(',');
    json::append_string(out, key);
    out += fmt::format(":{}", n);
  }
  return out + "}";
}

std::string slo_json(const Slo& slo) {
  auto ms = [](const std::optional<double>& s) {
    return s ? number(*s * 1000.0) : std::string("null");
  };
  return fmt::format(R"({{"ttft_ms":{},"tpot_ms":{},"e2e_ms":{}}})", ms(slo.ttft_s), ms(slo.tpot_s),
                     ms(slo.e2e_s));
}

}  // namespace

std::string to_json(const Summary& s, std::string_view config_json) {
  std::string out = "{\"schema\":\"omni-bench-results/1\"";
  out += fmt::format(",\"completed\":{},\"failed\":{},\"duration_s\":{}", s.completed, s.failed,
                     number(s.duration_s));
  out += fmt::format(",\"total_input_tokens\":{},\"total_output_tokens\":{}", s.total_input_tokens,
                     s.total_output_tokens);
  out += fmt::format(
      ",\"request_throughput\":{},\"output_token_throughput\":{},\"total_token_throughput\":{}",
      number(s.request_throughput), number(s.output_token_throughput),
      number(s.total_token_throughput));
  out += fmt::format(",\"goodput\":{},\"slo\":{}", optional_number(s.goodput), slo_json(s.slo));
  if (s.goodput_offered) out += fmt::format(",\"goodput_offered\":{}", number(*s.goodput_offered));
  out += fmt::format(",\"prefix_cache_hit_rate\":{}", optional_number(s.prefix_cache_hit_rate));
  if (s.server_speed)
    out += fmt::format(",\"time_base\":\"model\",\"server_speed\":{}", number(*s.server_speed));
  out += fmt::format(",\"ttft_ms\":{},\"tpot_ms\":{},\"itl_ms\":{},\"e2e_ms\":{}", stat_ms(s.ttft),
                     stat_ms(s.tpot), stat_ms(s.itl), stat_ms(s.e2e));
  out += fmt::format(",\"errors\":{{\"by_kind\":{},\"by_status\":{}}}", count_map(s.errors_by_kind),
                     count_map(s.errors_by_status));
  if (!config_json.empty()) {
    out += ",\"config\":";
    out += config_json;
  }
  return out + "}";
}

std::string record_json_line(const RequestRecord& r) {
  std::string out =
      fmt::format(R"({{"index":{},"start_s":{},"ok":{},)", r.index, number(r.start_s), r.ok);
  out += "\"error\":";
  if (r.ok) {
    out += "null";
  } else {
    json::append_string(out, error_kind_name(r.error));
  }
  out += ",\"error_message\":";
  json::append_string(out, r.error_message);
  out += fmt::format(R"(,"http_status":{},"input_tokens":{},"output_tokens":{},"cached_tokens":{})",
                     r.http_status, r.input_tokens, r.output_tokens,
                     r.cached_tokens ? std::to_string(*r.cached_tokens) : "null");
  const auto tpot = tpot_s(r);
  out += fmt::format(R"(,"ttft_ms":{},"tpot_ms":{},"e2e_ms":{},"itl_ms":[)",
                     r.ok ? number(r.ttft_s * 1000) : "null", tpot ? number(*tpot * 1000) : "null",
                     number(r.e2e_s * 1000));
  for (std::size_t i = 0; i < r.itl_s.size(); ++i) {
    if (i != 0) out.push_back(',');
    out += number(r.itl_s[i] * 1000);
  }
  out +=
      fmt::format("],\"session_id\":{}}}", r.session_id ? std::to_string(*r.session_id) : "null");
  return out;
}

std::string format_table(const Summary& s) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) {
    out += fmt::format("{:<40}{:>12}\n", label, value);
  };
  auto f2 = [](double v) { return fmt::format("{:.2f}", v); };
  auto section = [&](std::string_view title) { out += fmt::format("{:-^52}\n", title); };
  auto stat = [&](std::string_view name, const Stat& st) {
    line(fmt::format("Mean {} (ms):", name), f2(st.mean * 1000));
    line(fmt::format("Median {} (ms):", name), f2(st.p50 * 1000));
    line(fmt::format("P90 {} (ms):", name), f2(st.p90 * 1000));
    line(fmt::format("P99 {} (ms):", name), f2(st.p99 * 1000));
  };
  out += fmt::format("{:=^52}\n", " Serving Benchmark Result ");
  if (s.server_speed) {
    out += fmt::format("Times are model time: the server's clock runs {}x (wall times x {}).\n",
                       number(*s.server_speed), number(*s.server_speed));
  }
  line("Successful requests:", std::to_string(s.completed));
  line("Failed requests:", std::to_string(s.failed));
  line("Benchmark duration (s):", f2(s.duration_s));
  line("Total input tokens:", std::to_string(s.total_input_tokens));
  line("Total generated tokens:", std::to_string(s.total_output_tokens));
  line("Request throughput (req/s):", f2(s.request_throughput));
  if (s.goodput) line("Request goodput (req/s):", f2(*s.goodput));
  line("Output token throughput (tok/s):", f2(s.output_token_throughput));
  line("Total token throughput (tok/s):", f2(s.total_token_throughput));
  if (s.prefix_cache_hit_rate)
    line("Prefix cache hit rate:", fmt::format("{:.4f}", *s.prefix_cache_hit_rate));
  section("Time to First Token");
  stat("TTFT", s.ttft);
  section("Time per Output Token (excl. 1st token)");
  stat("TPOT", s.tpot);
  section("Inter-token Latency");
  stat("ITL", s.itl);
  section("End-to-end Latency");
  stat("E2EL", s.e2e);
  if (s.failed > 0) {
    section("Errors");
    for (const auto& [kind, n] : s.errors_by_kind)
      line(fmt::format("{}:", kind), std::to_string(n));
    for (const auto& [status, n] : s.errors_by_status)
      line(fmt::format("HTTP {}:", status), std::to_string(n));
  }
  out += std::string(52, '=') + "\n";
  return out;
}

}  // namespace omni::benchstat
