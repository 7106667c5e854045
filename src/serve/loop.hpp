// The engine loop: one thread that owns omni_engine's scheduler (the same one omni-sim and
// omni-cluster run) and the model executor, and steps them as fast as the forward pass goes.
//
//   handlers ──submit()/abort()──► inbox (mutex) ──► loop thread
//   loop thread: schedule() ─► ModelExecutor::execute() (the forward pass) ─► complete()
//                ─► channels (tokens, text, finish), metrics, KV events (EventSink)
//
// PD prefill side: a prefill-only request that finishes holds its blocks under a key until a
// decode instance pulls them over the KV block server (then they are freed), or the lease
// expires. PD decode side: a request whose KV is remote waits while the fetcher pulls it (the
// staging memory is bounded), then enters the scheduler with its prompt preloaded.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "omni/engine/engine.hpp"
#include "serve/executor.hpp"
#include "serve/kv_transfer.hpp"
#include "serve/seq.hpp"
#include "sim/sim_metrics.hpp"

namespace omni::serve {

struct LoopOptions {
  // A prefill-only request's kv_transfer_params for the decode instance, from its hold key,
  // its blocks and its prompt length (raw JSON).
  std::function<std::string(const std::string& key, std::span<const engine::BlockId> blocks,
                            std::uint32_t prompt_tokens)>
      hold_params;
  std::size_t max_in_flight = 4096;
  double lease_seconds = 30.0;
  bool recompute_on_load_failure = false;
  std::uint64_t staging_bytes = 256ull << 20;
};

// Counters and gauges beyond omni-sim's metrics (spec decode, PD transfer), read at scrape.
struct LoopStats {
  sim::EngineGauges gauges;
  ExecutorStats executor;
  std::uint64_t fetching = 0;      // requests whose KV is being pulled
  std::uint64_t staged_bytes = 0;  // fetched KV waiting for blocks
  std::uint64_t holds = 0;
  std::uint64_t steps = 0;
  double busy_seconds = 0;  // time spent stepping
};

class EngineLoop {
 public:
  using EventSink = std::function<void(std::vector<kvcache::KVEvent>)>;
  // Called on the loop thread between steps (expert rebalancing).
  using BetweenSteps = std::function<void()>;

  EngineLoop(engine::Engine scheduler, ModelExecutor& executor, LoopOptions options,
             sim::SimMetrics* metrics, EventSink sink, KvFetcher* fetcher,
             TransferCounters* transfer);
  ~EngineLoop();
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  void set_between_steps(BetweenSteps fn) { between_ = std::move(fn); }
  void start();
  void stop();  // fails what is in flight ("engine shutting down"), joins the thread

  // Queues a request's choices (ids are assigned here). kResourceExhausted past
  // max_in_flight, kUnavailable after stop().
  Status submit(std::vector<std::unique_ptr<Seq>> seqs);
  void abort(engine::SeqId id);
  std::future<bool> reset_prefix_cache();

  // PD prefill side (the KV block server's threads).
  std::optional<HeldKv> take_hold(const std::string& key, TransferStatus& why);
  void end_pull(const std::string& key, bool acked);
  // The client of a prefill-only request never got its params: free the hold now.
  void drop_hold(const std::string& key);

  LoopStats stats() const;
  // The sequence with this id, for the executor (the loop's thread only).
  Seq* find(engine::SeqId id) {
    auto it = seqs_.find(id);
    return it == seqs_.end() ? nullptr : it->second.get();
  }
  const engine::EngineConfig& engine_config() const { return config_; }
  std::uint64_t total_blocks() const { return total_blocks_; }

 private:
  struct Hold {
    engine::SeqId id = 0;
    HeldKv kv;
    double expires = 0;
    bool busy = false;
    bool drop_when_done = false;
  };
  struct Command {
    enum class Kind { kSubmit, kAbort, kRelease, kReset, kFetched } kind;
    engine::SeqId id = 0;
    std::vector<std::unique_ptr<Seq>> seqs;
    std::shared_ptr<std::promise<bool>> done;
    FetchOutcome fetched;
  };

  double now() const;
  void run();
  void take_inbox();
  void admit(std::unique_ptr<Seq> seq);
  void enter_engine(std::unique_ptr<Seq> seq);
  void start_fetches();
  void fetched(engine::SeqId id, FetchOutcome outcome);
  void step();
  void deliver(const engine::StepOutputs& out, double end);
  void finish(Seq& seq, engine::FinishReason reason, double at);
  void fail_seq(engine::SeqId id, const std::string& message, int status);
  void abort_now(engine::SeqId id);
  void expire_leases();
  void idle_wait();
  // The gauges, then the channel updates queued since the last call (notify()).
  void publish_gauges();
  void publish_stats();
  void notify(std::shared_ptr<ChoiceChannel> channel, std::function<void(ChoiceProgress&)> update);
  void post(Command command);

  engine::Engine engine_;
  const engine::EngineConfig config_;
  std::uint64_t total_blocks_ = 0;
  ModelExecutor& executor_;
  LoopOptions options_;
  sim::SimMetrics* metrics_;
  EventSink sink_;
  KvFetcher* fetcher_;
  TransferCounters* transfer_;
  BetweenSteps between_;
  const std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();

  mutable std::mutex mu_;  // guards the inbox, the holds and the shared stats below
  std::condition_variable wake_;
  std::deque<Command> inbox_;
  std::size_t in_flight_ = 0;
  engine::SeqId next_id_ = 1;
  bool stopping_ = false;
  bool stopped_ = false;
  std::unordered_map<std::string, Hold> holds_;
  LoopStats shared_;
  std::thread thread_;

  // Loop thread only.
  std::unordered_map<engine::SeqId, std::unique_ptr<Seq>> seqs_;
  std::deque<std::unique_ptr<Seq>> to_fetch_;  // waiting for staging room
  std::unordered_map<engine::SeqId, std::unique_ptr<Seq>> fetching_;
  std::uint64_t staged_bytes_ = 0;
  struct Notice {
    std::shared_ptr<ChoiceChannel> channel;
    std::function<void(ChoiceProgress&)> update;
  };
  std::vector<Notice> notices_;
};

}  // namespace omni::serve
