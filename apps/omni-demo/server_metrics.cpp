#include "server_metrics.hpp"

#include <cstdint>

namespace omni::demo {
namespace {

using Field = std::uint64_t http::ServerStats::*;

Status export_field(metrics::Registry& registry, const http::Server& server, bool counter,
                    std::string_view name, std::string_view help, Field field) {
  auto collect = [&server, field](metrics::Emitter& e) {
    e.emit({}, static_cast<double>(server.stats().*field));
  };
  return counter ? registry.counter_callback(name, help, {}, collect)
                 : registry.gauge_callback(name, help, {}, collect);
}

}  // namespace

Status export_server_stats(metrics::Registry& registry, const http::Server& server) {
  struct Spec {
    bool counter;
    std::string_view name;
    std::string_view help;
    Field field;
  };
  const Spec specs[] = {
      {true, "omni_http_connections_accepted_total", "Connections accepted.",
       &http::ServerStats::connections_accepted},
      {true, "omni_http_connections_rejected_total",
       "Connections refused with 503 because max_connections were open.",
       &http::ServerStats::connections_rejected},
      {false, "omni_http_connections_active", "Connections open now.",
       &http::ServerStats::connections_active},
      {true, "omni_http_requests_total", "Requests handed to a handler.",
       &http::ServerStats::requests},
      {true, "omni_http_bad_requests_total",
       "Requests the server refused itself (400, 413, 431, 501).",
       &http::ServerStats::bad_requests},
      {true, "omni_http_timeouts_total", "Reads or writes that timed out.",
       &http::ServerStats::timeouts},
  };
  for (const Spec& spec : specs) {
    if (Status s = export_field(registry, server, spec.counter, spec.name, spec.help, spec.field);
        !s) {
      return s;
    }
  }
  return ok_status();
}

}  // namespace omni::demo
