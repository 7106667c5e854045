// Aggregation of RequestRecords into the results every Omni load tool writes.
//
// The JSON written by to_json() is the shared contract of omni-bench and omni-cluster
// (documented field by field in docs/omni-bench.md). Statistics follow `vllm bench serve`:
// percentiles interpolate linearly between closest ranks (numpy's default), TPOT statistics
// use requests with more than one output token, ITL statistics pool every gap of every
// request, goodput counts completed requests that meet every given SLO (a single-token
// request's TPOT counts as 0, as in vLLM) and divides by the duration.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/benchstat/record.hpp"
#include "omni/common/result.hpp"

namespace omni::benchstat {

// Service-level objectives, in seconds; unset ones are not checked.
struct Slo {
  std::optional<double> ttft_s;
  std::optional<double> tpot_s;
  std::optional<double> e2e_s;
  bool empty() const noexcept { return !ttft_s && !tpot_s && !e2e_s; }
};
// "ttft=2s,tpot=80ms,e2e=30s" (durations need a unit); an empty text is no SLO.
Result<Slo> parse_slo(std::string_view text);
bool meets(const Slo& slo, const RequestRecord& record) noexcept;

struct Stat {  // in seconds; all zero with count 0 when there were no samples
  std::size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};
// numpy.percentile(values, q) with linear interpolation; `values` need not be sorted.
double percentile(std::vector<double>& values, double q);
Stat describe(std::vector<double> values);

struct Summary {
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  double duration_s = 0;
  std::uint64_t total_input_tokens = 0;
  std::uint64_t total_output_tokens = 0;
  double request_throughput = 0;       // completed / duration
  double output_token_throughput = 0;  // output tokens of completed requests / duration
  double total_token_throughput = 0;   // (input + output) / duration
  std::optional<double> goodput;       // requests/s meeting the SLO; unset without an SLO
  // The same per second of the arrival span (first to last arrival), when the producer knows
  // it (omni-cluster); written to the JSON only when set.
  std::optional<double> goodput_offered;
  std::optional<double> prefix_cache_hit_rate;  // cached / prompt tokens, when reported
  Stat ttft, tpot, itl, e2e;
  std::map<std::string, std::uint64_t> errors_by_kind;
  std::map<std::string, std::uint64_t> errors_by_status;  // non-2xx statuses (http_status errors)
  Slo slo;
  // Set when the times are a sped-up server's model time (the wall times times this speed);
  // written as "time_base":"model","server_speed":S. Unset: wall time (or, for omni-cluster,
  // virtual time), and nothing is written.
  std::optional<double> server_speed;
};
Summary summarize(std::span<const RequestRecord> records, double duration_s, const Slo& slo = {});
// Multiplies every time of `records` (send times, TTFT, ITLs, E2E) by `speed`: the wall times
// of a server whose clock runs `speed` times faster become its model times.
void scale_times(std::span<RequestRecord> records, double speed);

// The results JSON. `extra` (a JSON object text, e.g. the run's configuration) is inserted
// under "config" when non-empty.
std::string to_json(const Summary& summary, std::string_view config_json = {});
// The end-of-run table, in the layout of `vllm bench serve`.
std::string format_table(const Summary& summary);
// One request as a single JSON line (no trailing newline).
std::string record_json_line(const RequestRecord& record);
// Two results JSON texts side by side: each headline metric of a and b and the ratio b/a.
Result<std::string> compare_results(std::string_view a_json, std::string_view b_json,
                                    std::string_view a_name = "a", std::string_view b_name = "b");

// Several results files side by side, the first column the baseline. Each file is one results
// object (omni-bench, omni-cluster with one policy) or an array of them (omni-cluster with
// several policies: one column each). A column is labelled by `labels` (in column order) when
// given, else by the results' config.label, else config.policy, else the file name ("#i" for
// an array's element i). Every metric says which way is better ("higher"/"lower") and each
// column after the first its ratio to the baseline and whether it is better or worse.
struct ResultsFile {
  std::string name;  // shown when nothing labels a column
  std::string text;
};
Result<std::string> compare_results(std::span<const ResultsFile> files,
                                    std::span<const std::string> labels = {});

}  // namespace omni::benchstat
