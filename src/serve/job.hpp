// One generation request as omni-serve's routes carry it (generate.cpp) and answer it
// (respond.cpp).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "omni/http/server.hpp"
#include "serve/context.hpp"
#include "sim/pd.hpp"
#include "sim/response.hpp"

namespace omni::serve {

// One choice (n > 1 gives several): its channel and what the answer has used of it.
struct ChoiceState {
  std::uint32_t index = 0;
  std::shared_ptr<ChoiceChannel> channel;
  engine::SeqId seq = 0;
  std::uint32_t seen_tokens = 0;
  std::size_t seen_text = 0;
  std::vector<std::uint32_t> tokens;
  std::vector<TokenLogprobs> logprobs;
  std::string text;
  std::size_t text_offset = 0;  // completions logprobs: the next token's offset in the text
  ChoiceDelta last;             // the latest read (finish, stop reason, params)
  bool done() const { return last.done(); }
};

struct Job {
  ServeService::Context& ctx;
  sim::Endpoint endpoint;
  sim::GenerationRequest req;
  SamplingParams sampling;
  sim::PdMode pd = sim::PdMode::kNone;
  std::optional<RemoteKv> remote;
  std::string hold_key;  // prefill-only: what the decode instance pulls
  std::string base_id;
  std::string request_header_id;
  std::string echo_text;  // completions with echo: the prompt's text
  sim::ResponseContext rctx;
  std::chrono::steady_clock::time_point deadline;
  std::vector<std::unique_ptr<ChoiceState>> choices;

  Job(ServeService::Context& c, sim::Endpoint e) : ctx(c), endpoint(e) {}
  ~Job();  // detaches the channels
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  void abort_all();
  std::uint32_t prompt_len() const { return static_cast<std::uint32_t>(req.prompt_tokens.size()); }
};

const char* route_of(sim::Endpoint e);
http::Headers response_headers(const Job& job);
Task<void> answer_error(Job& job, http::ResponseWriter& w, const sim::ApiError& error);
Task<void> respond_whole(Job& job, http::ResponseWriter& w);
Task<void> respond_stream(Job& job, http::ResponseWriter& w);
// The logprobs object of tokens [from, to) of a choice (completions or chat form).
std::string logprobs_json(const Job& job, ChoiceState& c, std::size_t from, std::size_t to);

}  // namespace omni::serve
