// TLS for the HTTP server: a certificate chain and its key, loaded from PEM files into an
// OpenSSL context with modern defaults (TLS 1.2 and 1.3 only; ECDHE with AES-GCM or
// ChaCha20-Poly1305 for TLS 1.2; ALPN "http/1.1"), and swapped whole on reload: connections
// accepted after a successful reload use the new certificate, connections already open keep the
// one they shook hands with, and a reload that fails leaves the old one serving.
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
  static Result<std::shared_ptr<TlsCertificate>> load(const std::string& chain_file,
                                                      const std::string& key_file);
  Status reload(const std::string& chain_file, const std::string& key_file);
  std::shared_ptr<boost::asio::ssl::context> current() const;
  // The loaded certificate's subject and notAfter, for logs ("CN=proxy, until 2027-01-01").
  std::string describe() const;

 private:
  std::atomic<std::shared_ptr<boost::asio::ssl::context>> context_;
  std::atomic<std::shared_ptr<const std::string>> description_;
};

}  // namespace omni::http
