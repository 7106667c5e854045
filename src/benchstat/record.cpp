// Stream chunks to per-request records, with vLLM's definitions (omni/benchstat/record.hpp).
#include "omni/benchstat/record.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace omni::benchstat {
namespace {

std::optional<std::uint32_t> count_field(const boost::json::object& obj, std::string_view key) {
  const auto* v = obj.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= INT32_MAX) {
    return static_cast<std::uint32_t>(v->get_int64());
  }
  if (v->is_uint64() && v->get_uint64() <= INT32_MAX)
    return static_cast<std::uint32_t>(v->get_uint64());
  return std::nullopt;
}

void read_usage(const boost::json::object& obj, StreamChunk& chunk) {
  const auto* usage = obj.if_contains("usage");
  if (usage == nullptr || !usage->is_object()) return;
  const auto& u = usage->get_object();
  chunk.prompt_tokens = count_field(u, "prompt_tokens");
  chunk.completion_tokens = count_field(u, "completion_tokens");
  const auto* details = u.if_contains("prompt_tokens_details");
  if (details != nullptr && details->is_object()) {
    chunk.cached_tokens = count_field(details->get_object(), "cached_tokens");
  }
}

std::string error_message(const boost::json::value& error) {
  if (error.is_object()) {
    const auto* msg = error.get_object().if_contains("message");
    if (msg != nullptr && msg->is_string()) return std::string(msg->get_string());
  }
  if (error.is_string()) return std::string(error.get_string());
  return "error event without a message";
}

}  // namespace

std::string_view error_kind_name(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kNone: return "none";
    case ErrorKind::kConnect: return "connect";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kHttpStatus: return "http_status";
    case ErrorKind::kMalformedStream: return "malformed_stream";
    case ErrorKind::kServerError: return "server_error";
    case ErrorKind::kNoTokens: return "no_tokens";
    case ErrorKind::kOther: return "other";
  }
  return "other";
}

std::optional<double> tpot_s(const RequestRecord& record) noexcept {
  if (!record.ok || record.output_tokens <= 1) return std::nullopt;
  return (record.e2e_s - record.ttft_s) / static_cast<double>(record.output_tokens - 1);
}

Result<StreamChunk> parse_stream_chunk(std::string_view data) {
  StreamChunk chunk;
  if (data == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  boost::system::error_code ec;
  boost::json::value doc = boost::json::parse(data, ec);
  if (ec || !doc.is_object()) {
    return make_error(ErrorCode::kProtocol, "stream event is not a JSON object");
  }
  const auto& obj = doc.get_object();
  if (const auto* error = obj.if_contains("error")) {
    chunk.error = error_message(*error);
    return chunk;
  }
  const auto* choices = obj.if_contains("choices");
  chunk.has_choices = choices != nullptr && choices->is_array() && !choices->get_array().empty();
  read_usage(obj, chunk);
  return chunk;
}

RecordBuilder::RecordBuilder(std::uint64_t index, double start_s, std::uint32_t input_tokens) {
  record_.index = index;
  record_.start_s = start_s;
  record_.input_tokens = input_tokens;
}

void RecordBuilder::on_chunk(double now_s, const StreamChunk& chunk) {
  if (chunk.error) server_error_ = chunk.error;
  if (chunk.has_choices) {
    if (chunks_ == 0) {
      record_.ttft_s = now_s - record_.start_s;
    } else {
      record_.itl_s.push_back(now_s - last_chunk_s_);
    }
    last_chunk_s_ = now_s;
    ++chunks_;
  }
  if (chunk.completion_tokens) usage_completion_ = chunk.completion_tokens;
  if (chunk.cached_tokens) record_.cached_tokens = chunk.cached_tokens;
}

RequestRecord RecordBuilder::finish(double now_s, bool saw_done) {
  if (server_error_) return fail(now_s, ErrorKind::kServerError, *server_error_, 200);
  if (!saw_done)
    return fail(now_s, ErrorKind::kMalformedStream, "stream ended without [DONE]", 200);
  if (chunks_ == 0) return fail(now_s, ErrorKind::kNoTokens, "no content chunk before [DONE]", 200);
  record_.ok = true;
  record_.http_status = 200;
  record_.e2e_s = now_s - record_.start_s;
  record_.output_tokens = usage_completion_.value_or(static_cast<std::uint32_t>(chunks_));
  return std::move(record_);
}

RequestRecord RecordBuilder::fail(double now_s, ErrorKind kind, std::string message,
                                  int http_status) {
  record_.ok = false;
  record_.error = kind;
  record_.error_message = std::move(message);
  record_.http_status = http_status;
  record_.e2e_s = now_s - record_.start_s;
  record_.output_tokens = usage_completion_.value_or(static_cast<std::uint32_t>(chunks_));
  return std::move(record_);
}

}  // namespace omni::benchstat
