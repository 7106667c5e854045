// PD KV transfer between omni-serve instances: a plain TCP block protocol on the prefill
// instance's side channel (where NIXL listens in vLLM: kv_transfer_params' remote_host and
// remote_port). Pages go from the prefill's paged latent cache to the socket without a copy
// (writev over the held pages) and land in the decode instance's staging buffer, which the
// executor copies into the blocks its request is admitted with.
//
//   decode ──► READ  {magic, version, engine id, hold key, first block, count, layers, page bytes}
//   prefill ─► HEAD  {status, layers, page bytes, blocks, hidden floats}
//              DATA  blocks × layers × page bytes, then the prompt's last hidden state (f32)
//   decode ──► ACK   the prefill frees the hold's blocks (vLLM: blocks freed when read);
//                    without an ACK (the decode died, the link broke) they stay until the
//                    lease expires (vLLM's abort timeout)
//
// All integers little-endian. Every read has a timeout; malformed or oversized requests close
// the connection.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/model/engine.hpp"
#include "serve/seq.hpp"

namespace omni::serve {

// What a prefill instance holds for one decode pull.
struct HeldKv {
  std::vector<std::int32_t> pages;  // the prompt's blocks (page ids), in token order
  std::vector<float> hidden;        // the prompt's last final hidden state
};

enum class TransferStatus : std::uint32_t {
  kOk = 0,
  kUnknownEngine = 1,
  kNotHeld = 2,  // unknown key, already pulled, lease expired
  kBusy = 3,     // another pull of the same hold is in progress
  kShapeMismatch = 4,
  kBadRequest = 5,
};

struct TransferCounters {
  std::atomic<std::uint64_t> bytes_sent{0}, bytes_received{0};
  std::atomic<std::uint64_t> pulls_served{0}, pulls_failed{0};
  std::atomic<std::uint64_t> fetches{0}, fetch_failures{0};
  std::atomic<std::uint64_t> fetch_micros{0};
};

class KvBlockServer {
 public:
  // Takes a hold for serving (marks it busy): nullopt and a status when it cannot be served.
  using Take = std::function<std::optional<HeldKv>(const std::string& key, TransferStatus& why)>;
  // The pull of `key` ended: `acked` true when the decode confirmed it (free the blocks),
  // false when it broke off (the hold stays, unbusy, until its lease).
  using Done = std::function<void(const std::string& key, bool acked)>;

  static Result<std::unique_ptr<KvBlockServer>> start(const std::string& host, std::uint16_t port,
                                                      std::string engine_id,
                                                      model::PagedLatentCache& cache, Take take,
                                                      Done done, TransferCounters& counters);
  ~KvBlockServer();
  std::uint16_t port() const noexcept { return port_; }
  void stop();

 private:
  KvBlockServer() = default;
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::string engine_id_;
  model::PagedLatentCache* cache_ = nullptr;
  Take take_;
  Done done_;
  TransferCounters* counters_ = nullptr;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::atomic<int> active_{0};  // connections being served (detached threads)
};

// Decode side: pulls blocks [first_block, first_block + count) of a hold. Blocking; runs on
// the fetcher's threads.
struct FetchOutcome {
  std::unique_ptr<StagedKv> kv;
  std::string error;  // set on failure: what went wrong, naming the peer
  bool not_held = false;
};
FetchOutcome fetch_kv(const RemoteKv& remote, std::uint32_t first_block, std::uint32_t count,
                      std::uint32_t layers, std::size_t page_bytes, std::uint32_t hidden_floats,
                      TransferCounters& counters);

// A small pool of fetch threads with a queue (bounded by the caller's staging budget).
class KvFetcher {
 public:
  using Job = std::function<void()>;
  explicit KvFetcher(int threads);
  ~KvFetcher();
  void post(Job job);
  void stop();

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace omni::serve
