// The engine driver: one thread that owns the Engine and runs it against a (sped-up) clock.
//
//   handlers ──submit()/abort()/release_held()──► inbox (bounded, mutex) ──► driver thread
//   driver thread: schedule() → step_seconds() → sleep until the step's end in model time →
//                  complete() → RequestChannel updates, metrics, KV events (EventSink)
//
// The Engine is pure and single-threaded; only this thread touches it. Handlers learn about
// progress through their RequestChannel. A request delayed by a modelled KV transfer (PD
// decode side) waits in the driver until its transfer is over, then enters the engine.
#pragma once

#include <boost/asio/any_io_executor.hpp>

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
#include <unordered_set>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/engine/engine.hpp"
#include "sim/request_channel.hpp"
#include "sim/sim_metrics.hpp"

namespace omni::sim {

struct DriverOptions {
  std::size_t max_inbox = 4096;        // submissions not yet taken by the thread
  std::size_t max_in_flight = 100000;  // requests in the engine or waiting for a transfer
  double kv_lease_seconds = 30.0;      // PD prefill side: how long held KV waits for a pull
  double speed = 1.0;                  // model seconds per wall second (the clock's speed-up)
};

struct Submission {
  engine::SeqSpec spec;           // spec.id is set by submit()
  double transfer_seconds = 0.0;  // model time before the request may enter the engine
  // Prefill-only: the key a decode instance pulls the held KV by (the remote_request_id, or
  // the SGLang bootstrap room). One key holds one request's KV: a submission whose key is
  // held, or reserved by a prefill still running, is refused (never replaces the first).
  std::string held_key;
  std::uint32_t max_tokens_param = 0;  // for vllm:request_params_max_tokens
};

// What a pull of held KV found.
struct HeldKv {
  std::uint32_t prompt_tokens = 0;
};

class EngineDriver {
 public:
  using EventSink = std::function<void(std::vector<kvcache::KVEvent>)>;

  // `clock` must outlive the driver; `metrics` may be null; `sink` is called on the driver thread.
  EngineDriver(engine::Engine engine, const Clock& clock, DriverOptions options,
               SimMetrics* metrics, EventSink sink);
  ~EngineDriver();  // stop()
  EngineDriver(const EngineDriver&) = delete;
  EngineDriver& operator=(const EngineDriver&) = delete;

  void start();
  // Fails every request still in flight ("engine shutting down") and joins the thread.
  void stop();

  // Queues a request; its channel reports progress on `executor`. kResourceExhausted when the
  // inbox or the in-flight table is full, kUnavailable after stop(), kInvalidArgument when
  // its held_key is already taken.
  Result<std::shared_ptr<RequestChannel>> submit(Submission submission,
                                                 boost::asio::any_io_executor executor);
  // Ends a request wherever it is: waiting for its KV transfer, in the engine (its channel
  // reports FinishReason::kAbort), or done with prefill and holding KV (the hold is freed).
  void abort(engine::SeqId id);
  // PD prefill side: a decode instance pulls the KV held under `key`. nullopt when nothing is
  // held under it (unknown, already pulled, or the lease expired).
  std::optional<HeldKv> release_held(const std::string& key);
  // vLLM's reset_prefix_cache, on the driver thread: true when the cache was reset (nothing
  // running or held), false otherwise (nothing changes).
  std::future<bool> reset_prefix_cache();

  EngineGauges gauges() const;
  const engine::EngineConfig& engine_config() const { return engine_config_; }
  const engine::CostModel& cost_model() const { return cost_; }
  // Model time now, in seconds since the driver's clock epoch.
  double now() const;

 private:
  struct Tracked;
  struct Held {
    engine::SeqId id;
    std::uint32_t prompt_tokens;
    double expires;
  };
  struct Command {
    enum class Kind { kSubmit, kAbort, kRelease, kReset } kind;
    engine::SeqId id = 0;
    std::optional<Submission> submission;
    std::shared_ptr<RequestChannel> channel;
    std::shared_ptr<std::promise<bool>> done;  // kReset
  };

  void run();
  void take_inbox();
  void admit(Submission s, std::shared_ptr<RequestChannel> channel);
  void admit_ready_transfers();
  void expire_leases();
  void step();
  void dispatch(const engine::StepOutputs& out, const engine::StepPlan& plan, double end);
  void finish(engine::SeqId id, engine::FinishReason reason, double at);
  void abort_now(engine::SeqId id);
  void reset_now(std::promise<bool>& done);
  // Forgets a hold (mu_ held) and queues the release of its blocks; `outcome` labels
  // omni_sim_kv_holds_total.
  void drop_held_locked(std::unordered_map<std::string, Held>::iterator it, const char* outcome);
  void idle_wait();
  void sleep_until(double model_time);
  std::chrono::microseconds wall_of(double model_seconds) const;
  void publish_gauges();

  engine::Engine engine_;
  const engine::EngineConfig engine_config_;
  const engine::CostModel cost_;
  const Clock& clock_;
  DriverOptions options_;
  SimMetrics* metrics_;
  EventSink sink_;

  mutable std::mutex mu_;  // guards everything below up to the thread-only section
  std::condition_variable wake_;
  std::deque<Command> inbox_;
  std::size_t in_flight_ = 0;
  std::unordered_map<std::string, Held> held_;                 // key -> hold
  std::unordered_map<engine::SeqId, std::string> held_by_id_;  // the same holds, by request
  std::unordered_set<std::string> reserved_;  // keys of prefill-only requests not yet done
  EngineGauges gauges_;
  engine::SeqId next_id_ = 1;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread thread_;

  // Driver thread only.
  struct Notice {
    std::shared_ptr<RequestChannel> channel;
    std::uint32_t tokens, cached;
    engine::FinishReason finish;
  };
  std::vector<Notice> notices_;  // one step's progress, sent after its book-keeping and gauges
  std::unordered_map<engine::SeqId, std::unique_ptr<Tracked>> tracked_;
  std::multimap<double, std::pair<Submission, std::shared_ptr<RequestChannel>>> transfers_;
};

std::string_view finish_reason_name(engine::FinishReason reason);

}  // namespace omni::sim
