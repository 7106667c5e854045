#include "serve/kv_transfer.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>

#include "omni/log/log.hpp"

namespace omni::serve {
namespace {

constexpr std::uint32_t kMagic = 0x564B4D4F;  // "OMKV"
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kMaxString = 4096;
constexpr std::uint32_t kMaxBlocks = 1u << 20;
constexpr int kTimeoutSeconds = 10;

void set_timeouts(int fd) {
  timeval tv{kTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool read_all(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = recv(fd, p, n, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return false;
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = send(fd, p, n, MSG_NOSIGNAL);
    if (put <= 0) {
      if (put < 0 && errno == EINTR) continue;
      return false;
    }
    p += put;
    n -= static_cast<std::size_t>(put);
  }
  return true;
}

// Writes every iovec in full (advancing through partial writes).
bool writev_all(int fd, std::vector<iovec>& iov) {
  std::size_t first = 0;
  while (first < iov.size()) {
    const int n = static_cast<int>(std::min<std::size_t>(iov.size() - first, IOV_MAX));
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = static_cast<std::size_t>(n);
    ssize_t put = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    while (put > 0 && first < iov.size()) {
      const auto len = static_cast<ssize_t>(iov[first].iov_len);
      if (put >= len) {
        put -= len;
        ++first;
      } else {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + put;
        iov[first].iov_len -= static_cast<std::size_t>(put);
        put = 0;
      }
    }
  }
  return true;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
bool get_u32(int fd, std::uint32_t& v) {
  unsigned char b[4];
  if (!read_all(fd, b, 4)) return false;
  v = std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 | std::uint32_t{b[2]} << 16 |
      std::uint32_t{b[3]} << 24;
  return true;
}
bool get_u64(int fd, std::uint64_t& v) {
  std::uint32_t lo = 0, hi = 0;
  if (!get_u32(fd, lo) || !get_u32(fd, hi)) return false;
  v = std::uint64_t{lo} | std::uint64_t{hi} << 32;
  return true;
}
bool get_string(int fd, std::string& s) {
  std::uint32_t n = 0;
  if (!get_u32(fd, n) || n > kMaxString) return false;
  s.resize(n);
  return n == 0 || read_all(fd, s.data(), n);
}

std::string head(TransferStatus status, std::uint32_t layers, std::uint64_t page_bytes,
                 std::uint32_t blocks, std::uint32_t hidden) {
  std::string h;
  put_u32(h, static_cast<std::uint32_t>(status));
  put_u32(h, layers);
  put_u64(h, page_bytes);
  put_u32(h, blocks);
  put_u32(h, hidden);
  return h;
}

std::string status_text(TransferStatus s) {
  switch (s) {
    case TransferStatus::kOk: return "ok";
    case TransferStatus::kUnknownEngine: return "unknown engine id";
    case TransferStatus::kNotHeld:
      return "no KV held under that request id (already pulled, "
             "lease expired, or unknown)";
    case TransferStatus::kBusy: return "another pull of that KV is in progress";
    case TransferStatus::kShapeMismatch: return "the two instances' caches differ in shape";
    case TransferStatus::kBadRequest: return "bad request";
  }
  return "?";
}

}  // namespace

// ---- prefill side ------------------------------------------------------------------------
Result<std::unique_ptr<KvBlockServer>> KvBlockServer::start(
    const std::string& host, std::uint16_t port, std::string engine_id,
    model::PagedLatentCache& cache, Take take, Done done, TransferCounters& counters) {
  std::unique_ptr<KvBlockServer> s(new KvBlockServer());
  s->engine_id_ = std::move(engine_id);
  s->cache_ = &cache;
  s->take_ = std::move(take);
  s->done_ = std::move(done);
  s->counters_ = &counters;
  s->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return make_error(ErrorCode::kIo, "kv transfer: socket() failed");
  const int one = 1;
  setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  const std::string bind_host = host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, bind_host.c_str(), &addr.sin_addr) != 1) {
    return make_error(ErrorCode::kInvalidArgument, "kv transfer: bad address " + host);
  }
  if (bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(s->listen_fd_, 64) != 0) {
    const std::string why = std::strerror(errno);
    close(s->listen_fd_);
    s->listen_fd_ = -1;
    return make_error(ErrorCode::kIo, "kv transfer: cannot listen on " + host + ":" +
                                          std::to_string(port) + ": " + why);
  }
  socklen_t len = sizeof addr;
  getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);
  s->acceptor_ = std::thread([raw = s.get()] { raw->accept_loop(); });
  return s;
}

KvBlockServer::~KvBlockServer() { stop(); }

void KvBlockServer::stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  // Connections in flight finish within their socket timeouts.
  while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void KvBlockServer::accept_loop() {
  while (!stopping_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++active_;
    std::thread([this, fd] {
      serve(fd);
      --active_;
    }).detach();
  }
}

void KvBlockServer::serve(int fd) {
  set_timeouts(fd);
  std::uint32_t magic = 0, version = 0, first = 0, count = 0, layers = 0;
  std::uint64_t page_bytes = 0;
  std::string engine, key;
  const bool read = get_u32(fd, magic) && get_u32(fd, version) && get_string(fd, engine) &&
                    get_string(fd, key) && get_u32(fd, first) && get_u32(fd, count) &&
                    get_u32(fd, layers) && get_u64(fd, page_bytes);
  auto refuse = [&](TransferStatus status) {
    const std::string h = head(status, 0, 0, 0, 0);
    write_all(fd, h.data(), h.size());
    ++counters_->pulls_failed;
  };
  if (!read || magic != kMagic || version != kVersion || count > kMaxBlocks) {
    if (read) refuse(TransferStatus::kBadRequest);
    close(fd);
    return;
  }
  if (engine != engine_id_) {
    refuse(TransferStatus::kUnknownEngine);
    close(fd);
    return;
  }
  const auto cache_layers = static_cast<std::uint32_t>(cache_->layers());
  if (page_bytes != cache_->page_bytes() || layers != cache_layers) {
    refuse(TransferStatus::kShapeMismatch);
    close(fd);
    return;
  }
  TransferStatus why = TransferStatus::kOk;
  std::optional<HeldKv> held = take_(key, why);
  if (!held) {
    refuse(why);
    close(fd);
    return;
  }
  const std::uint32_t available =
      first < held->pages.size() ? static_cast<std::uint32_t>(held->pages.size()) - first : 0;
  const std::uint32_t blocks = std::min(count, available);
  const std::string h = head(TransferStatus::kOk, cache_layers, page_bytes, blocks,
                             static_cast<std::uint32_t>(held->hidden.size()));
  std::vector<iovec> iov;
  iov.push_back({const_cast<char*>(h.data()), h.size()});
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (std::uint32_t l = 0; l < cache_layers; ++l) {
      iov.push_back({cache_->page(static_cast<int>(l), held->pages[first + b]), page_bytes});
    }
  }
  iov.push_back({held->hidden.data(), held->hidden.size() * sizeof(float)});
  bool ok = writev_all(fd, iov);
  std::uint32_t ack = 0;
  ok = ok && get_u32(fd, ack) && ack == 1;
  if (ok) {
    counters_->bytes_sent +=
        std::uint64_t{blocks} * cache_layers * page_bytes + held->hidden.size() * sizeof(float);
    ++counters_->pulls_served;
  } else {
    ++counters_->pulls_failed;
  }
  done_(key, ok);
  close(fd);
}

