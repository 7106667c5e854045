// SimService: everything omni-sim runs, wired together — the engine driver thread, the KV-event
// publisher thread, the HTTP server with vLLM's routes, metrics and fault injection. The binary
// (apps/omni-sim) only parses flags, starts this and waits for a signal.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/engine/engine.hpp"
#include "omni/http/server.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "omni/kvcache/zmq_publisher.hpp"
#include "omni/metrics/metrics.hpp"
#include "sim/driver.hpp"
#include "sim/faults.hpp"
#include "sim/request.hpp"
#include "sim/sim_config.hpp"
#include "sim/sim_metrics.hpp"
#include "sim/text_codec.hpp"

namespace omni::sim {

// The vLLM release whose protocol omni-sim speaks (the wire-protocol spec's reference commit).
inline constexpr const char* kVllmVersion = "0.20.0";
// SGLang's default --disaggregation-bootstrap-port.
inline constexpr std::uint16_t kSglangBootstrapPort = 8998;

class SimService {
 public:
  // Validates the config and builds every part; nothing listens yet. Errors: kInvalidArgument
  // (profiles, JSON flags), kIo (the KV-event endpoint cannot be bound).
  static Result<std::unique_ptr<SimService>> create(const SimConfig& cfg);
  ~SimService();

  // Driver thread + HTTP listener (+ the SGLang bootstrap listener in prefill mode). Errors:
  // kIo when the HTTP port, or an explicitly given bootstrap port, cannot be bound.
  Status start();
  std::uint16_t port() const;
  // The SGLang bootstrap service's port; 0 when none listens (not prefill mode, or the default
  // port was busy).
  std::uint16_t bootstrap_port() const;
  // The deployment the engine model runs, in words (printed at start).
  std::string deployment() const;
  void stop();  // graceful; idempotent
  // The KV-event PUB endpoint as bound, or empty when events are off.
  std::string kv_events_endpoint() const;

  // For handlers (generate.cpp).
  struct Context;
  Context& context() { return *ctx_; }

 private:
  SimService() = default;
  std::unique_ptr<Context> ctx_;
};

// Shared state every handler reads; immutable after create() except the parts noted.
struct SimService::Context {
  SimConfig cfg;
  ModelLimits limits;
  std::unique_ptr<TextCodec> codec;
  kvcache::HashAlgo hash_algo = kvcache::HashAlgo::kSha256;
  kvcache::BlockHash hash_root;
  KvTransferConfig kv_transfer;
  std::string engine_id;
  std::string fingerprint;
  std::int64_t created = 0;  // unix time of start, for /v1/models
  std::unique_ptr<SteadyClock> clock;
  metrics::Registry registry;
  std::unique_ptr<SimMetrics> metrics;
  std::unique_ptr<kvcache::ZmqEventPublisher> publisher;
  std::unique_ptr<EngineDriver> driver;
  std::unique_ptr<FaultInjector> faults;
  std::unique_ptr<http::Server> server;
  std::unique_ptr<http::Server> bootstrap;  // prefill mode: SGLang's bootstrap port
  std::string deployment;                   // e.g. "deepseek-v3 on 16 x h800 (...)"
  std::atomic<std::uint64_t> request_counter{0};
  std::atomic<std::int64_t> in_flight{0};
  std::uint64_t kv_published_seen = 0;  // driver thread (event sink) only
  std::uint64_t kv_dropped_seen = 0;
};

// Route handlers (generate.cpp).
http::Handler make_generate_handler(SimService::Context& ctx, Endpoint endpoint);
http::Handler make_kv_pull_handler(SimService::Context& ctx);  // pd_client.cpp

}  // namespace omni::sim
