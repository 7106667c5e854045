// The PD orchestrator's only way to an engine: one call on a node, whole or streamed. The live
// gateway's implementation is HTTP (each I/O thread's keep-alive pools, http_engine_client.cpp);
// tests give scripted fakes, so the sequential, parallel and aggregated flows run in-process
// without a socket (tests/proxy/orchestrator_test.cpp).
//
// Threading: an EngineClient belongs to one I/O thread (its executor); call it only from
// coroutines there. `abort`, when given, must end the call early once aborted (kCancelled).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <memory>

#include "omni/http/client.hpp"
#include "omni/proxy/config.hpp"

namespace omni::proxy {

class EngineClient {
 public:
  virtual ~EngineClient() = default;
  // The whole answer: the prefill leg, and non-streaming decodes.
  virtual Task<Result<http::Response>> send(const NodeEntry& node, http::Request request,
                                            http::Abort* abort) = 0;
  // The answer's head, then its body piece by piece (streamed decodes). `abort` covers the
  // stream's reads too and must outlive the stream.
  virtual Task<Result<std::unique_ptr<http::ResponseStream>>> open(const NodeEntry& node,
                                                                   http::Request request,
                                                                   http::Abort* abort) = 0;
};

// The calling I/O thread's client for legs of `role` (prefill legs and decode legs have their
// own pools and read deadlines).
using EngineClients =
    std::function<EngineClient&(const boost::asio::any_io_executor&, sched::Role)>;

}  // namespace omni::proxy
