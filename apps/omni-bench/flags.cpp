#include "flags.hpp"

namespace omni::bench {
namespace {

void add_workload_flags(CLI::App& app, Flags& f) {
  app.add_option("--trace,--dataset-path", f.trace, "Trace file to replay (vLLM's --dataset-path)");
  app.add_option("--trace-format", f.trace_format,
                 "auto (from the file's first line), mooncake or azure")
      ->check(CLI::IsMember({"auto", "mooncake", "azure"}))
      ->capture_default_str();
  app.add_option("--synthetic", f.synthetic,
                 "Synthetic workload SPEC, e.g. 'n=500,rate=4,input=lognormal:2000:1500'");
  app.add_option(
      "--dataset-name", f.dataset_name,
      "vLLM's: 'random' (a synthetic workload from --random-*-len); traces with --trace");
  app.add_option("--num-prompts", f.num_prompts,
                 "vLLM's: requests to send (random: how many to make)");
  app.add_option("--random-input-len", f.random_input_len, "vLLM's random dataset: prompt tokens")
      ->capture_default_str();
  app.add_option("--random-output-len", f.random_output_len, "vLLM's random dataset: output tokens")
      ->capture_default_str();
  app.add_option("--random-range-ratio", f.random_range_ratio,
                 "vLLM's random dataset: lengths uniform in [len*(1-r), len*(1+r)]")
      ->capture_default_str();
  app.add_option(
      "--random-prefix-len", f.random_prefix_len,
      "vLLM's random dataset: a shared prefix before every prompt (whole 512-token blocks)");
  app.add_option("--system-prompt-tokens", f.system_prompt_tokens,
                 "Azure: a shared system prompt of this many tokens (whole 512-token blocks)");
}

void add_pacing_flags(CLI::App& app, Flags& f) {
  app.add_option("--request-rate", f.request_rate,
                 "Poisson arrivals at this rate (req/s, or inf), ignoring timestamps");
  app.add_option(
      "--burstiness", f.burstiness,
      "vLLM's: with --request-rate, gamma arrivals of this shape (1: Poisson; <1 burstier)");
  app.add_option("--arrival-cv", f.arrival_cv,
                 "With --request-rate: gamma arrivals with this coefficient of variation (= "
                 "1/sqrt(burstiness))");
  app.add_option(
      "--concurrency,--max-concurrency", f.concurrency,
      "At most this many requests in flight (vLLM's --max-concurrency); alone, a closed loop");
  app.add_option("--time-scale", f.time_scale,
                 "Trace replay: multiply arrival times (0.5 = twice as fast)")
      ->capture_default_str();
  app.add_option("--max-requests", f.max_requests, "Send at most this many requests");
  app.add_option("--duration", f.duration, "Send requests for at most this long (e.g. 60s)");
  app.add_option("--timeout", f.timeout,
                 "Per request: the longest silence, and the longest stream (wall time)")
      ->capture_default_str();
  app.add_option("--num-warmups", f.num_warmups,
                 "vLLM's: send the first request this many times before measuring");
  app.add_flag("--reset-prefix-cache", f.reset_prefix_cache,
               "POST /reset_prefix_cache after the warm-up, before measuring");
  app.add_option("--time-base", f.time_base,
                 "auto (model time when the server reports a sped-up clock), model or wall")
      ->check(CLI::IsMember({"auto", "model", "wall"}))
      ->capture_default_str();
  app.add_option("--server-speed", f.server_speed,
                 "The server's clock speed-up (model time), when it does not say");
}

void add_output_flags(CLI::App& app, Flags& f) {
  app.add_option("--slo", f.slo, "Goodput objectives, e.g. ttft=2s,tpot=80ms,e2e=30s");
  app.add_option("--goodput", f.goodput,
                 "vLLM's: objectives as KEY:VALUE in ms (ttft:2000 tpot:80 e2el:30000)")
      ->expected(1, -1);
  app.add_option("--out", f.out, "Write the aggregate results JSON here");
  app.add_option("--requests-out", f.requests_out, "Write one JSON line per request here");
  app.add_flag("--save-result", f.save_result,
               "vLLM's: write vllm bench serve's results JSON (omni-bench's inside)");
  app.add_flag("--save-detailed", f.save_detailed,
               "vLLM's: with --save-result, the per-request lists too");
  app.add_option("--result-dir", f.result_dir, "vLLM's: directory of the --save-result file");
  app.add_option(
      "--result-filename", f.result_filename,
      "vLLM's: its name (default {label}-{rate}qps[-concurrency{N}]-{model}-{date}.json)");
  app.add_option("--label", f.label,
                 "vLLM's: the run's label (results, file name, compare columns)");
  app.add_option("--metadata", f.metadata,
                 "vLLM's: KEY=VALUE pairs written into the --save-result file")
      ->expected(1, -1);
  app.add_option("--percentile-metrics", f.percentile_metrics,
                 "vLLM's: metrics with percentiles in --save-result")
      ->capture_default_str();
  app.add_option("--metric-percentiles", f.metric_percentiles,
                 "vLLM's: the percentiles, e.g. 50,90,99")
      ->capture_default_str();
}

}  // namespace

void add_run_flags(CLI::App& app, Flags& f) {
  app.add_option("--base-url", f.base_url, "Server, http://HOST:PORT[/prefix]");
  app.add_option("--host", f.host, "vLLM's: the server's host, without --base-url")
      ->capture_default_str();
  app.add_option("--port", f.port, "vLLM's: the server's port, without --base-url")
      ->capture_default_str();
  app.add_option("--endpoint", f.endpoint,
                 "/v1/completions (token-id prompts) or /v1/chat/completions (text)")
      ->capture_default_str()
      ->each([&f](const std::string&) { f.endpoint_given = true; });
  app.add_option("--backend", f.backend, "vLLM's: openai or vllm (completions), openai-chat (chat)")
      ->check(CLI::IsMember({"openai", "vllm", "openai-chat"}));
  app.add_option("--model", f.model, "Model name sent in every request (default: the server's)");
  add_workload_flags(app, f);
  add_pacing_flags(app, f);
  add_output_flags(app, f);
  app.add_option("--seed", f.seed,
                 "Seed of every random draw (synthetic workloads, Poisson pacing)")
      ->capture_default_str();
  app.add_option("--vocab-begin", f.vocab_begin, "Lowest token id of generated prompts")
      ->capture_default_str();
  app.add_option("--vocab-end", f.vocab_end, "Token ids of generated prompts stay below this")
      ->capture_default_str();
  app.add_flag("--no-ignore-eos", f.no_ignore_eos,
               "Do not send ignore_eos (the server may stop early)");
  app.add_flag("--ignore-eos", f.ignore_eos, "vLLM's: send ignore_eos (omni-bench's default)");
  app.add_option("--request-id-prefix", f.request_id_prefix,
                 "vLLM's: X-Request-Id = this prefix + the index")
      ->capture_default_str();
  app.add_flag("--progress", f.progress,
               "Show the progress bar even when stderr is not a terminal");
  app.add_flag("--no-progress,--disable-tqdm", f.no_progress, "Never show the progress bar");
}

}  // namespace omni::bench
