// A throw-away PKI for TLS tests: a CA and certificates it signs, written as PEM files into a
// directory, made with OpenSSL's API (no openssl binary, no files in the repository).
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace omni::http::testing {

class TestPki {
 public:
  // Makes DIR/ca.pem (and its key, kept in memory).
  explicit TestPki(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    ca_key_ = new_key();
    ca_.reset(X509_new());
    fill(ca_.get(), "omni-test-ca", 1, 0, 3600);
    X509_set_issuer_name(ca_.get(), X509_get_subject_name(ca_.get()));
    X509_set_pubkey(ca_.get(), ca_key_.get());
    extend(ca_.get(), ca_.get(), NID_basic_constraints, "critical,CA:TRUE");
    extend(ca_.get(), ca_.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    sign(ca_.get());
    write_cert(ca_.get(), path("ca.pem"));
  }

  // DIR/NAME.pem and DIR/NAME.key: a leaf certificate for `alt_name` ("IP:127.0.0.1",
  // "DNS:engine.test"), valid from `from_s` to `to_s` seconds from now.
  void issue(const std::string& name, const std::string& alt_name, long from_s = -60,
             long to_s = 3600) {
    Key key = new_key();
    std::unique_ptr<X509, decltype(&X509_free)> leaf(X509_new(), X509_free);
    fill(leaf.get(), name, ++serial_, from_s, to_s);
    X509_set_issuer_name(leaf.get(), X509_get_subject_name(ca_.get()));
    X509_set_pubkey(leaf.get(), key.get());
    extend(leaf.get(), ca_.get(), NID_subject_alt_name, alt_name);
    extend(leaf.get(), ca_.get(), NID_ext_key_usage, "serverAuth,clientAuth");
    sign(leaf.get());
    write_cert(leaf.get(), path(name + ".pem"));
    write_key(key.get(), path(name + ".key"));
  }

  std::string path(const std::string& file) const { return (dir_ / file).string(); }

 private:
  using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

  static Key new_key() {
    Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free);
    if (!key) throw std::runtime_error("test PKI: cannot make an EC key");
    return key;
  }
  static void fill(X509* cert, const std::string& cn, long serial, long from_s, long to_s) {
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), from_s);
    X509_gmtime_adj(X509_getm_notAfter(cert), to_s);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  }
  static void extend(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) throw std::runtime_error("test PKI: bad extension " + value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  void sign(X509* cert) {
    if (X509_sign(cert, ca_key_.get(), EVP_sha256()) == 0) {
      throw std::runtime_error("test PKI: cannot sign");
    }
  }
  static void write_cert(X509* cert, const std::string& file) {
    std::unique_ptr<FILE, decltype(&std::fclose)> out(std::fopen(file.c_str(), "w"), std::fclose);
    if (!out || PEM_write_X509(out.get(), cert) != 1) {
      throw std::runtime_error("test PKI: cannot write " + file);
    }
  }
  static void write_key(EVP_PKEY* key, const std::string& file) {
    std::unique_ptr<FILE, decltype(&std::fclose)> out(std::fopen(file.c_str(), "w"), std::fclose);
    if (!out || PEM_write_PrivateKey(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
      throw std::runtime_error("test PKI: cannot write " + file);
    }
  }

  std::filesystem::path dir_;
  Key ca_key_{nullptr, EVP_PKEY_free};
  std::unique_ptr<X509, decltype(&X509_free)> ca_{nullptr, X509_free};
  long serial_ = 1;
};

}  // namespace omni::http::testing
