// omni-http-echo <port> [io_threads]: the smallest useful Omni HTTP server, for comparing the
// server's per-request cost with nginx's `return 200` (see run.sh). Stops on SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "omni/http/server.hpp"

namespace {

omni::Task<void> hello(omni::http::Request&, omni::http::ResponseWriter& writer) {
  omni::http::Response response;
  response.headers.add("Content-Type", "text/plain");
  response.body = "Hello, world\n";
  (void)co_await writer.send(std::move(response));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <port> [io_threads]\n", argv[0]);
    return 2;
  }
  omni::http::ServerOptions options;
  options.port = static_cast<std::uint16_t>(std::strtoul(argv[1], nullptr, 10));
  options.io_threads = argc > 2 ? static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)) : 1;
  options.shutdown_grace = std::chrono::seconds(1);

  // Block the stop signals before the I/O threads exist, so only sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  omni::http::Server server(options, hello);
  if (const auto started = server.start(); !started) {
    std::fprintf(stderr, "omni-http-echo: %s\n", started.error().to_string().c_str());
    return 1;
  }
  std::fprintf(stderr, "omni-http-echo: listening on %s:%u\n", options.host.c_str(), server.port());
  int received = 0;
  sigwait(&signals, &received);
  server.stop();
  return 0;
}
