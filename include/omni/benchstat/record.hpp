// Per-request measurements of a streamed generation, and how one is built from the stream.
//
// Definitions follow `vllm bench serve` (vllm/benchmarks/lib/endpoint_request_func.py and
// serve.py), so figures are comparable with vLLM's own tool:
//   TTFT  = arrival of the first SSE chunk that has a non-empty `choices` array − send time;
//   ITL   = the gap between two consecutive such chunks (per chunk, not per token);
//   E2E   = arrival of the end of the stream − send time;
//   TPOT  = (E2E − TTFT) / (output_tokens − 1), defined only when output_tokens > 1;
//   output_tokens = usage.completion_tokens when the server reports it, else the number of
//           content chunks (vLLM re-tokenizes the text instead; with one token per chunk the
//           two agree).
// Failed requests carry their error kind and never enter latency statistics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::benchstat {

// Why a request failed. The names are stable: they are keys of the results JSON.
enum class ErrorKind {
  kNone,
  kConnect,          // "connect": refused, reset or unreachable before a response
  kTimeout,          // "timeout": no byte within the read timeout, or over the request timeout
  kHttpStatus,       // "http_status": a non-2xx status
  kMalformedStream,  // "malformed_stream": not SSE, not JSON, cut mid-event or before [DONE]
  kServerError,      // "server_error": an {"error": ...} event inside the stream
  kNoTokens,         // "no_tokens": a well-formed stream without a single content chunk
  kOther,            // "other": anything else (a local failure)
};
std::string_view error_kind_name(ErrorKind kind) noexcept;

struct RequestRecord {
  std::uint64_t index = 0;
  double start_s = 0.0;  // send time, seconds since the run started
  bool ok = false;
  ErrorKind error = ErrorKind::kNone;
  int http_status = 0;  // 0 when no response head arrived
  std::string error_message;
  double ttft_s = 0.0;
  std::vector<double> itl_s;
  double e2e_s = 0.0;
  std::uint32_t input_tokens = 0;
  std::uint32_t output_tokens = 0;
  std::optional<std::uint32_t> cached_tokens;  // usage.prompt_tokens_details.cached_tokens
  std::optional<std::uint64_t> session_id;
};

// vLLM's per-request TPOT; std::nullopt for failed requests or output_tokens <= 1.
std::optional<double> tpot_s(const RequestRecord& record) noexcept;

// One parsed SSE `data:` payload of an OpenAI-compatible stream.
struct StreamChunk {
  bool done = false;         // the "[DONE]" sentinel
  bool has_choices = false;  // a non-empty "choices" array: a content chunk
  std::optional<std::uint32_t> prompt_tokens;
  std::optional<std::uint32_t> completion_tokens;
  std::optional<std::uint32_t> cached_tokens;
  std::optional<std::string> error;  // the message of an {"error": {...}} event
};
// kProtocol for anything that is neither [DONE] nor a JSON object.
Result<StreamChunk> parse_stream_chunk(std::string_view data);

// Folds the chunks of one stream into a RequestRecord. Times are seconds on one clock.
class RecordBuilder {
 public:
  RecordBuilder(std::uint64_t index, double start_s, std::uint32_t input_tokens);
  void set_session(std::uint64_t session_id) { record_.session_id = session_id; }
  void on_chunk(double now_s, const StreamChunk& chunk);
  // The stream ended (after [DONE], or cleanly without it when `saw_done` is false).
  RequestRecord finish(double now_s, bool saw_done);
  // The request failed; whatever was measured is kept for the per-request log.
  RequestRecord fail(double now_s, ErrorKind kind, std::string message, int http_status = 0);
  int content_chunks() const noexcept { return chunks_; }

 private:
  RequestRecord record_;
  double last_chunk_s_ = 0.0;
  int chunks_ = 0;
  std::optional<std::uint32_t> usage_completion_;
  std::optional<std::string> server_error_;
};

}  // namespace omni::benchstat
