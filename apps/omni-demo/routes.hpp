// omni-demo's routes: health, metrics, an echo and an SSE stream, all built from the common
// runtime alone.
#pragma once

#include "instrument.hpp"
#include "omni/http/server.hpp"
#include "omni/metrics/metrics.hpp"

namespace omni::demo {

// The most events one /v1/demo/stream request may ask for.
inline constexpr int kMaxStreamEvents = 10'000;

// GET  /health              {"status":"ok"}
// GET  /metrics             Prometheus text format
// POST /v1/demo/echo        the body back, with the request's Content-Type
// GET  /v1/demo/stream      ?events=N (default 5) &interval_ms=M (default 0): N SSE events
//                           {"index":i,"of":N}, then "data: [DONE]" as vLLM ends its streams
http::Router make_routes(metrics::Registry& registry, Instrumentation& instrumentation);

}  // namespace omni::demo
