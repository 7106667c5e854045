// omni-demo's self-check: the runtime's HTTP client calls the demo's own routes and prints
// what it saw, so `make run` shows the whole runtime working end to end.
#pragma once

#include <ostream>

#include "omni/common/result.hpp"
#include "omni/http/client.hpp"
#include "omni/http/task.hpp"

namespace omni::demo {

// Calls /health, /v1/demo/echo, /v1/demo/stream and /metrics on `server`, writing one line
// per check to `out`. An error names the first check that failed.
Task<Status> self_check(http::Client& client, http::Endpoint server, std::ostream& out);

}  // namespace omni::demo
