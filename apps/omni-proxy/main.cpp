// omni-proxy: the PD-disaggregation gateway. A thin shell: flags and config, logging,
// signals (SIGINT/SIGTERM stop gracefully, SIGHUP reloads the pools), the Gateway does the rest.
#include <malloc.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <csignal>
#include <future>
#include <iostream>
#include <memory>

#include "omni/config/cli.hpp"
#include "omni/log/log.hpp"
#include "omni/proxy/gateway.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;

constexpr const char* kDescription =
    "omni-proxy: PD-disaggregation gateway in front of prefill and decode engine pools "
    "(OpenAI API; vLLM NixlConnector, SGLang bootstrap, or aggregated)";

// Re-reads the configuration exactly as at start-up (the same --config file and flags).
Result<ProxyConfig> reread(int argc, char** argv) {
  config::Schema<ProxyConfig> schema;
  describe(schema);
  std::ostringstream ignored;
  auto cli = config::parse_command_line(argc, argv, schema, kDescription, ignored);
  if (!cli) return std::move(cli).error();
  return std::move(cli->config);
}

int serve(Gateway& gateway, int argc, char** argv) {
  asio::io_context control;
  auto reload = [&]() -> Status {
    auto cfg = reread(argc, argv);
    if (!cfg) {
      log::get("proxy")->error("reload failed: {}", cfg.error().message);
      return std::move(cfg).error();
    }
    return gateway.reload(*cfg);
  };
  // /admin/reload runs on an I/O thread; the reload itself happens on the control thread, so
  // it is serialised with SIGHUP's. The promise is shared: a reload that outlives the wait
  // below still has somewhere to put its result.
  gateway.on_reload_request([&]() -> Status {
    auto done = std::make_shared<std::promise<Status>>();
    auto result = done->get_future();
    asio::post(control, [done, &reload] { done->set_value(reload()); });
    if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return make_error(ErrorCode::kTimeout, "reload did not finish");
    }
    return result.get();
  });
  asio::signal_set stop_signals(control, SIGINT, SIGTERM);
  stop_signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (!ec) log::get("proxy")->info("signal {}: shutting down", signal);
    control.stop();
  });
  asio::signal_set hup(control, SIGHUP);
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      (void)reload();
      wait_hup();
    });
  };
  wait_hup();
  control.run();
  gateway.stop();
  return 0;
}

int run(const ProxyConfig& cfg, int argc, char** argv) {
  log::LogOptions log_options;
  log_options.level = cfg.log.level;
  log_options.format = cfg.log.format;
  log_options.file = cfg.log.file.value_or("");
  if (Status s = log::init(log_options); !s) {
    std::cerr << "omni-proxy: " << s.error().message << "\n";
    return 2;
  }
  for (const std::string& flag : secret_flags_given(argc, argv)) {
    log::get("proxy")->warn(
        "{} carries a secret on the command line, where every local user sees it (ps, "
        "/proc/PID/cmdline): use {}-file or the environment instead",
        flag, flag);
  }
  auto gateway = Gateway::create(cfg);
  if (!gateway) {
    std::cerr << "omni-proxy: " << gateway.error().message << "\n";
    return 2;
  }
  if (Status s = (*gateway)->start(); !s) {
    std::cerr << "omni-proxy: cannot listen on " << cfg.listen.host << ":" << cfg.listen.port
              << ": " << s.error().message << "\n";
    return 1;
  }
  std::cout << "omni-proxy: listening on " << (cfg.tls_cert_file ? "https" : "http") << "://"
            << cfg.listen.host << ":" << (*gateway)->port() << " (pd_mode "
            << pd_mode_name(cfg.pd_mode) << ", " << cfg.workers << " worker"
            << (cfg.workers == 1 ? "" : "s") << ")" << std::endl;
  if (auto admin = (*gateway)->admin_port()) {
    const auto at = listen_endpoint(*cfg.admin_listen);
    const std::string host = at ? at->host : "?";
    const bool v6 = host.find(':') != std::string::npos;
    std::cout << "omni-proxy: admin, metrics and probes on "
              << (cfg.admin_tls_cert_file ? "https" : "http") << "://" << (v6 ? "[" : "") << host
              << (v6 ? "]:" : ":") << *admin << std::endl;
  }
  return serve(**gateway, argc, argv);
}

}  // namespace
}  // namespace omni::proxy

int main(int argc, char** argv) {
  // A client that goes away mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  // glibc hands freed memory back to the kernel as soon as 128 KiB sit free at the top of a
  // heap: under load an I/O thread's heap then shrinks and regrows request after request
  // (mprotect calls, page faults). A proxy's working set is steady; keep up to 64 MiB.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  omni::config::Schema<omni::proxy::ProxyConfig> schema;
  omni::proxy::describe(schema);
  auto cli = omni::config::parse_command_line(argc, argv, schema, omni::proxy::kDescription);
  if (!cli) {
    std::cerr << "omni-proxy: " << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  return omni::proxy::run(cli->config, argc, argv);
}
