// One generation request as the routes carry it through its stages (generate.cpp), answer it
// (respond.cpp) and move its KV between PD instances (pd_client.cpp).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "omni/http/server.hpp"
#include "sim/faults.hpp"
#include "sim/output_plan.hpp"
#include "sim/pd.hpp"
#include "sim/request.hpp"
#include "sim/response.hpp"
#include "sim/service.hpp"
#include "sim/token_gen.hpp"

namespace omni::sim {

using SteadyTime = std::chrono::steady_clock::time_point;

// One choice (n > 1 gives several): its engine request, its tokens and where it stops.
struct ChoiceState {
  ChoiceState(std::uint32_t i, std::string id, const SimService::Context& ctx)
      : index(i), text_id(std::move(id)), gen(ctx.cfg.seed, text_id, *ctx.codec), shown(&plan) {}
  std::uint32_t index;
  std::string text_id;  // the generated text's key: the base id, "<base id>/<i>" for i > 0
  TokenGenerator gen;
  OutputPlan plan;
  ShownText shown;  // refers to plan: a ChoiceState never moves (held by unique_ptr)
  std::shared_ptr<RequestChannel> channel;
  engine::SeqId seq = 0;
  std::uint32_t sent = 0;  // tokens streamed so far
  RequestProgress last;
};

struct Job {
  SimService::Context& ctx;
  Endpoint endpoint;
  GenerationRequest req;
  PdRequest pd;
  std::string base_id;
  std::string request_header_id;  // echoed as X-Request-Id
  ResponseContext rctx;
  SteadyTime deadline;
  FaultDecision fault;
  bool bootstrap = false;  // SGLang pairing by bootstrap_room instead of NIXL params
  std::string held_key;    // prefill-only: what the decode instance pulls (remote_request_id)
  std::vector<std::unique_ptr<ChoiceState>> choices;

  Job(SimService::Context& c, Endpoint e) : ctx(c), endpoint(e) {}
  ~Job();  // detaches the channels: the driver may outlive this handler's io_context
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;
  // Ends every choice's engine request (client gone, timeout, injected error).
  void abort_all();
  std::uint32_t prompt_len() const { return static_cast<std::uint32_t>(req.prompt_tokens.size()); }
  // The usage of the whole response: completion tokens of every choice.
  Usage usage(std::uint32_t cached_tokens) const;
};

const char* route_of(Endpoint e);
// --speed as text ("20", "0.5").
std::string speed_text(double speed);
// The response headers every generation answer carries: X-Request-Id (when the client sent
// one) and X-Omni-Sim-Speed (the model clock's speed-up, so a client can report model time).
http::Headers response_headers(const Job& job);
Task<void> answer(Job& job, http::ResponseWriter& w, http::Response r);
Task<void> answer_error(Job& job, http::ResponseWriter& w, const ApiError& error);
Task<void> sleep_for(Duration d);
// Returns when the client closes its connection or after `at_most`.
Task<void> wait_for_close(http::ResponseWriter& w, Duration at_most);

// respond.cpp: the answer, whole or streamed, of a job whose choices are submitted.
Task<void> respond_whole(Job& job, http::ResponseWriter& w);
Task<void> respond_stream(Job& job, http::ResponseWriter& w);

// pd_client.cpp: the decode side's KV pull from the prefill instance (or its bootstrap).
struct PullResult {
  std::optional<double> transfer_s;  // set: pulled, the modelled transfer time (model seconds)
  std::string failure;               // else: not_held, unreachable, bootstrap_timeout
  std::string message;
};
Task<PullResult> pull_remote_kv(Job& job);
// The prefill side's params for the decode instance (raw JSON, "null" when not a NIXL prefill).
std::string prefill_params_json(const Job& job);

}  // namespace omni::sim
