// Exports omni::http::ServerStats as Prometheus metrics, read at scrape time.
#pragma once

#include "omni/http/server.hpp"
#include "omni/metrics/metrics.hpp"

namespace omni::demo {

// omni_http_connections_accepted_total, ..._rejected_total, omni_http_connections_active,
// omni_http_requests_total, omni_http_bad_requests_total, omni_http_timeouts_total.
// `server` must outlive `registry`'s scrapes.
Status export_server_stats(metrics::Registry& registry, const http::Server& server);

}  // namespace omni::demo
