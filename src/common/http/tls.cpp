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

Result<Loaded> build(const std::string& chain_file, const std::string& key_file) {
  for (const std::string* file : {&chain_file, &key_file}) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*file, ec)) {
      return make_error(ErrorCode::kNotFound, "TLS: no such file: " + *file);
    }
  }
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // TLS 1.2: forward secrecy and AEAD only (Mozilla's "intermediate" list); TLS 1.3's own
  // suites are all AEAD and keep OpenSSL's defaults.
  SSL_CTX_set_cipher_list(ctx,
                          "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                          "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                          "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);
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
  return Loaded{std::move(context), std::string(subject) + ", until " + until};
}

}  // namespace

Result<std::shared_ptr<TlsCertificate>> TlsCertificate::load(const std::string& chain_file,
                                                             const std::string& key_file) {
  auto certificate = std::make_shared<TlsCertificate>();
  if (Status s = certificate->reload(chain_file, key_file); !s) return std::move(s).error();
  return certificate;
}

Status TlsCertificate::reload(const std::string& chain_file, const std::string& key_file) {
  auto loaded = build(chain_file, key_file);
  if (!loaded) return std::move(loaded).error();
  context_.store(std::move(loaded->context));
  description_.store(std::make_shared<const std::string>(std::move(loaded->description)));
  return {};
}

std::shared_ptr<ssl::context> TlsCertificate::current() const { return context_.load(); }

std::string TlsCertificate::describe() const {
  const auto text = description_.load();
  return text ? *text : std::string();
}

}  // namespace omni::http
