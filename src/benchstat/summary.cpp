// Aggregation with vLLM's definitions (omni/benchstat/summary.hpp).
#include "omni/benchstat/summary.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "omni/config/codec.hpp"

namespace omni::benchstat {

Result<Slo> parse_slo(std::string_view text) {
  Slo slo;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    start = end + 1;
    const auto eq = item.find('=');
    auto bad = [&](std::string_view why) {
      return make_error(ErrorCode::kInvalidArgument,
                        "--slo item '" + std::string(item) + "': " + std::string(why));
    };
    if (eq == std::string_view::npos) return bad("expected name=duration");
    auto d = config::parse_duration(item.substr(eq + 1));
    if (!d) return bad(d.error().message);
    if (d->count() <= 0) return bad("must be > 0");
    const std::string_view name = item.substr(0, eq);
    const double seconds = to_seconds(*d);
    if (name == "ttft") {
      slo.ttft_s = seconds;
    } else if (name == "tpot") {
      slo.tpot_s = seconds;
    } else if (name == "e2e" || name == "e2el") {
      slo.e2e_s = seconds;
    } else {
      return bad("unknown metric (ttft, tpot, e2e)");
    }
  }
  return slo;
}

bool meets(const Slo& slo, const RequestRecord& record) noexcept {
  if (!record.ok) return false;
  if (slo.ttft_s && record.ttft_s > *slo.ttft_s) return false;
  if (slo.tpot_s && tpot_s(record).value_or(0.0) > *slo.tpot_s) return false;
  if (slo.e2e_s && record.e2e_s > *slo.e2e_s) return false;
  return true;
}

double percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0.0;
  // numpy "linear": position (n-1)*q/100 between the two closest ranks.
  const double pos = (static_cast<double>(values.size()) - 1.0) * q / 100.0;
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  const double lo_value = values[lo];
  double hi_value = lo_value;
  if (hi != lo)
    hi_value = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(hi), values.end());
  return lo_value + (hi_value - lo_value) * (pos - static_cast<double>(lo));
}

Stat describe(std::vector<double> values) {
  Stat s;
  s.count = values.size();
  if (values.empty()) return s;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  const auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  s.min = *mn;
  s.max = *mx;
  s.p50 = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  return s;
}

Summary summarize(std::span<const RequestRecord> records, double duration_s, const Slo& slo) {
  Summary s;
  s.duration_s = duration_s;
  s.slo = slo;
  std::vector<double> ttft, tpot, itl, e2e;
  std::uint64_t good = 0, cached = 0;
  bool cache_known = false;
  for (const RequestRecord& r : records) {
    if (!r.ok) {
      ++s.failed;
      ++s.errors_by_kind[std::string(error_kind_name(r.error))];
      if (r.error == ErrorKind::kHttpStatus) ++s.errors_by_status[std::to_string(r.http_status)];
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.input_tokens;
    s.total_output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    if (auto t = tpot_s(r)) tpot.push_back(*t);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (r.cached_tokens) {
      cache_known = true;
      cached += *r.cached_tokens;
    }
    if (meets(slo, r)) ++good;
  }
  s.ttft = describe(std::move(ttft));
  s.tpot = describe(std::move(tpot));
  s.itl = describe(std::move(itl));
  s.e2e = describe(std::move(e2e));
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.output_token_throughput = static_cast<double>(s.total_output_tokens) / duration_s;
    s.total_token_throughput =
        static_cast<double>(s.total_input_tokens + s.total_output_tokens) / duration_s;
    if (!slo.empty()) s.goodput = static_cast<double>(good) / duration_s;
  } else if (!slo.empty()) {
    s.goodput = 0.0;
  }
  if (cache_known && s.total_input_tokens > 0) {
    s.prefix_cache_hit_rate =
        static_cast<double>(cached) / static_cast<double>(s.total_input_tokens);
  }
  return s;
}

void scale_times(std::span<RequestRecord> records, double speed) {
  for (RequestRecord& r : records) {
    r.start_s *= speed;
    r.ttft_s *= speed;
    r.e2e_s *= speed;
    for (double& itl : r.itl_s) itl *= speed;
  }
}

}  // namespace omni::benchstat
