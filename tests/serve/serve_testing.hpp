// Helpers of the omni-serve service tests: a micro model on disk, a service on loopback, a
// blocking HTTP client, and JSON access.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "omni/model/make_model.hpp"
#include "omni/serve/service.hpp"

namespace omni::serve::testing {

namespace json = boost::json;

// A micro DeepSeek-V3 model (f32, with its MTP layer) written once per process, removed at exit.
struct MicroModel {
  std::filesystem::path root;
  MicroModel() {
    std::random_device rd;
    root = std::filesystem::temp_directory_path() /
           ("omni-serve-test-" + std::to_string(rd()) + std::to_string(::getpid()));
    auto config = model::preset_config(model::Arch::kDeepseekV3, "micro");
    EXPECT_TRUE(config.ok());
    auto st = model::write_hf_checkpoint(root / "micro", *config, model::random_weights(*config, 5),
                                         model::DType::kF32, nullptr);
    EXPECT_TRUE(st.ok()) << st.error().message;
  }
  ~MicroModel() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

inline std::filesystem::path micro_model_dir() {
  static const MicroModel model;
  return model.root / "micro";
}

inline ServeConfig micro_config() {
  ServeConfig c;
  c.model = micro_model_dir().string();
  c.port = 0;
  c.threads = 1;
  c.io_threads = 2;
  c.block_size = 4;
  c.max_model_len = 256;
  c.num_gpu_blocks_override = 512;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 64;
  c.cache_dtype = "f32";
  return c;
}

struct Server {
  std::unique_ptr<ServeService> service;
  std::uint16_t port = 0;
  explicit Server(const ServeConfig& c) {
    auto s = ServeService::create(c);
    if (!s) {
      ADD_FAILURE() << s.error().message;
      return;
    }
    service = std::move(*s);
    const Status st = service->start();
    EXPECT_TRUE(st.ok()) << (st ? "" : st.error().message);
    port = service->port();
  }
  ~Server() {
    if (service) service->stop();
  }
};

struct Reply {
  int status = 0;
  std::string body;
  json::value json() const {
    boost::system::error_code ec;
    return json::parse(body, ec);
  }
};

inline int connect_to(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// One HTTP/1.1 exchange with Connection: close; the body de-chunked.
inline Reply http(std::uint16_t port, const std::string& method, const std::string& target,
                  const std::string& body = "",
                  const std::string& content_type = "application/json") {
  Reply r;
  const int fd = connect_to(port);
  if (fd < 0) return r;
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST") {
    req += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n";
  }
  req += "\r\n" + body;
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string raw;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  const auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.size() < 12) return r;
  r.status = std::stoi(raw.substr(9, 3));
  const std::string head = raw.substr(0, head_end);
  std::string rest = raw.substr(head_end + 4);
  if (head.find("Transfer-Encoding: chunked") != std::string::npos ||
      head.find("transfer-encoding: chunked") != std::string::npos) {
    std::size_t at = 0;
    while (at < rest.size()) {
      const auto eol = rest.find("\r\n", at);
      if (eol == std::string::npos) break;
      const std::size_t len = std::stoul(rest.substr(at, eol - at), nullptr, 16);
      if (len == 0) break;
      r.body += rest.substr(eol + 2, len);
      at = eol + 2 + len + 2;
    }
  } else {
    r.body = std::move(rest);
  }
  return r;
}

inline Reply post(std::uint16_t port, const std::string& target, const std::string& body) {
  return http(port, "POST", target, body);
}

// The value of a metric sample ("name{labels}" prefix match), -1 when absent.
inline double metric(std::uint16_t port, const std::string& prefix) {
  const Reply r = http(port, "GET", "/metrics");
  std::size_t at = 0;
  while ((at = r.body.find(prefix, at)) != std::string::npos) {
    if (at == 0 || r.body[at - 1] == '\n') {
      const auto eol = r.body.find('\n', at);
      const std::string line = r.body.substr(at, eol - at);
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    at += prefix.size();
  }
  return -1;
}

// Polls until `cond` holds or `seconds` pass.
template <class Cond>
bool eventually(Cond cond, double seconds = 5.0) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cond();
}

inline std::string tokens_json(const std::vector<int>& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.size(); ++i) s += (i ? "," : "") + std::to_string(t[i]);
  return s + "]";
}

inline std::vector<int> prompt_of(int n, int salt) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 31 + salt * 97 + 3) % 500 + 5);
  return t;
}

// A greedy completion's token ids (ignore_eos, max_tokens n); empty on failure.
inline std::string greedy(std::uint16_t port, const std::vector<int>& prompt, int n,
                          const std::string& extra = "") {
  const Reply r =
      post(port, "/v1/completions",
           "{\"prompt\":" + tokens_json(prompt) + ",\"max_tokens\":" + std::to_string(n) +
               ",\"temperature\":0,\"ignore_eos\":true,\"return_token_ids\":true" + extra + "}");
  if (r.status != 200) {
    ADD_FAILURE() << r.status << " " << r.body;
    return {};
  }
  return json::serialize(r.json().at("choices").as_array().at(0).at("token_ids"));
}

}  // namespace omni::serve::testing
