// HttpServerConfig -> omni::http::ServerOptions. Header-only on purpose: the conversion needs
// the HTTP types, and keeping it here means omni_config never links omni_http; only binaries
// that run a server (and so already link omni_http) include this.
#pragma once

#include "omni/config/runtime.hpp"
#include "omni/http/server.hpp"

namespace omni::config {

// server_name is not configuration (it identifies the binary), so it stays the caller's.
inline http::ServerOptions to_server_options(const HttpServerConfig& cfg,
                                             http::ServerOptions base = {}) {
  base.host = cfg.host;
  base.port = cfg.port;
  base.io_threads = cfg.io_threads;
  base.max_connections = cfg.max_connections;
  base.max_header_bytes = cfg.max_header_bytes;
  base.max_body_bytes = cfg.max_body_bytes;
  base.header_timeout = cfg.header_timeout;
  base.body_timeout = cfg.body_timeout;
  base.idle_timeout = cfg.idle_timeout;
  base.write_timeout = cfg.write_timeout;
  base.shutdown_grace = cfg.shutdown_grace;
  return base;
}

}  // namespace omni::config
