#include "omni/http/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/ssl/context.hpp>
#include <cstring>
#include <filesystem>

namespace omni::http {
namespace {

namespace ssl = boost::asio::ssl;

// The last OpenSSL error, in words, and the queue cleared.
std::string openssl_error() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

std::string asn1_time(const ASN1_TIME* time) {
  struct tm parts {};
  if (ASN1_TIME_to_tm(time, &parts) != 1) return "?";
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%SZ", &parts);
  return text;
}

// Offers "http/1.1" to clients that use ALPN (browsers, curl): the only protocol served.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                  unsigned int in_len, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_len, kHttp11, sizeof(kHttp11), in, in_len) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no ALPN agreement: go on without one
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

struct Loaded {
  std::shared_ptr<ssl::context> context;
  std::string description;
};

Status require_file(const std::string& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return make_error(ErrorCode::kNotFound, "TLS: no such file: " + file);
  }
  return {};
}

void modern_defaults(SSL_CTX* ctx) {
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // TLS 1.2: forward secrecy and AEAD only (Mozilla's "intermediate" list); TLS 1.3's own
  // suites are all AEAD and keep OpenSSL's defaults.
  SSL_CTX_set_cipher_list(ctx,
                          "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                          "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                          "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
}

// The chain and its key into `ctx`, checked: the key matches and the leaf is valid now.
// Returns "subject, until notAfter".
Result<std::string> use_certificate(SSL_CTX* ctx, const std::string& chain_file,
                                    const std::string& key_file) {
  for (const std::string* file : {&chain_file, &key_file}) {
    if (Status s = require_file(*file); !s) return std::move(s).error();
  }
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, chain_file.c_str()) != 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "TLS: " + chain_file + " is not a PEM certificate chain: " + openssl_error());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    const std::string why = openssl_error();
    if (why.find("key values mismatch") != std::string::npos) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "TLS: the key in " + key_file + " does not match the certificate in " + chain_file);
    }
    return make_error(ErrorCode::kInvalidArgument,
                      "TLS: " + key_file + " is not a PEM private key: " + why);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "TLS: the key in " + key_file + " does not match the certificate in " + chain_file);
  }
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (leaf == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "TLS: no certificate in " + chain_file);
  }
  const std::string until = asn1_time(X509_get0_notAfter(leaf));
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "TLS: the certificate in " + chain_file + " expired on " + until);
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
    return make_error(ErrorCode::kInvalidArgument, "TLS: the certificate in " + chain_file +
                                                       " is not valid before " +
                                                       asn1_time(X509_get0_notBefore(leaf)));
  }
  char subject[256] = {};
  X509_NAME_oneline(X509_get_subject_name(leaf), subject, sizeof(subject));
  return std::string(subject) + ", until " + until;
}

// Trust the CA certificates in `ca_file` for verifying the peer.
Status trust_ca_file(SSL_CTX* ctx, const std::string& ca_file) {
  if (Status s = require_file(ca_file); !s) return s;
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "TLS: " + ca_file + " holds no PEM CA certificate: " + openssl_error());
  }
  return {};
}

Result<Loaded> build_server(const std::string& chain_file, const std::string& key_file,
                            const std::string& client_ca_file) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  modern_defaults(ctx);
  SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
  auto description = use_certificate(ctx, chain_file, key_file);
  if (!description) return std::move(description).error();
  if (!client_ca_file.empty()) {
    if (Status s = trust_ca_file(ctx, client_ca_file); !s) return std::move(s).error();
    // The CA names sent in the CertificateRequest, so a client picks the right certificate.
    SSL_CTX_set_client_CA_list(ctx, SSL_load_client_CA_file(client_ca_file.c_str()));
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    // Resumed sessions must have been verified by this server configuration.
    static const unsigned char kSessionContext[] = "omni-http";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
    *description += "; client certificates from " + client_ca_file + " required";
  }
  return Loaded{std::move(context), std::move(*description)};
}

Result<Loaded> build_client(const TlsClientFiles& files) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  modern_defaults(ctx);
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(ctx, kHttp11, sizeof(kHttp11));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  std::string description;
  if (files.ca_file.empty()) {
    SSL_CTX_set_default_verify_paths(ctx);
    description = "servers verified against the system trust store";
  } else {
    if (Status s = trust_ca_file(ctx, files.ca_file); !s) return std::move(s).error();
    description = "servers verified against " + files.ca_file;
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "TLS: a client certificate needs both its chain and its key file");
  }
  if (!files.cert_file.empty()) {
    auto client = use_certificate(ctx, files.cert_file, files.key_file);
    if (!client) return std::move(client).error();
    description += "; client certificate " + *client;
  }
  return Loaded{std::move(context), std::move(description)};
}

}  // namespace

Result<std::shared_ptr<TlsCertificate>> TlsCertificate::load(const std::string& chain_file,
                                                             const std::string& key_file,
                                                             const std::string& client_ca_file) {
  auto certificate = std::make_shared<TlsCertificate>();
  if (Status s = certificate->reload(chain_file, key_file, client_ca_file); !s) {
    return std::move(s).error();
  }
  return certificate;
}

Status TlsCertificate::reload(const std::string& chain_file, const std::string& key_file,
                              const std::string& client_ca_file) {
  auto loaded = build_server(chain_file, key_file, client_ca_file);
  if (!loaded) return std::move(loaded).error();
  context_.store(std::move(loaded->context));
  description_.store(std::make_shared<const std::string>(std::move(loaded->description)));
  return {};
}

std::shared_ptr<ssl::context> TlsCertificate::current() const { return context_.load(); }

void TlsCertificate::adopt(const TlsCertificate& staged) {
  context_.store(staged.context_.load());
  description_.store(staged.description_.load());
}

std::string TlsCertificate::describe() const {
  const auto text = description_.load();
  return text ? *text : std::string();
}

Result<std::shared_ptr<TlsClientConfig>> TlsClientConfig::load(const TlsClientFiles& files) {
  auto config = std::make_shared<TlsClientConfig>();
  if (Status s = config->reload(files); !s) return std::move(s).error();
  return config;
}

Status TlsClientConfig::reload(const TlsClientFiles& files) {
  auto loaded = build_client(files);
  if (!loaded) return std::move(loaded).error();
  context_.store(std::move(loaded->context));
  description_.store(std::make_shared<const std::string>(std::move(loaded->description)));
  return {};
}

std::shared_ptr<ssl::context> TlsClientConfig::current() const { return context_.load(); }

void TlsClientConfig::adopt(const TlsClientConfig& staged) {
  context_.store(staged.context_.load());
  description_.store(staged.description_.load());
}

std::string TlsClientConfig::describe() const {
  const auto text = description_.load();
  return text ? *text : std::string();
}

}  // namespace omni::http
