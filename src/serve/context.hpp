// The state every omni-serve handler reads; immutable after create() except the parts noted.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "omni/http/server.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "omni/kvcache/zmq_publisher.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/model/engine.hpp"
#include "omni/model/weights.hpp"
#include "omni/serve/service.hpp"
#include "serve/ep.hpp"
#include "serve/executor.hpp"
#include "serve/kv_transfer.hpp"
#include "serve/loop.hpp"
#include "sim/request.hpp"
#include "sim/sim_metrics.hpp"
#include "sim/text_codec.hpp"

namespace omni::serve {

// The vLLM release whose protocol omni-serve speaks (as omni-sim).
inline constexpr const char* kVllmVersion = "0.20.0";

struct ServeService::Context {
  ServeConfig cfg;
  std::unique_ptr<model::LoadedModel> model;
  std::unique_ptr<model::Engine> engine;  // the forward pass
  std::unique_ptr<sim::TextCodec> codec;
  sim::ModelLimits limits;
  std::string model_path;
  kvcache::HashAlgo hash_algo = kvcache::HashAlgo::kSha256;
  kvcache::BlockHash hash_root;
  KvTransfer kv_transfer;
  std::uint32_t spec_tokens = 0;
  std::string engine_id;
  std::string fingerprint;
  std::string kv_host;  // the side channel address given to decode instances
  std::int64_t created = 0;
  std::uint64_t kv_capacity_tokens = 0;  // the block pool's tokens
  metrics::Registry registry;
  std::unique_ptr<sim::SimMetrics> metrics;
  TransferCounters transfer;
  std::unique_ptr<kvcache::ZmqEventPublisher> publisher;
  std::unique_ptr<ModelExecutor> executor;
  std::unique_ptr<ExpertParallel> ep;
  std::unique_ptr<KvFetcher> fetcher;
  std::unique_ptr<EngineLoop> loop;
  std::unique_ptr<KvBlockServer> kv_server;
  std::unique_ptr<http::Server> server;
  std::string description;
  std::atomic<std::int64_t> in_flight{0};
  std::uint64_t kv_published_seen = 0;  // loop thread (event sink) only
  std::uint64_t kv_dropped_seen = 0;
};

// Route handlers (generate.cpp).
http::Handler make_generate_handler(ServeService::Context& ctx, sim::Endpoint endpoint);
// omni-serve's own metrics beyond omni-sim's: spec decode, PD transfer, expert parallelism.
Status register_serve_metrics(ServeService::Context& ctx);
// GET /omni/v1/expert_placement (the plan and the live loads), POST .../rebalance.
http::Handler make_ep_handler(ServeService::Context& ctx, bool rebalance);

}  // namespace omni::serve
