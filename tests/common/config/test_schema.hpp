// A config struct exercising every kind of field, shared by the config tests.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omni/config/schema.hpp"

namespace omni::config::testing {

using namespace std::chrono_literals;

enum class Mode { kFast, kSafe, kDebug };

struct ListenConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
  friend bool operator==(const ListenConfig&, const ListenConfig&) = default;
};

struct PoolConfig {
  std::string name = "default";
  std::vector<std::string> endpoints;
  unsigned weight = 1;
  friend bool operator==(const PoolConfig&, const PoolConfig&) = default;
};

struct ServerConfig {
  ListenConfig listen;
  unsigned io_threads = 1;
  Duration header_timeout = 10s;
  std::size_t max_body_bytes = 16 << 20;
  Mode mode = Mode::kFast;
  double ratio = 0.5;
  bool tls = false;
  std::int8_t offset = 0;
  std::optional<std::string> tag;
  std::optional<Duration> deadline;
  std::vector<std::string> endpoints;
  std::vector<Duration> backoff{100ms, 1s};
  std::chrono::milliseconds poll = 250ms;
  std::vector<PoolConfig> pools;
  unsigned min_batch = 1;
  unsigned max_batch = 8;
  friend bool operator==(const ServerConfig&, const ServerConfig&) = default;
};

inline void describe_pool(Schema<PoolConfig>& s) {
  s.field("name", &PoolConfig::name, "Pool name").non_empty();
  s.field("endpoints", &PoolConfig::endpoints, "host:port of each engine")
      .non_empty()
      .each([](const std::string& endpoint) -> Status {
        if (endpoint.empty()) return make_error(ErrorCode::kInvalidArgument, "must not be empty");
        return ok_status();
      });
  s.field("weight", &PoolConfig::weight, "Relative share of traffic").range(1, 100);
}

inline void describe_server(Schema<ServerConfig>& s) {
  using C = ServerConfig;
  s.section("listen", &C::listen, [](Schema<ListenConfig>& l) {
    l.field("host", &ListenConfig::host, "Address to listen on").non_empty();
    l.field("port", &ListenConfig::port, "TCP port").range(1, 65535);
  });
  s.field("io_threads", &C::io_threads, "I/O threads").range(1, 256);
  s.field("header_timeout", &C::header_timeout, "Deadline for a request head").min(1ms);
  s.bytes("max_body_bytes", &C::max_body_bytes, "Largest request body");
  s.field("mode", &C::mode, "Scheduling mode")
      .choices({{"fast", Mode::kFast}, {"safe", Mode::kSafe}, {"debug", Mode::kDebug}});
  s.field("ratio", &C::ratio, "Share of prefill capacity").range(0.0, 1.0);
  s.field("tls", &C::tls, "Serve HTTPS");
  s.field("offset", &C::offset, "A small signed number");
  s.field("tag", &C::tag, "Free-form tag").non_empty();
  s.field("deadline", &C::deadline, "Optional overall deadline").max(1h);
  s.field("endpoints", &C::endpoints, "Static endpoints");
  s.field("backoff", &C::backoff, "Retry backoff steps").min(1ms);
  s.field("poll", &C::poll, "Health poll period");
  s.list("pools", &C::pools, "Upstream engine pools", describe_pool);
  s.field("min_batch", &C::min_batch, "Smallest batch");
  s.field("max_batch", &C::max_batch, "Largest batch");
  s.check([](const C& c) -> Status {
    if (c.min_batch > c.max_batch) {
      return make_error(ErrorCode::kInvalidArgument, "min_batch must not exceed max_batch");
    }
    return ok_status();
  });
}

inline const Schema<ServerConfig>& server_schema() {
  static const Schema<ServerConfig> schema = make_schema<ServerConfig>(describe_server);
  return schema;
}

}  // namespace omni::config::testing
