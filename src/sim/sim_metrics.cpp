#include "sim/sim_metrics.hpp"

#include <utility>
#include <vector>

namespace omni::sim {
namespace {

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kPhaseBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                           5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                           60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// vLLM's 1-2-5 series up to max_model_len.
std::vector<double> token_buckets(std::uint32_t max_len) {
  std::vector<double> out;
  for (double base = 1; base <= max_len; base *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (base * m <= max_len) out.push_back(base * m);
    }
  }
  return out;
}

std::vector<double> iteration_buckets() {
  std::vector<double> out = {1, 8};
  for (double b = 16; b <= 16384; b *= 2) out.push_back(b);
  return out;
}

const std::vector<std::string> kLabels = {"model_name", "engine"};

}  // namespace

Result<std::unique_ptr<SimMetrics>> SimMetrics::create(metrics::Registry& registry,
                                                       const std::string& model_name,
                                                       std::uint32_t max_model_len,
                                                       const CacheInfo& cache,
                                                       std::function<EngineGauges()> gauges) {
  std::unique_ptr<SimMetrics> m(new SimMetrics());
  if (Status s = m->init(registry, model_name, max_model_len, cache, std::move(gauges)); !s) {
    return std::move(s).error();
  }
  return m;
}

#define OMNI_SIM_TRY(expr)                                 \
  do {                                                     \
    auto omni_sim_r = (expr);                              \
    if (!omni_sim_r) return std::move(omni_sim_r).error(); \
  } while (0)

