// omni-bench: a load generator for any OpenAI-compatible endpoint (docs/omni-bench.md).
//
//   omni-bench --base-url http://127.0.0.1:8000 --trace mooncake.jsonl --trace-format mooncake
//       --time-scale 0.5 --max-requests 500 --slo ttft=2s,tpot=80ms --out results.json
//   omni-bench --base-url http://127.0.0.1:8000 --synthetic 'n=200,rate=5' --concurrency 16
//   omni-bench compare before.json after.json
//
// Exit status: 0 the run completed at least one request (failures are in the results);
// 1 nothing completed, or the trace was malformed; 2 bad flags or unreadable input.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "omni/benchstat/summary.hpp"
#include "omni/workload/synthetic.hpp"
#include "options.hpp"
#include "runner.hpp"

namespace omni::bench {
namespace {

void add_run_flags(CLI::App& app, Flags& f) {
  app.add_option("--base-url", f.base_url, "Server, http://HOST:PORT[/prefix]");
  app.add_option("--endpoint", f.endpoint, "/v1/completions (token-id prompts) or /v1/chat/completions (text)")
      ->capture_default_str();
  app.add_option("--model", f.model, "Model name sent in every request (default: the server's)");
  app.add_option("--trace", f.trace, "Trace file to replay");
  app.add_option("--trace-format", f.trace_format, "mooncake or azure")
      ->check(CLI::IsMember({"mooncake", "azure"}))
      ->capture_default_str();
  app.add_option("--synthetic", f.synthetic, "Synthetic workload SPEC, e.g. 'n=500,rate=4,input=lognormal:2000:1500'");
  app.add_option("--system-prompt-tokens", f.system_prompt_tokens,
                 "Azure: a shared system prompt of this many tokens (whole 512-token blocks)");
  app.add_option("--request-rate", f.request_rate, "Poisson arrivals at this rate (req/s, or inf), ignoring timestamps");
  app.add_option("--burstiness", f.burstiness, "With --request-rate: gamma arrivals with this coefficient of variation")
      ->capture_default_str();
  app.add_option("--concurrency", f.concurrency,
                 "At most this many requests in flight; alone, a closed loop at this concurrency");
  app.add_option("--time-scale", f.time_scale, "Trace replay: multiply arrival times (0.5 = twice as fast)")
      ->capture_default_str();
  app.add_option("--max-requests", f.max_requests, "Send at most this many requests");
  app.add_option("--duration", f.duration, "Send requests for at most this long (e.g. 60s)");
  app.add_option("--timeout", f.timeout, "Per request: the longest silence, and the longest stream")
      ->capture_default_str();
  app.add_option("--slo", f.slo, "Goodput objectives, e.g. ttft=2s,tpot=80ms,e2e=30s");
  app.add_option("--out", f.out, "Write the aggregate results JSON here");
  app.add_option("--requests-out", f.requests_out, "Write one JSON line per request here");
  app.add_option("--seed", f.seed, "Seed of every random draw (synthetic workloads, Poisson pacing)")
      ->capture_default_str();
  app.add_option("--vocab-begin", f.vocab_begin, "Lowest token id of generated prompts")->capture_default_str();
  app.add_option("--vocab-end", f.vocab_end, "Token ids of generated prompts stay below this")->capture_default_str();
  app.add_flag("--no-ignore-eos", f.no_ignore_eos, "Do not send ignore_eos (the server may stop early)");
  app.add_flag("--progress", f.progress, "Show the progress bar even when stderr is not a terminal");
  app.add_flag("--no-progress", f.no_progress, "Never show the progress bar");
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) return make_error(ErrorCode::kIo, "cannot write " + path);
  return ok_status();
}

int compare(const std::string& a_path, const std::string& b_path) {
  auto a = read_file(a_path);
  auto b = read_file(b_path);
  if (!a || !b) {
    std::cerr << "omni-bench compare: " << (a ? b.error() : a.error()).message << "\n";
    return 2;
  }
  auto text = benchstat::compare_results(*a, *b, a_path, b_path);
  if (!text) {
    std::cerr << "omni-bench compare: " << text.error().message << "\n";
    return 2;
  }
  std::cout << *text;
  return 0;
}

Status write_outputs(const Flags& flags, const RunResult& run, const benchstat::Summary& summary) {
  if (!flags.out.empty()) {
    if (auto s = write_file(flags.out, benchstat::to_json(summary, config_json(flags)) + "\n"); !s) return s;
  }
  if (!flags.requests_out.empty()) {
    std::vector<const benchstat::RequestRecord*> sorted;
    for (const auto& r : run.records) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->index < y->index; });
    std::string lines;
    for (const auto* r : sorted) lines += benchstat::record_json_line(*r) + "\n";
    if (auto s = write_file(flags.requests_out, lines); !s) return s;
  }
  return ok_status();
}

// Thousands of concurrent streams need as many sockets: lift the soft descriptor limit to the
// hard one (a failure only means the default limit stays).
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int run(const Flags& flags) {
  raise_descriptor_limit();
  auto options = validate(flags, isatty(STDERR_FILENO) == 1);
  if (!options) {
    std::cerr << "omni-bench: " << options.error().message << "\n";
    return 2;
  }
  auto workload = open_workload(flags);
  if (!workload) {
    std::cerr << "omni-bench: " << workload.error().message << "\n";
    return 2;
  }
  std::uint64_t total = options->max_requests;
  if (total == 0 && !flags.synthetic.empty()) total = workload::parse_synthetic_spec(flags.synthetic)->requests;
  Progress progress(options->progress, total);
  RunResult result = run_benchmark(*options, **workload, progress);
  const auto summary = benchstat::summarize(result.records, result.duration_s, options->slo);
  std::cout << benchstat::format_table(summary) << std::flush;
  if (auto s = write_outputs(flags, result, summary); !s) {
    std::cerr << "omni-bench: " << s.error().message << "\n";
    return 2;
  }
  if (result.interrupted) std::cerr << "omni-bench: interrupted; results cover the requests sent\n";
  if (result.workload_error) {
    std::cerr << "omni-bench: workload: " << result.workload_error->message << "\n";
    return 1;
  }
  return summary.completed > 0 ? 0 : 1;
}

}  // namespace
}  // namespace omni::bench

int main(int argc, char** argv) {
  using namespace omni::bench;
  CLI::App app("omni-bench: load generator for OpenAI-compatible endpoints (docs/omni-bench.md)");
  app.require_subcommand(0, 1);
  Flags flags;
  add_run_flags(app, flags);
  std::string a_path, b_path;
  auto* cmp = app.add_subcommand("compare", "Print two results JSON files side by side with ratios b/a");
  cmp->add_option("a", a_path, "Baseline results JSON")->required();
  cmp->add_option("b", b_path, "Results JSON to compare")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (cmp->parsed()) return compare(a_path, b_path);
  if (flags.base_url.empty()) {
    std::cerr << "omni-bench: --base-url is required\n";
    return 2;
  }
  return run(flags);
}
