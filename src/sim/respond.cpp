// Answers of generation requests: one JSON body, or an SSE stream whose chunks follow the
// engine's steps, for every choice (n > 1 interleaves them as vLLM does); the injected faults
// that act mid-answer (stall, in-stream error, crash after N tokens).
#include <boost/asio/this_coro.hpp>

#include <cstdlib>

#include "omni/http/sse.hpp"
#include "omni/log/log.hpp"
#include "sim/job.hpp"

namespace omni::sim {
namespace {

std::string_view stop_reason_of(const ChoiceState& c) {
  return c.last.finish == engine::FinishReason::kStop ? std::string_view(c.plan.stop_reason)
                                                      : std::string_view("null");
}

void crash_if_due(const Job& job, std::uint32_t tokens) {
  const std::uint64_t after = job.ctx.faults->config().crash_after_tokens;
  if (after == 0 || tokens < after) return;
  log::get("sim")->error("fault injection: crashing after {} tokens", after);
  std::_Exit(70);
}

// The cached-token count for usage.prompt_tokens_details (with the flag and a non-zero count).
std::uint32_t cached_for_usage(const Job& job) {
  return job.choices.empty() ? 0 : job.choices.front()->last.cached_tokens;
}

}  // namespace

Task<void> respond_whole(Job& job, http::ResponseWriter& w) {
  // A client that goes away while the engine works aborts its requests at once.
  const bool watching = w.watch_close([&job] { job.abort_all(); });
  bool timed_out = false;
  for (auto& c : job.choices) {
    while (!c->last.done()) {
      auto next = co_await c->channel->wait(c->last.output_tokens, job.deadline);
      if (!next) {
        timed_out = true;
        break;
      }
      c->last = *next;
    }
    if (timed_out) break;
  }
  if (watching) w.unwatch_close();
  if (timed_out) {
    job.abort_all();
    const ApiError timeout = internal_error("request timed out in the engine");
    co_await answer_error(job, w, timeout);
    co_return;
  }
  std::uint32_t most = 0;
  for (const auto& c : job.choices) {
    if (c->last.error) {
      const int status = c->last.error_status;
      ApiError e{status, *c->last.error, status == 400 ? "BadRequestError" : "InternalServerError",
                 ""};
      job.abort_all();
      co_await answer_error(job, w, e);
      co_return;
    }
    if (c->last.finish == engine::FinishReason::kAbort) co_return;  // the client went away
    most = std::max(most, c->last.output_tokens);
  }
  crash_if_due(job, most);
  std::vector<std::string> texts;
  std::vector<std::vector<std::uint32_t>> ids;
  std::vector<Choice> choices;
  for (auto& c : job.choices) {
    texts.push_back(c->shown.feed(0, c->last.output_tokens, *job.ctx.codec, c->gen));
    ids.push_back(c->gen.range(0, c->last.output_tokens));
  }
  for (std::size_t k = 0; k < job.choices.size(); ++k) {
    const ChoiceState& c = *job.choices[k];
    choices.push_back(
        Choice{c.index, texts[k], finish_reason_name(c.last.finish), stop_reason_of(c), ids[k]});
  }
  const TokenIds token_ids{job.req.prompt_tokens, {}, job.req.return_token_ids};
  http::Response r;
  r.headers.set("Content-Type", "application/json");
  r.body = format_response(job.rctx, choices, job.usage(cached_for_usage(job)), token_ids,
                           prefill_params_json(job));
  for (const auto& [name, value] : response_headers(job)) r.headers.set(name, value);
  job.ctx.metrics->on_http(route_of(job.endpoint), r.status);
  if (Status sent = co_await w.send(std::move(r)); !sent && job.pd.mode == PdMode::kPrefillOnly) {
    // Nobody will ever read these params: free the KV held for them now, not at lease expiry.
    job.abort_all();
  }
}

namespace {

// What one pass over the choices did to the stream.
enum class StreamStep { kMore, kDone, kClosed };

Task<StreamStep> send_progress(Job& job, http::SseWriter& sse, ChoiceState& c,
                               const RequestProgress& p) {
  const bool continuous = job.req.include_usage && job.req.continuous_usage_stats;
  const bool newly_done = p.done() && !c.last.done();
  if (p.output_tokens == c.sent && !newly_done) co_return StreamStep::kMore;
  const std::string text = c.shown.feed(c.sent, p.output_tokens, *job.ctx.codec, c.gen);
  const std::vector<std::uint32_t> fresh = c.gen.range(c.sent, p.output_tokens);
  c.last = p;
  const std::string_view finish = p.done() ? finish_reason_name(p.finish) : std::string_view();
  const std::optional<Usage> usage =
      continuous ? std::optional<Usage>(Usage{job.prompt_len(), p.output_tokens, std::nullopt})
                 : std::nullopt;
  const TokenIds ids{{}, fresh, job.req.return_token_ids};
  const bool fingerprint = p.done() && !job.req.include_usage;
  const std::string chunk = format_chunk(
      job.rctx, Choice{c.index, text, finish, stop_reason_of(c), fresh}, usage, ids, fingerprint);
  if (!(co_await sse.send_data(chunk))) co_return StreamStep::kClosed;
  c.sent = p.output_tokens;
  crash_if_due(job, c.sent);
  co_return StreamStep::kMore;
}

// Injected mid-stream faults, checked after every chunk; kClosed ends the stream.
Task<StreamStep> stream_faults(Job& job, http::ResponseWriter& w, http::SseWriter& sse,
                               std::uint32_t sent, bool& stalled) {
  const FaultConfig& f = job.ctx.faults->config();
  if (job.fault.stream_error && sent >= f.stream_error_after_tokens) {
    job.ctx.metrics->on_fault("stream_error");
    job.abort_all();
    const std::string err = format_stream_error("injected fault (--fault-stream-error-rate)",
                                                "InternalServerError", 500);
    co_await sse.send_data(err);
    co_return StreamStep::kDone;
  }
  if (job.fault.stall && !stalled && sent >= f.stall_after_tokens) {
    stalled = true;
    job.ctx.metrics->on_fault("stall");
    if (f.stall_duration.count() == 0) {
      // Stalls forever: nothing more is sent; the request ends when the client gives up.
      co_await wait_for_close(w, std::chrono::hours(24));
      job.abort_all();
      co_return StreamStep::kClosed;
    }
    co_await sleep_for(f.stall_duration);
  }
  co_return StreamStep::kMore;
}

}  // namespace

Task<void> respond_stream(Job& job, http::ResponseWriter& w) {
  http::SseWriter sse(w);
  job.ctx.metrics->on_http(route_of(job.endpoint), 200);
  if (!(co_await sse.begin(response_headers(job)))) {
    job.abort_all();
    co_return;
  }
  const bool continuous = job.req.include_usage && job.req.continuous_usage_stats;
  if (job.endpoint == Endpoint::kChat) {
    for (const auto& c : job.choices) {
      const std::optional<Usage> usage =
          continuous ? std::optional<Usage>(Usage{job.prompt_len(), 0, std::nullopt})
                     : std::nullopt;
      const std::string role = format_role_chunk(job.rctx, usage, c->index);
      if (!(co_await sse.send_data(role))) {
        job.abort_all();
        co_return;
      }
    }
  }
  bool stalled = false;
  bool ended = false;  // by an error event or a fault; [DONE] still follows
  for (;;) {
    ChoiceState* waiting = nullptr;
    for (auto& c : job.choices) {
      if (!c->last.done()) {
        waiting = c.get();
        break;
      }
    }
    if (!waiting) break;
    auto next = co_await waiting->channel->wait(waiting->sent, job.deadline);
    std::optional<std::string> error;
    if (!next) error = "request timed out in the engine";
    for (auto& c : job.choices) {
      if (error) break;
      if (c->last.done()) continue;
      const RequestProgress p = c.get() == waiting ? *next : c->channel->snapshot();
      if (p.error) {
        error = *p.error;
      } else if (p.finish == engine::FinishReason::kAbort) {
        error = "request aborted";
      } else {
        const StreamStep step = co_await send_progress(job, sse, *c, p);
        if (step == StreamStep::kClosed) {
          job.abort_all();
          co_return;
        }
      }
    }
    if (error) {
      job.abort_all();
      const std::string err = format_stream_error(*error, "InternalServerError", 500);
      co_await sse.send_data(err);
      ended = true;
      break;
    }
    std::uint32_t sent = 0;
    for (const auto& c : job.choices) sent = std::max(sent, c->sent);
    const StreamStep faulted = co_await stream_faults(job, w, sse, sent, stalled);
    if (faulted == StreamStep::kClosed) co_return;
    if (faulted == StreamStep::kDone) {
      ended = true;
      break;
    }
  }
  if (!ended && job.req.include_usage) {
    const std::string usage = format_usage_chunk(job.rctx, job.usage(cached_for_usage(job)));
    co_await sse.send_data(usage);
  }
  const std::string done = "[DONE]";
  co_await sse.send_data(done);
  co_await sse.end();
}

}  // namespace omni::sim
