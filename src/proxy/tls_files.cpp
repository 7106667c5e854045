// The proxy's TLS material: the client listener's certificate, the admin listener's (and the CA
// its clients must present), and how engines reached over https are verified.
#include <string>

#include "gateway_impl.hpp"
#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

std::string value_or_empty(const std::optional<std::string>& text) { return text.value_or(""); }

}  // namespace

Result<TlsSet> load_tls(const ProxyConfig& config) {
  TlsSet set;
  if (config.tls_cert_file && config.tls_key_file) {
    auto traffic = http::TlsCertificate::load(*config.tls_cert_file, *config.tls_key_file);
    if (!traffic) return std::move(traffic).error();
    set.traffic = *traffic;
  }
  if (config.admin_tls_cert_file && config.admin_tls_key_file) {
    auto admin = http::TlsCertificate::load(*config.admin_tls_cert_file, *config.admin_tls_key_file,
                                            value_or_empty(config.admin_tls_client_ca_file));
    if (!admin) return std::move(admin).error();
    set.admin = *admin;
  }
  auto engines =
      http::TlsClientConfig::load({.ca_file = value_or_empty(config.engine_tls_ca_file),
                                   .cert_file = value_or_empty(config.engine_tls_cert_file),
                                   .key_file = value_or_empty(config.engine_tls_key_file)});
  if (!engines) return std::move(engines).error();
  set.engines = *engines;
  return set;
}

void install_tls(Gateway::Impl& g, TlsSet set) {
  g.tls = std::move(set.traffic);
  g.admin_tls = std::move(set.admin);
  g.engine_tls = std::move(set.engines);
}

void renew_tls(Gateway::Impl& g, const TlsSet& set) {
  const auto logger = log::get("proxy");
  if (g.tls && set.traffic) {
    g.tls->adopt(*set.traffic);
    logger->info("reload: TLS certificate {}", g.tls->describe());
  } else if (static_cast<bool>(g.tls) != static_cast<bool>(set.traffic)) {
    logger->warn("reload: HTTPS on the client listener is switched on or off only by a restart");
  }
  if (g.admin_tls && set.admin) {
    g.admin_tls->adopt(*set.admin);
    logger->info("reload: admin TLS certificate {}", g.admin_tls->describe());
  } else if (static_cast<bool>(g.admin_tls) != static_cast<bool>(set.admin)) {
    logger->warn("reload: HTTPS on the admin listener is switched on or off only by a restart");
  }
  g.engine_tls->adopt(*set.engines);
}

}  // namespace omni::proxy
