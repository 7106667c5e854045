// Gateway: omni-proxy's live half. It wires the pure scheduling core (Scheduler + Policy, run
// by one scheduler thread) to the HTTP server's I/O workers, the engines' HTTP clients, the
// active health checker, metrics, the access log and the admin API.
//
//   clients ─▶ HTTP server (N I/O workers) ─▶ request coroutine ─ ticket ─▶ scheduler thread
//                                                 │  ◀────── placement ──────┘
//                                                 ├─▶ prefill engine (sequential / parallel)
//                                                 └─▶ decode engine ─ SSE relayed event by event
//
// Threading: create, start, reload and stop from one control thread; everything else runs on
// the Gateway's own threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "omni/common/result.hpp"
#include "omni/metrics/metrics.hpp"
#include "omni/proxy/config.hpp"

namespace omni::proxy {

class Gateway {
 public:
  // Validates what the schema cannot (the policy, the access log file). kInvalidArgument / kIo.
  static Result<std::unique_ptr<Gateway>> create(ProxyConfig config);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Binds and starts serving. kIo when the address is taken.
  Status start();
  std::uint16_t port() const noexcept;
  // The admin listener's port (admin_listen), if there is one.
  std::optional<std::uint16_t> admin_port() const noexcept;
  // Replaces the pools (nodes, groups, bootstrap ports) without touching in-flight requests,
  // and the secrets (key files re-read). A secret that cannot be loaded refuses the whole
  // reload, and the old pools and keys stay.
  Status reload(const ProxyConfig& config);
  // Asks the control thread to reload (set by the binary, used by POST /admin/reload).
  void on_reload_request(std::function<Status()> callback);
  // Graceful: stop accepting, let in-flight requests finish within the grace period.
  void stop();
  metrics::Registry& registry() noexcept;

  struct Impl;

 private:
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::proxy
