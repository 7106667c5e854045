// omni-sim: a GPU-free engine that speaks vLLM's HTTP protocol, driven by the engine model.
// Thin: flags → SimService → wait for SIGINT/SIGTERM → graceful stop. See docs/omni-sim.md.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <iostream>
#include <thread>

#include "omni/config/cli.hpp"
#include "omni/log/log.hpp"
#include "sim/chat_codec.hpp"
#include "sim/service.hpp"
#include "sim/sim_config.hpp"

namespace {

omni::log::LogOptions log_options(const omni::config::LogConfig& cfg) {
  omni::log::LogOptions options;
  options.level = cfg.level;
  options.format = cfg.format;
  options.file = cfg.file.value_or("");
  return options;
}

int run(const omni::sim::SimConfig& cfg) {
  if (auto s = omni::log::init(log_options(cfg.log)); !s) {
    std::cerr << "omni-sim: " << s.error().message << "\n";
    return 2;
  }
  auto logger = omni::log::get("sim");
  auto service = omni::sim::SimService::create(cfg);
  if (!service) {
    std::cerr << "omni-sim: " << service.error().message << "\n";
    return 2;
  }
  logger->info("omni-sim deployment: {}", (*service)->deployment());
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  bool signalled = false;
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (!ec) logger->info("signal {}: shutting down", signal);
    signalled = true;
  });
  if (cfg.fault_refuse_connections_for.count() > 0) {
    // Fault injection: nothing listens yet, so connections are refused until then.
    logger->warn(
        "fault injection: refusing connections for {} ms",
        std::chrono::duration_cast<std::chrono::milliseconds>(cfg.fault_refuse_connections_for)
            .count());
    io.run_for(cfg.fault_refuse_connections_for);
    if (signalled) return 0;
    io.restart();
  }
  if (auto s = (*service)->start(); !s) {
    std::cerr << "omni-sim: cannot listen on " << cfg.host << ":" << cfg.port << ": "
              << s.error().message << "\n";
    return 1;
  }
  if (!(*service)->kv_events_endpoint().empty()) {
    logger->info("omni-sim kv events on {}", (*service)->kv_events_endpoint());
  }
  logger->info("omni-sim chat prompts: {}",
               omni::sim::has_model_chat_template(*(*service)->context().codec)
                   ? "the model's chat template"
                   : "the built-in role template (no chat_template)");
  if ((*service)->bootstrap_port() != 0) {
    logger->info("omni-sim bootstrap listening on {}:{}", cfg.host, (*service)->bootstrap_port());
  }
  logger->info("omni-sim listening on {}:{}", cfg.host, (*service)->port());
  io.run();
  (*service)->stop();
  logger->info("omni-sim stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  omni::config::Schema<omni::sim::SimConfig> schema;
  omni::sim::describe(schema);
  auto cli = omni::config::parse_command_line(
      argc, argv, schema,
      "omni-sim: a GPU-free engine speaking vLLM's OpenAI-compatible protocol, timed by the engine "
      "model (continuous batching, paged KV cache with prefix caching, roofline cost model)");
  if (!cli) {
    std::cerr << "omni-sim: " << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  return run(cli->config);
}
