// omni-bench: a load generator for any OpenAI-compatible endpoint (docs/omni-bench.md).
//
//   omni-bench --base-url http://127.0.0.1:8000 --trace mooncake.jsonl
//       --time-scale 0.5 --max-requests 500 --slo ttft=2s,tpot=80ms --out results.json
//   omni-bench --base-url http://127.0.0.1:8000 --synthetic 'n=200,rate=5' --concurrency 16
//   omni-bench --dataset-name random --num-prompts 200 --request-rate 4 --save-result   (vLLM's
//   spellings) omni-bench compare before.json after.json [more.json ...] [--labels a,b,...]
//
// Exit status: 0 the run completed at least one request (failures are in the results);
// 1 nothing completed, or the trace was malformed; 2 bad flags or unreadable input.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "flags.hpp"
#include "omni/benchstat/summary.hpp"
#include "omni/benchstat/vllm_result.hpp"
#include "omni/config/cli.hpp"
#include "omni/workload/synthetic.hpp"
#include "options.hpp"
#include "prelude.hpp"
#include "runner.hpp"

namespace omni::bench {
namespace {

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

int compare(const std::vector<std::string>& paths, const std::string& labels) {
  std::vector<benchstat::ResultsFile> files;
  for (const std::string& path : paths) {
    auto text = read_file(path);
    if (!text) {
      std::cerr << "omni-bench compare: " << text.error().message << "\n";
      return 2;
    }
    files.push_back({std::filesystem::path(path).filename().string(), std::move(*text)});
  }
  std::vector<std::string> names;
  for (std::size_t start = 0; !labels.empty() && start <= labels.size();) {
    const auto end = std::min(labels.find(',', start), labels.size());
    names.push_back(labels.substr(start, end - start));
    start = end + 1;
  }
  auto text = benchstat::compare_results(files, names);
  if (!text) {
    std::cerr << "omni-bench compare: " << text.error().message << "\n";
    return 2;
  }
  std::cout << *text;
  return 0;
}

std::string now_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

Status write_outputs(const Flags& flags, const Options& options, const RunResult& run,
                     const benchstat::Summary& summary, const std::string& model_id) {
  const std::string ours = benchstat::to_json(summary, config_json(flags, options));
  if (!flags.out.empty()) {
    if (auto s = write_file(flags.out, ours + "\n"); !s) return s;
  }
  std::vector<benchstat::RequestRecord> sorted(run.records.begin(), run.records.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& x, const auto& y) { return x.index < y.index; });
  if (!flags.requests_out.empty()) {
    std::string lines;
    for (const auto& r : sorted) lines += benchstat::record_json_line(r) + "\n";
    if (auto s = write_file(flags.requests_out, lines); !s) return s;
  }
  if (flags.save_result) {
    benchstat::VllmResultOptions v = vllm_result_options(flags, options, model_id);
    v.date = now_date();
    v.omni_results_json = ours;
    std::string path =
        flags.result_filename.empty() ? benchstat::vllm_result_filename(v) : flags.result_filename;
    if (!flags.result_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(flags.result_dir, ec);
      path = (std::filesystem::path(flags.result_dir) / path).string();
    }
    if (auto s = write_file(path, benchstat::to_vllm_json(sorted, summary, v)); !s) return s;
    std::cout << "results (vllm bench serve's keys) written to " << path << "\n";
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

// Warm-up (the workload's first request, as vLLM) and the optional cache reset.
int prepare_server(const Flags& flags, const Options& options) {
  if (options.num_warmups > 0) {
    auto again = open_workload(flags);
    auto first =
        again ? (*again)->next() : Result<std::optional<workload::RequestSpec>>(again.error());
    if (!first || !*first) {
      std::cerr << "omni-bench: warm-up: the workload has no request\n";
      return 2;
    }
    std::cerr << "omni-bench: warming up with " << options.num_warmups << " requests\n";
    if (auto s = warm_up(options, **first, options.num_warmups); !s) {
      std::cerr << "omni-bench: " << s.error().message << "\n";
      return 1;
    }
  }
  if (options.reset_prefix_cache) {
    if (auto s = reset_prefix_cache(options); !s) {
      std::cerr << "omni-bench: --reset-prefix-cache: the server did not reset its prefix cache ("
                << s.error().message << ")\n";
      return 1;
    }
    std::cerr << "omni-bench: prefix cache reset\n";
  }
  return 0;
}

int run(Flags& flags) {
  raise_descriptor_limit();
  auto options = validate(flags, isatty(STDERR_FILENO) == 1);
  if (!options) {
    std::cerr << "omni-bench: " << options.error().message << "\n";
    return 2;
  }
  for (const std::string& note : options->notes) std::cerr << "omni-bench: note: " << note << "\n";
  auto workload = open_workload(flags);
  if (!workload) {
    std::cerr << "omni-bench: " << workload.error().message << "\n";
    return 2;
  }
  const ServerInfo server =
      probe_server(*options, options->detect_speed, flags.save_result && flags.model.empty());
  if (options->detect_speed && server.speed) options->server_speed = server.speed;
  if (flags.time_base == "model" && !options->server_speed) {
    std::cerr << "omni-bench: --time-base model: the server does not report its speed; give "
                 "--server-speed\n";
    return 2;
  }
  if (options->server_speed) {
    apply_server_speed(*options, *options->server_speed);
    std::cerr << "omni-bench: the server's clock runs " << *options->server_speed
              << "x: arrivals, --duration, SLOs and every reported time are in model time\n";
  }
  if (int rc = prepare_server(flags, *options); rc != 0) return rc;
  std::uint64_t total = options->max_requests;
  if (total == 0 && !flags.synthetic.empty())
    total = workload::parse_synthetic_spec(flags.synthetic)->requests;
  Progress progress(options->progress, total);
  RunResult result = run_benchmark(*options, **workload, progress);
  double duration = result.duration_s;
  if (options->server_speed) {
    benchstat::scale_times(result.records, *options->server_speed);
    duration *= *options->server_speed;
  }
  auto summary = benchstat::summarize(result.records, duration, options->slo);
  summary.server_speed = options->server_speed;
  std::cout << benchstat::format_table(summary) << std::flush;
  if (options->detect_speed && !options->server_speed && result.header_speed &&
      *result.header_speed != 1.0) {
    std::cerr << "omni-bench: note: the server answers with X-Omni-Sim-Speed: "
              << *result.header_speed
              << " (a sped-up clock) but /version did not say so: these are wall times; rerun with "
                 "--server-speed "
              << *result.header_speed << " for model time\n";
  }
  const std::string model_id = !flags.model.empty() ? flags.model : server.model_id;
  if (auto s = write_outputs(flags, *options, result, summary, model_id); !s) {
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
  std::vector<std::string> paths;
  std::string labels;
  auto* cmp = app.add_subcommand(
      "compare", "Results files side by side: the better direction and ratios to the first");
  cmp->add_option("files", paths,
                  "Results JSON files (omni-bench's, omni-cluster's, one policy or several)")
      ->required()
      ->expected(1, -1);
  cmp->add_option("--labels", labels,
                  "Column labels, comma-separated (default: config.label, config.policy, file)");
  if (auto status = omni::config::parse_or_exit(app, argc, argv)) return *status;
  if (cmp->parsed()) return compare(paths, labels);
  return run(flags);
}
