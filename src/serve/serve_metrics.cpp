// omni-serve's metrics beyond omni-sim's vLLM set: vLLM's speculative-decoding counters, the PD
// KV transfer, and expert parallelism (live loads and the current placement); and the expert
// placement admin route.
#include <boost/json/serialize.hpp>

#include "omni/placement/io.hpp"
#include "serve/context.hpp"

namespace omni::serve {
namespace {

using Context = ServeService::Context;

#define OMNI_SERVE_TRY(expr)                 \
  do {                                       \
    if (auto st_ = (expr); !st_) return st_; \
  } while (0)

Status register_spec(Context& ctx) {
  metrics::Registry& r = ctx.registry;
  const std::string model = ctx.limits.served_names.front();
  const std::vector<std::string> labels = {"model_name", "engine"};
  auto counter = [&](const char* name, const char* help, std::uint64_t ExecutorStats::*field) {
    return r.counter_callback(name, help, labels, [&ctx, model, field](metrics::Emitter& e) {
      e.emit({model, "0"}, static_cast<double>(ctx.loop->stats().executor.*field));
    });
  };
  OMNI_SERVE_TRY(counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.",
                         &ExecutorStats::spec_drafts));
  OMNI_SERVE_TRY(counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.",
                         &ExecutorStats::spec_draft_tokens));
  OMNI_SERVE_TRY(counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.",
                         &ExecutorStats::spec_accepted));
  return r.counter_callback(
      "vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.",
      {"model_name", "engine", "position"}, [&ctx, model](metrics::Emitter& e) {
        const auto per = ctx.loop->stats().executor.spec_accepted_per_pos;
        for (std::size_t i = 0; i < per.size(); ++i) {
          e.emit({model, "0", std::to_string(i)}, static_cast<double>(per[i]));
        }
      });
}

Status register_transfer(Context& ctx) {
  metrics::Registry& r = ctx.registry;
  TransferCounters& t = ctx.transfer;
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_kv_transfer_bytes_total", "PD KV bytes moved over the side channel.",
      {"direction"}, [&t](metrics::Emitter& e) {
        e.emit({"sent"}, static_cast<double>(t.bytes_sent.load()));
        e.emit({"received"}, static_cast<double>(t.bytes_received.load()));
      }));
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_kv_transfers_total", "PD pulls, by side and outcome.", {"side", "outcome"},
      [&t](metrics::Emitter& e) {
        e.emit({"prefill", "served"}, static_cast<double>(t.pulls_served.load()));
        e.emit({"prefill", "failed"}, static_cast<double>(t.pulls_failed.load()));
        e.emit({"decode", "fetched"}, static_cast<double>(t.fetches.load()));
        e.emit({"decode", "failed"}, static_cast<double>(t.fetch_failures.load()));
      }));
  OMNI_SERVE_TRY(r.counter_callback("omni_serve_kv_fetch_seconds_total",
                                    "PD decode side: time spent pulling KV.", {},
                                    [&t](metrics::Emitter& e) {
                                      e.emit({}, static_cast<double>(t.fetch_micros.load()) * 1e-6);
                                    }));
  OMNI_SERVE_TRY(r.gauge_callback("omni_serve_kv_staged_bytes",
                                  "PD decode side: fetched KV waiting for its blocks.", {},
                                  [&ctx](metrics::Emitter& e) {
                                    e.emit({}, static_cast<double>(ctx.loop->stats().staged_bytes));
                                  }));
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_engine_steps_total", "Engine steps run.", {},
      [&ctx](metrics::Emitter& e) { e.emit({}, static_cast<double>(ctx.loop->stats().steps)); }));
  return r.counter_callback(
      "omni_serve_engine_busy_seconds_total", "Time the engine loop spent in steps.", {},
      [&ctx](metrics::Emitter& e) { e.emit({}, ctx.loop->stats().busy_seconds); });
}

