// Per-request bookkeeping for omni-demo's routes: a Prometheus counter and latency histogram
// per route and status, and one JSON access-log line per request.
//
// It wraps the route's Handler and its ResponseWriter (a decorator that notes the status and
// the bytes sent), so the routes themselves stay free of bookkeeping.
#pragma once

#include <memory>
#include <string>

#include "omni/http/server.hpp"
#include "omni/log/access_log.hpp"
#include "omni/metrics/metrics.hpp"

namespace omni::demo {

class Instrumentation {
 public:
  // `access_log` may be null (no access log).
  static Result<std::unique_ptr<Instrumentation>> create(metrics::Registry& registry,
                                                         log::AccessLogWriter* access_log);
  // `handler` wrapped: timed, counted under `route`, access-logged.
  http::Handler wrap(std::string route, http::Handler handler);

 private:
  Instrumentation(metrics::CounterFamily* requests, metrics::HistogramFamily* latency,
                  log::AccessLogWriter* access_log)
      : requests_(requests), latency_(latency), access_log_(access_log) {}

  metrics::CounterFamily* requests_;
  metrics::HistogramFamily* latency_;
  log::AccessLogWriter* access_log_;
};

}  // namespace omni::demo
