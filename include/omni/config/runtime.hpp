// Config pieces every Omni binary embeds: the HTTP listener and logging.
//
//   struct SimConfig { HttpServerConfig server; LogConfig log; ... };
//   void describe(Schema<SimConfig>& s) {
//     s.section("server", &SimConfig::server, describe_http_server);
//     s.section("log", &SimConfig::log, describe_log);
//   }
//
// HttpServerConfig mirrors omni::http::ServerOptions field for field, with the same defaults;
// to_server_options() (http_server_config.hpp) converts, so omni_config need not link omni_http.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/config/schema.hpp"
#include "omni/log/level.hpp"

namespace omni::config {

using namespace std::chrono_literals;

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port
  unsigned io_threads = 1;
  std::size_t max_connections = 10'000;
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 16 * 1024 * 1024;
  Duration header_timeout = 10s;
  Duration body_timeout = 60s;
  Duration idle_timeout = 60s;
  Duration write_timeout = 30s;
  Duration shutdown_grace = 10s;

  friend bool operator==(const HttpServerConfig&, const HttpServerConfig&) = default;
};

void describe_http_server(Schema<HttpServerConfig>& schema);

// The logging library's own enums (omni/log/level.hpp has no spdlog in it).
using LogLevel = log::Level;
using LogFormat = log::Format;

// The names config files use, in severity order; reusable by any field of these types.
const std::vector<std::pair<std::string, LogLevel>>& log_level_names();
const std::vector<std::pair<std::string, LogFormat>>& log_format_names();

struct LogConfig {
  LogLevel level = LogLevel::kInfo;
  LogFormat format = LogFormat::kText;
  std::optional<std::string> file;  // none: standard error

  friend bool operator==(const LogConfig&, const LogConfig&) = default;
};

void describe_log(Schema<LogConfig>& schema);

}  // namespace omni::config
