// TLS for the HTTP server and client, on OpenSSL with modern defaults (TLS 1.2 and 1.3 only;
// ECDHE with AES-GCM or ChaCha20-Poly1305 for TLS 1.2; ALPN "http/1.1").
//
// TlsCertificate (server): a certificate chain and its key, loaded from PEM files, and
// optionally a CA whose certificates clients must present (mutual TLS, as nginx's
// ssl_verify_client on). Swapped whole on reload: connections accepted after a successful reload
// use the new files, connections already open keep the ones they shook hands with, and a reload
// that fails leaves the old ones serving.
//
// TlsClientConfig (client): how the client verifies the servers it reaches over https — a CA
// file, or the system's trust store — and an optional client certificate to present.
//
// Thread-safety: load() and reload() from any thread; current() from the I/O threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "omni/common/result.hpp"

namespace boost::asio::ssl {
class context;
}

namespace omni::http {

class TlsCertificate {
 public:
  // kNotFound for a missing file; kInvalidArgument for a file that is not a PEM certificate
  // chain or key, a key that does not match the certificate, or a certificate outside its
  // validity period (expired or not yet valid) — each message names the file.
  // `client_ca_file` non-empty: the handshake requires a client certificate that CA signed.
  static Result<std::shared_ptr<TlsCertificate>> load(const std::string& chain_file,
                                                      const std::string& key_file,
                                                      const std::string& client_ca_file = {});
  Status reload(const std::string& chain_file, const std::string& key_file,
                const std::string& client_ca_file = {});
  std::shared_ptr<boost::asio::ssl::context> current() const;
  // The loaded certificate's subject and notAfter, for logs ("CN=proxy, until 2027-01-01").
  std::string describe() const;
  // Serve what `staged` loaded (a reload checked elsewhere first).
  void adopt(const TlsCertificate& staged);

 private:
  std::atomic<std::shared_ptr<boost::asio::ssl::context>> context_;
  std::atomic<std::shared_ptr<const std::string>> description_;
};

struct TlsClientFiles {
  std::string ca_file{};    // PEM CA certificates that sign the servers' certificates; empty: the
                            // system's trust store
  std::string cert_file{};  // a client certificate chain to present (mutual TLS); empty: none
  std::string key_file{};   // its key; set together with cert_file

  friend bool operator==(const TlsClientFiles&, const TlsClientFiles&) = default;
};

class TlsClientConfig {
 public:
  // Servers are always verified: a certificate chain to a trusted CA, valid now, issued for the
  // host or IP address connected to. kNotFound / kInvalidArgument name the file at fault.
  static Result<std::shared_ptr<TlsClientConfig>> load(const TlsClientFiles& files);
  Status reload(const TlsClientFiles& files);
  std::shared_ptr<boost::asio::ssl::context> current() const;
  // "servers verified against FILE" or "... the system trust store", and the client certificate.
  std::string describe() const;
  void adopt(const TlsClientConfig& staged);

 private:
  std::atomic<std::shared_ptr<boost::asio::ssl::context>> context_;
  std::atomic<std::shared_ptr<const std::string>> description_;
};

}  // namespace omni::http
