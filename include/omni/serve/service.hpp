// ServeService: everything `omni-serve MODEL` runs, wired together — the model and its CPU
// engine, omni_engine's scheduler and block pool driving it (the engine loop thread), the
// KV-event publisher, the PD KV block server and fetcher, expert parallelism with live
// placement, and the HTTP server with vLLM's routes, streaming, errors and metrics (omni-sim's
// protocol code). The binary (apps/omni-serve) only parses flags, starts this and waits for a
// signal.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "omni/common/result.hpp"
#include "omni/serve/config.hpp"

namespace omni::serve {

class ServeService {
 public:
  // Loads the model and builds every part; nothing listens yet. Errors: kInvalidArgument
  // (flags, the model, a context that does not fit the KV cache), kIo (files, endpoints).
  static Result<std::unique_ptr<ServeService>> create(const ServeConfig& cfg);
  ~ServeService();

  // The engine loop, the HTTP listener and (with --kv-transfer-config) the KV block server.
  Status start();
  std::uint16_t port() const;
  std::uint16_t kv_transfer_port() const;  // 0 without PD
  std::string kv_events_endpoint() const;  // empty when events are off
  // What runs, in words (printed at start): model, cache, blocks, threads, MTP, EP.
  std::string describe() const;
  void stop();  // graceful; idempotent

  struct Context;
  Context& context() { return *ctx_; }

 private:
  ServeService() = default;
  std::unique_ptr<Context> ctx_;
};

}  // namespace omni::serve