Status SimMetrics::init(metrics::Registry& r, const std::string& model, std::uint32_t max_model_len,
                        const CacheInfo& cache, std::function<EngineGauges()> gauges) {
  registry_ = &r;
  model_ = model;
  auto counter = [&](const char* name, const char* help, metrics::Counter*& out) -> Status {
    auto family = r.counter(name, help, kLabels);
    if (!family) return std::move(family).error();
    auto child = (*family)->with({model, "0"});
    if (!child) return std::move(child).error();
    out = *child;
    return ok_status();
  };
  auto histogram = [&](const char* name, const char* help, const std::vector<double>& bounds,
                       metrics::Histogram*& out) -> Status {
    auto family = r.histogram(name, help, kLabels, bounds);
    if (!family) return std::move(family).error();
    auto child = (*family)->with({model, "0"});
    if (!child) return std::move(child).error();
    out = *child;
    return ok_status();
  };
  OMNI_SIM_TRY(
      counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", prompt_tokens_));
  OMNI_SIM_TRY(counter("vllm:prompt_tokens_cached_total",
                       "Number of cached prompt tokens (local + external).",
                       prompt_tokens_cached_));
  OMNI_SIM_TRY(counter("vllm:prompt_tokens_recomputed_total",
                       "Number of cached tokens recomputed for forward pass.",
                       prompt_tokens_recomputed_));
  {
    auto by_source =
        r.counter("vllm:prompt_tokens_by_source_total", "Number of prompt tokens by source.",
                  {"model_name", "engine", "source"});
    if (!by_source) return std::move(by_source).error();
    prompt_local_compute_ = *(*by_source)->with({model, "0", "local_compute"});
    prompt_local_cache_hit_ = *(*by_source)->with({model, "0", "local_cache_hit"});
    prompt_external_ = *(*by_source)->with({model, "0", "external_kv_transfer"});
  }
  OMNI_SIM_TRY(counter("vllm:generation_tokens_total", "Number of generation tokens processed.",
                       generation_tokens_));
  OMNI_SIM_TRY(histogram("vllm:time_to_first_token_seconds",
                         "Histogram of time to first token in seconds.", kTtftBuckets, ttft_));
  OMNI_SIM_TRY(histogram("vllm:inter_token_latency_seconds",
                         "Histogram of inter-token latency in seconds.", kItlBuckets, itl_));
  OMNI_SIM_TRY(histogram("vllm:request_time_per_output_token_seconds",
                         "Histogram of time_per_output_token_seconds per request.", kItlBuckets,
                         tpot_));
  OMNI_SIM_TRY(histogram("vllm:e2e_request_latency_seconds",
                         "Histogram of e2e request latency in seconds.", kPhaseBuckets, e2e_));
  OMNI_SIM_TRY(histogram("vllm:request_queue_time_seconds",
                         "Histogram of time spent in WAITING phase for request.", kPhaseBuckets,
                         queue_));
  OMNI_SIM_TRY(histogram("vllm:request_inference_time_seconds",
                         "Histogram of time spent in RUNNING phase for request.", kPhaseBuckets,
                         inference_));
  OMNI_SIM_TRY(histogram("vllm:request_prefill_time_seconds",
                         "Histogram of time spent in PREFILL phase for request.", kPhaseBuckets,
                         prefill_));
  OMNI_SIM_TRY(histogram("vllm:request_decode_time_seconds",
                         "Histogram of time spent in DECODE phase for request.", kPhaseBuckets,
                         decode_));
  const auto tokens = token_buckets(max_model_len);
  OMNI_SIM_TRY(histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
                         tokens, req_prompt_tokens_));
  OMNI_SIM_TRY(histogram("vllm:request_generation_tokens", "Number of generation tokens processed.",
                         tokens, req_generation_tokens_));
  OMNI_SIM_TRY(histogram("vllm:request_params_max_tokens",
                         "Histogram of the max_tokens request parameter.", tokens,
                         req_max_tokens_));
  OMNI_SIM_TRY(histogram("vllm:iteration_tokens_total",
                         "Histogram of number of tokens per engine_step.", iteration_buckets(),
                         iteration_tokens_));
  auto success =
      r.counter("vllm:request_success_total", "Count of successfully processed requests.",
                {"model_name", "engine", "finished_reason"});
  if (!success) return std::move(success).error();
  success_ = *success;
  auto faults = r.counter("omni_sim_faults_injected_total", "Faults injected, by kind.", {"kind"});
  if (!faults) return std::move(faults).error();
  faults_ = *faults;
  auto http = r.counter("omni_sim_http_requests_total",
                        "HTTP requests answered, by route and status.", {"route", "status"});
  if (!http) return std::move(http).error();
  http_ = *http;
  auto holds =
      r.counter("omni_sim_kv_holds_total",
                "PD prefill side: KV holds by outcome (held, pulled, expired, aborted, refused).",
                {"outcome"});
  if (!holds) return std::move(holds).error();
  kv_holds_ = *holds;
  auto load_failures =
      r.counter("omni_sim_kv_load_failures_total",
                "PD decode side: remote KV that could not be loaded, by reason and action.",
                {"reason", "action"});
  if (!load_failures) return std::move(load_failures).error();
  kv_load_failures_ = *load_failures;
  auto published =
      r.counter("omni_sim_kv_event_batches_total", "KV-event batches, by outcome.", {"outcome"});
  if (!published) return std::move(published).error();
  OMNI_SIM_TRY((*published)->with({"published"}));
  kv_published_ = *(*published)->with({"published"});
  kv_dropped_ = *(*published)->with({"dropped"});

  auto gauge = [&](const char* name, const char* help, double EngineGauges::*field) {
    return r.gauge_callback(name, help, kLabels, [gauges, field, model](metrics::Emitter& e) {
      e.emit({model, "0"}, gauges().*field);
    });
  };
  auto counter_cb = [&](const char* name, const char* help, double EngineGauges::*field) {
    return r.counter_callback(name, help, kLabels, [gauges, field, model](metrics::Emitter& e) {
      e.emit({model, "0"}, gauges().*field);
    });
  };
  OMNI_SIM_TRY(gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                     &EngineGauges::running));
  OMNI_SIM_TRY(gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                     &EngineGauges::waiting));
  OMNI_SIM_TRY(gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
                     &EngineGauges::kv_cache_usage));
  OMNI_SIM_TRY(counter_cb("vllm:prefix_cache_queries_total",
                          "Prefix cache queries, in terms of number of queried tokens.",
                          &EngineGauges::prefix_cache_queries));
  OMNI_SIM_TRY(counter_cb("vllm:prefix_cache_hits_total",
                          "Prefix cache hits, in terms of number of cached tokens.",
                          &EngineGauges::prefix_cache_hits));
  OMNI_SIM_TRY(r.gauge_callback("omni_sim_kv_holds",
                                "PD prefill side: requests holding KV for a decode instance.", {},
                                [gauges](metrics::Emitter& e) { e.emit({}, gauges().held); }));
  OMNI_SIM_TRY(counter_cb("vllm:num_preemptions_total",
                          "Cumulative number of preemption from the engine.",
                          &EngineGauges::preemptions));
  const std::string block_size = std::to_string(cache.block_size);
  const std::string algo = cache.hash_algo;
  const std::string enabled = cache.enable_prefix_caching ? "True" : "False";
  const std::string blocks = std::to_string(cache.num_gpu_blocks);
  return r.gauge_callback("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                          {"block_size", "enable_prefix_caching", "engine", "num_gpu_blocks",
                           "prefix_caching_hash_algo"},
                          [=](metrics::Emitter& e) {
                            e.emit({block_size, enabled, "0", blocks, algo}, 1.0);
                          });
}