Status register_ep(Context& ctx) {
  if (!ctx.ep) return ok_status();
  metrics::Registry& r = ctx.registry;
  ExpertParallel* ep = ctx.ep.get();
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_ep_expert_tokens_total", "Tokens routed to each expert, per MoE layer.",
      {"layer", "expert"}, [ep](metrics::Emitter& e) {
        const EpSnapshot s = ep->snapshot();
        for (std::size_t l = 0; l < s.total_expert_tokens.size(); ++l) {
          for (std::size_t x = 0; x < s.total_expert_tokens[l].size(); ++x) {
            e.emit({std::to_string(l), std::to_string(x)},
                   static_cast<double>(s.total_expert_tokens[l][x]));
          }
        }
      }));
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_ep_rank_tokens_total", "Expert tokens each rank computed, per MoE layer.",
      {"layer", "rank"}, [ep](metrics::Emitter& e) {
        const EpSnapshot s = ep->snapshot();
        for (std::size_t l = 0; l < s.total_rank_tokens.size(); ++l) {
          for (std::size_t k = 0; k < s.total_rank_tokens[l].size(); ++k) {
            e.emit({std::to_string(l), std::to_string(k)},
                   static_cast<double>(s.total_rank_tokens[l][k]));
          }
        }
      }));
  OMNI_SERVE_TRY(r.gauge_callback("omni_serve_ep_rank_imbalance",
                                  "Max / mean rank load of the last window, per MoE layer.",
                                  {"layer"}, [ep](metrics::Emitter& e) {
                                    const EpSnapshot s = ep->snapshot();
                                    for (std::size_t l = 0; l < s.imbalance.size(); ++l) {
                                      e.emit({std::to_string(l)}, s.imbalance[l]);
                                    }
                                  }));
  OMNI_SERVE_TRY(r.gauge_callback(
      "omni_serve_ep_expert_copies", "Copies of each expert in the current placement.",
      {"layer", "expert"}, [ep](metrics::Emitter& e) {
        const EpSnapshot s = ep->snapshot();
        for (std::size_t l = 0; l < s.placement.layers.size(); ++l) {
          const auto copies = s.placement.copies(l);
          for (std::size_t x = 0; x < copies.size(); ++x) {
            e.emit({std::to_string(l), std::to_string(x)}, static_cast<double>(copies[x]));
          }
        }
      }));
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_ep_rebalances_total", "Live rebalances applied.", {},
      [ep](metrics::Emitter& e) { e.emit({}, static_cast<double>(ep->snapshot().rebalances)); }));
  OMNI_SERVE_TRY(r.counter_callback(
      "omni_serve_ep_moves_total", "Expert moves (swaps and replacements) applied.", {},
      [ep](metrics::Emitter& e) { e.emit({}, static_cast<double>(ep->snapshot().moves)); }));
  return r.counter_callback("omni_serve_ep_moe_seconds_total",
                            "Time spent in the MoE layers' expert computations.", {},
                            [ep](metrics::Emitter& e) { e.emit({}, ep->snapshot().moe_seconds); });
}

}  // namespace

Status register_serve_metrics(Context& ctx) {
  OMNI_SERVE_TRY(register_spec(ctx));
  OMNI_SERVE_TRY(register_transfer(ctx));
  return register_ep(ctx);
}

http::Handler make_ep_handler(Context& ctx, bool rebalance) {
  return [&ctx, rebalance](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r;
    if (!ctx.ep) {
      r = sim::ApiError{404, "expert parallelism is off (--enable-expert-parallel)",
                        "NotFoundError", ""}
              .response();
      co_await w.send(std::move(r));
      co_return;
    }
    if (rebalance) ctx.ep->request_rebalance();
    const EpSnapshot s = ctx.ep->snapshot();
    boost::json::object doc;
    doc["placement"] = placement::placement_to_json(s.placement);
    auto matrix = [](const auto& rows) {
      boost::json::array out;
      for (const auto& row : rows) {
        boost::json::array a;
        for (const auto v : row) a.push_back(v);
        out.push_back(std::move(a));
      }
      return out;
    };
    doc["window_expert_loads"] = matrix(s.window_expert_loads);
    doc["window_rank_loads"] = matrix(s.window_rank_loads);
    doc["total_expert_tokens"] = matrix(s.total_expert_tokens);
    doc["total_rank_tokens"] = matrix(s.total_rank_tokens);
    boost::json::array imbalance;
    for (const double v : s.imbalance) imbalance.push_back(v);
    doc["imbalance"] = std::move(imbalance);
    doc["rebalances"] = s.rebalances;
    doc["moves"] = s.moves;
    doc["weights_moved"] = s.weights_moved;
    doc["bytes_copied"] = s.bytes_moved;
    doc["moe_seconds"] = s.moe_seconds;
    doc["last_rebalance_seconds"] = s.last_move_seconds;
    doc["rebalance_requested"] = rebalance;
    r.status = 200;
    r.headers.set("Content-Type", "application/json");
    r.body = boost::json::serialize(doc);
    co_await w.send(std::move(r));
  };
}

}  // namespace omni::serve