// ---- decode side -------------------------------------------------------------------------
FetchOutcome fetch_kv(const RemoteKv& remote, std::uint32_t first_block, std::uint32_t count,
                      std::uint32_t layers, std::size_t page_bytes, std::uint32_t hidden_floats,
                      TransferCounters& counters) {
  FetchOutcome out;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string peer = remote.host + ":" + std::to_string(remote.port);
  auto fail = [&](std::string why) {
    out.error = "KV transfer from " + peer + " (" + remote.request_id + ") failed: " + why;
    ++counters.fetch_failures;
    return std::move(out);
  };
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(remote.host.c_str(), std::to_string(remote.port).c_str(), &hints, &res) != 0 ||
      res == nullptr) {
    return fail("cannot resolve " + remote.host);
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(res);
    return fail("socket() failed");
  }
  set_timeouts(fd);
  const int rc = connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (rc != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return fail("cannot connect: " + why);
  }
  std::string req;
  put_u32(req, kMagic);
  put_u32(req, kVersion);
  put_u32(req, static_cast<std::uint32_t>(remote.engine_id.size()));
  req += remote.engine_id;
  put_u32(req, static_cast<std::uint32_t>(remote.request_id.size()));
  req += remote.request_id;
  put_u32(req, first_block);
  put_u32(req, count);
  put_u32(req, layers);
  put_u64(req, page_bytes);
  std::uint32_t status = 0, got_layers = 0, blocks = 0, hidden = 0;
  std::uint64_t got_page = 0;
  if (!write_all(fd, req.data(), req.size()) || !get_u32(fd, status) || !get_u32(fd, got_layers) ||
      !get_u64(fd, got_page) || !get_u32(fd, blocks) || !get_u32(fd, hidden)) {
    close(fd);
    return fail("the prefill instance closed the connection or timed out");
  }
  if (status != static_cast<std::uint32_t>(TransferStatus::kOk)) {
    close(fd);
    out.not_held = status == static_cast<std::uint32_t>(TransferStatus::kNotHeld);
    return fail(status_text(static_cast<TransferStatus>(status)));
  }
  if (got_layers != layers || got_page != page_bytes || blocks > count || hidden != hidden_floats) {
    close(fd);
    return fail("unexpected answer shape");
  }
  auto kv = std::make_unique<StagedKv>();
  kv->first_block = first_block;
  kv->blocks = blocks;
  kv->layers = layers;
  kv->page_bytes = page_bytes;
  kv->data.resize(std::size_t{blocks} * layers * page_bytes);
  kv->hidden.resize(hidden);
  if (!read_all(fd, kv->data.data(), kv->data.size()) ||
      !read_all(fd, kv->hidden.data(), kv->hidden.size() * sizeof(float))) {
    close(fd);
    return fail("the prefill instance died mid-transfer (" + std::to_string(kv->data.size()) +
                " bytes expected)");
  }
  std::string ack;
  put_u32(ack, 1);
  write_all(fd, ack.data(), ack.size());
  close(fd);
  counters.bytes_received += kv->bytes();
  ++counters.fetches;
  counters.fetch_micros += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  out.kv = std::move(kv);
  return out;
}

KvFetcher::KvFetcher(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { run(); });
}

KvFetcher::~KvFetcher() { stop(); }

void KvFetcher::post(Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void KvFetcher::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void KvFetcher::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.erase(queue_.begin());
    }
    job();
  }
}

}  // namespace omni::serve