void SimMetrics::on_step(std::uint32_t scheduled_tokens) {
  if (scheduled_tokens > 0) iteration_tokens_->observe(scheduled_tokens);
}

void SimMetrics::on_prompt(std::uint32_t prompt, std::uint32_t cached, std::uint32_t external) {
  // vLLM's PromptTokenStats.update_from_output, term for term.
  const std::uint32_t recomputed = cached + 1 == prompt ? 1 : 0;
  prompt_tokens_->inc(prompt);
  prompt_tokens_cached_->inc(cached);
  prompt_tokens_recomputed_->inc(recomputed);
  prompt_local_compute_->inc(prompt - cached);
  prompt_external_->inc(external);
  prompt_local_cache_hit_->inc(static_cast<double>(cached + recomputed) - external);
}

void SimMetrics::on_kv_hold(const std::string& outcome) {
  if (auto c = kv_holds_->with({outcome})) (*c)->inc();
}

void SimMetrics::on_kv_load_failure(const std::string& reason, const std::string& action) {
  if (auto c = kv_load_failures_->with({reason, action})) (*c)->inc();
}

void SimMetrics::on_tokens(std::uint32_t new_tokens, double since_last_token_s, bool first) {
  generation_tokens_->inc(new_tokens);
  if (first) {
    ttft_->observe(since_last_token_s);
  } else {
    itl_->observe(since_last_token_s);
  }
}

void SimMetrics::on_finish(const FinishedRequest& r) {
  if (auto c = success_->with({model_, "0", r.finished_reason})) (*c)->inc();
  e2e_->observe(r.e2e_s);
  queue_->observe(r.queue_s);
  prefill_->observe(r.prefill_s);
  decode_->observe(r.decode_s);
  inference_->observe(r.prefill_s + r.decode_s);
  req_prompt_tokens_->observe(r.prompt_tokens);
  req_generation_tokens_->observe(r.generation_tokens);
  req_max_tokens_->observe(r.max_tokens_param);
  if (r.generation_tokens > 1) tpot_->observe(r.decode_s / (r.generation_tokens - 1));
}

void SimMetrics::on_fault(const std::string& kind) {
  if (auto c = faults_->with({kind})) (*c)->inc();
}

void SimMetrics::on_kv_events(std::uint64_t dropped, std::uint64_t published) {
  kv_dropped_->inc(static_cast<double>(dropped));
  kv_published_->inc(static_cast<double>(published));
}

void SimMetrics::on_http(const std::string& route, int status) {
  if (auto c = http_->with({route, std::to_string(status)})) (*c)->inc();
}

}  // namespace omni::sim
