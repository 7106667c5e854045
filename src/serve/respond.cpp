// Answers of omni-serve's generation requests: one JSON body, or an SSE stream whose chunks
// follow the engine's steps (n > 1 interleaves the choices as vLLM does), with vLLM's
// logprobs objects. The body and chunk formats are omni-sim's (vLLM's field order).
#include <charconv>
#include <cmath>

#include "omni/http/sse.hpp"
#include "serve/job.hpp"
#include "sim/driver.hpp"

namespace omni::serve {
namespace {

// Python's repr of a float (the shortest text that reads back the same double), clamped at
// -9999.0 as vLLM clamps -inf logprobs.
std::string py_float(float value) {
  double v = value;
  if (!(v > -9999.0)) v = -9999.0;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

std::string bytes_json(std::string_view s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(static_cast<unsigned char>(s[i]));
  }
  return out + "]";
}

// The top entries of one position, the sampled token included (vLLM returns up to k + 1).
std::vector<TopLogprob> with_sampled(const TokenLogprobs& lp, std::uint32_t token) {
  std::vector<TopLogprob> top = lp.top;
  bool found = false;
  for (const auto& t : top) found = found || t.token == token;
  if (!found) top.push_back({token, lp.logprob});
  return top;
}

void apply(ChoiceState& c, ChoiceDelta d) {
  c.tokens.insert(c.tokens.end(), d.tokens.begin(), d.tokens.end());
  c.logprobs.insert(c.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
  c.text += d.text;
  c.seen_tokens = d.total_tokens;
  c.seen_text = c.text.size();
  d.tokens.clear();
  d.logprobs.clear();
  d.text.clear();
  c.last = std::move(d);
}

std::string_view finish_of(const ChoiceState& c) {
  return c.done() ? sim::finish_reason_name(c.last.finish) : std::string_view();
}

sim::Usage usage_of(const Job& job, std::uint32_t completion) {
  sim::Usage u{job.prompt_len(), completion, std::nullopt};
  const std::uint32_t cached = job.choices.empty() ? 0 : job.choices.front()->last.cached_tokens;
  if (job.ctx.cfg.enable_prompt_tokens_details && cached > 0) u.cached_tokens = cached;
  return u;
}

}  // namespace

std::string logprobs_json(const Job& job, ChoiceState& c, std::size_t from, std::size_t to) {
  if (!job.sampling.logprobs || to <= from || c.logprobs.size() < to) return "null";
  const sim::TextCodec& codec = *job.ctx.codec;
  std::string out;
  if (job.endpoint == sim::Endpoint::kCompletions) {
    std::string offsets, values, tokens, tops;
    for (std::size_t i = from; i < to; ++i) {
      const std::string text = valid_utf8(codec.token_text(c.tokens[i]));
      const char* sep = i > from ? "," : "";
      offsets += sep + std::to_string(c.text_offset);
      c.text_offset += code_points(text);
      values += sep + py_float(c.logprobs[i].logprob);
      tokens += sep + sim::json_quote(text);
      std::string entry = "{";
      std::vector<std::string> keys;
      for (const TopLogprob& t : with_sampled(c.logprobs[i], c.tokens[i])) {
        const std::string key = valid_utf8(codec.token_text(t.token));
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;  // a dict
        keys.push_back(key);
        entry += (keys.size() > 1 ? "," : "") + sim::json_quote(key) + ":" + py_float(t.logprob);
      }
      tops += sep + entry + "}";
    }
    return "{\"text_offset\":[" + offsets + "],\"token_logprobs\":[" + values + "],\"tokens\":[" +
           tokens + "],\"top_logprobs\":[" + tops + "]}";
  }
  out = "{\"content\":[";
  for (std::size_t i = from; i < to; ++i) {
    const std::string text = valid_utf8(codec.token_text(c.tokens[i]));
    if (i > from) out += ',';
    out += "{\"token\":" + sim::json_quote(text) +
           ",\"logprob\":" + py_float(c.logprobs[i].logprob) + ",\"bytes\":" + bytes_json(text) +
           ",\"top_logprobs\":[";
    for (std::size_t k = 0; k < c.logprobs[i].top.size(); ++k) {
      const TopLogprob& t = c.logprobs[i].top[k];
      const std::string tt = valid_utf8(codec.token_text(t.token));
      out += (k ? "," : "") + std::string("{\"token\":") + sim::json_quote(tt) +
             ",\"logprob\":" + py_float(t.logprob) + ",\"bytes\":" + bytes_json(tt) + "}";
    }
    out += "]}";
  }
  return out + "]}";
}

const char* route_of(sim::Endpoint e) {
  return e == sim::Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

http::Headers response_headers(const Job& job) {
  http::Headers h;
  if (!job.request_header_id.empty()) h.set("X-Request-Id", job.request_header_id);
  return h;
}

Task<void> answer_error(Job& job, http::ResponseWriter& w, const sim::ApiError& error) {
  http::Response r = error.response();
  for (const auto& [name, value] : response_headers(job)) r.headers.set(name, value);
  job.ctx.metrics->on_http(route_of(job.endpoint), r.status);
  co_await w.send(std::move(r));
}

Task<void> respond_whole(Job& job, http::ResponseWriter& w) {
  const bool watching = w.watch_close([&job] { job.abort_all(); });
  bool timed_out = false;
  for (auto& c : job.choices) {
    while (!c->done()) {
      auto next = co_await c->channel->wait(c->seen_tokens, c->seen_text, job.deadline);
      if (!next) {
        timed_out = true;
        break;
      }
      apply(*c, std::move(*next));
    }
    if (timed_out) break;
  }
  if (watching) w.unwatch_close();
  if (timed_out) {
    job.abort_all();
    const sim::ApiError timeout = sim::internal_error("request timed out in the engine");
    co_await answer_error(job, w, timeout);
    co_return;
  }
  std::uint32_t completion = 0;
  for (const auto& c : job.choices) {
    if (c->last.error) {
      const int status = c->last.error_status;
      const sim::ApiError e{status, *c->last.error,
                            status == 400   ? "BadRequestError"
                            : status == 503 ? "ServiceUnavailableError"
                                            : "InternalServerError",
                            ""};
      job.abort_all();
      co_await answer_error(job, w, e);
      co_return;
    }
    if (c->last.finish == engine::FinishReason::kAbort) co_return;  // the client went away
    completion += static_cast<std::uint32_t>(c->tokens.size());
  }
  std::vector<std::string> texts, logprobs;
  std::vector<sim::Choice> choices;
  for (auto& c : job.choices) {
    texts.push_back(job.echo_text + c->text);
    c->text_offset = code_points(job.echo_text);
    logprobs.push_back(logprobs_json(job, *c, 0, c->tokens.size()));
  }
  for (std::size_t k = 0; k < job.choices.size(); ++k) {
    const ChoiceState& c = *job.choices[k];
    choices.push_back(
        sim::Choice{c.index, texts[k], finish_of(c), c.last.stop_reason, c.tokens, logprobs[k]});
  }
  const sim::TokenIds ids{job.req.prompt_tokens, {}, job.req.return_token_ids};
  const std::string params = job.pd == sim::PdMode::kPrefillOnly && !job.choices.empty()
                                 ? job.choices.front()->last.kv_transfer_params
                                 : std::string("null");
  http::Response r;
  r.headers.set("Content-Type", "application/json");
  r.body = sim::format_response(job.rctx, choices, usage_of(job, completion), ids, params);
  for (const auto& [name, value] : response_headers(job)) r.headers.set(name, value);
  job.ctx.metrics->on_http(route_of(job.endpoint), r.status);
  if (Status sent = co_await w.send(std::move(r)); !sent && job.pd == sim::PdMode::kPrefillOnly) {
    job.ctx.loop->drop_hold(job.hold_key);  // nobody will ever read these params
  }
}

Task<void> respond_stream(Job& job, http::ResponseWriter& w) {
  http::SseWriter sse(w);
  job.ctx.metrics->on_http(route_of(job.endpoint), 200);
  if (!(co_await sse.begin(response_headers(job)))) {
    job.abort_all();
    co_return;
  }
  const bool continuous = job.req.include_usage && job.req.continuous_usage_stats;
  if (job.endpoint == sim::Endpoint::kChat) {
    for (const auto& c : job.choices) {
      const std::optional<sim::Usage> usage =
          continuous ? std::optional<sim::Usage>(sim::Usage{job.prompt_len(), 0, std::nullopt})
                     : std::nullopt;
      const std::string role = sim::format_role_chunk(job.rctx, usage, c->index);
      if (!(co_await sse.send_data(role))) {
        job.abort_all();
        co_return;
      }
    }
  }
  std::vector<bool> echoed(job.choices.size(), job.echo_text.empty());
  std::optional<std::string> error;
  for (;;) {
    ChoiceState* waiting = nullptr;
    for (auto& c : job.choices) {
      if (!c->done()) {
        waiting = c.get();
        break;
      }
    }
    if (!waiting) break;
    auto next =
        co_await waiting->channel->wait(waiting->seen_tokens, waiting->seen_text, job.deadline);
    if (!next) {
      error = "request timed out in the engine";
      break;
    }
    for (std::size_t k = 0; k < job.choices.size() && !error; ++k) {
      ChoiceState& c = *job.choices[k];
      if (c.done()) continue;
      ChoiceDelta d =
          &c == waiting ? std::move(*next) : c.channel->read(c.seen_tokens, c.seen_text);
      if (d.error) {
        error = *d.error;
        break;
      }
      if (d.finish == engine::FinishReason::kAbort) {
        error = "request aborted";
        break;
      }
      if (d.tokens.empty() && d.text.empty() && !d.done()) continue;
      const std::size_t from = c.tokens.size();
      const std::string fresh_text = (echoed[k] ? "" : job.echo_text) + d.text;
      if (!echoed[k]) c.text_offset = 0;
      echoed[k] = true;
      const std::vector<std::uint32_t> fresh(d.tokens.begin(), d.tokens.end());
      apply(c, std::move(d));
      const std::string lp = logprobs_json(job, c, from, c.tokens.size());
      const std::string_view finish = finish_of(c);
      const std::optional<sim::Usage> usage =
          continuous
              ? std::optional<sim::Usage>(sim::Usage{
                    job.prompt_len(), static_cast<std::uint32_t>(c.tokens.size()), std::nullopt})
              : std::nullopt;
      const sim::TokenIds ids{{}, fresh, job.req.return_token_ids};
      const std::string chunk = sim::format_chunk(
          job.rctx, sim::Choice{c.index, fresh_text, finish, c.last.stop_reason, fresh, lp}, usage,
          ids, c.done() && !job.req.include_usage);
      if (!(co_await sse.send_data(chunk))) {
        job.abort_all();
        co_return;
      }
    }
    if (error) break;
  }
  if (error) {
    job.abort_all();
    const std::string err = sim::format_stream_error(*error, "InternalServerError", 500);
    co_await sse.send_data(err);
  } else if (job.req.include_usage) {
    std::uint32_t completion = 0;
    for (const auto& c : job.choices) completion += static_cast<std::uint32_t>(c->tokens.size());
    const std::string usage = sim::format_usage_chunk(job.rctx, usage_of(job, completion));
    co_await sse.send_data(usage);
  }
  const std::string done = "[DONE]";
  co_await sse.send_data(done);
  co_await sse.end();
}

}  // namespace omni::serve
