// omni-cluster: a discrete-event simulator of a PD-disaggregated serving cluster. Many
// engine-model instances (the library omni-sim runs) in one virtual-time loop, omni-proxy's own
// gateway core in front (on a ManualClock), a trace or a synthetic workload replayed through it;
// prints the same table and writes
// the same JSON as omni-bench, plus an HTML/SVG report.
//
//   omni-cluster --trace ../shared/traces/mooncake_synthetic_trace.jsonl --trace-format mooncake
//       --prefill-instances 4 --decode-instances 2 --policy omni,round-robin,least-tokens
//       --out results.json --report report/
//   omni-cluster --synthetic n=1000000,rate=2000,input=1000,output=200
//       --prefill-instances 500 --decode-instances 500 --max-num-seqs 256
//
// Exit status: 0 success, 2 bad flags or input (the message names the problem), 1 a run error.
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cluster_options.hpp"
#include "omni/benchstat/summary.hpp"
#include "omni/cluster/report.hpp"
#include "omni/cluster/simulator.hpp"
#include "omni/config/cli.hpp"

namespace omni::cluster::app {
namespace {

int fail(const std::string& message) {
  std::cerr << "omni-cluster: " << message << "\n";
  return 2;
}

std::string joined_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) line += ' ';
    line += argv[i];
  }
  return line;
}

int run(int argc, char** argv) {
  Options options;
  CLI::App cli{"omni-cluster: simulate a PD-disaggregated serving cluster in virtual time"};
  add_flags(cli, options);
  if (auto status = omni::config::parse_or_exit(cli, argc, argv)) return *status;
  auto setup = prepare(options);
  if (!setup) return fail(setup.error().message);

  std::unique_ptr<std::ofstream> records;
  if (!options.requests_out.empty()) {
    records = std::make_unique<std::ofstream>(options.requests_out);
    if (!*records) return fail("cannot write " + options.requests_out);
  }

  std::vector<ClusterResult> results;
  std::string json = "[";
  for (const std::string& name : setup->policies) {
    auto source = open_source(options);
    if (!source) return fail(source.error().message);
    if (setup->only_class) {
      (*source)->keep_only(setup->config.classes, setup->config.seed, *setup->only_class);
    }
    auto policy = sched::make_placement_policy(name, policy_settings(options));
    if (!policy) return fail(policy.error().message);
    RecordSink sink;
    if (records) {
      sink = [&records, &name, &setup](const RequestRecord& r) {
        *records << record_line(name, r, setup->config.classes) << '\n';
      };
    }
    const auto started = std::chrono::steady_clock::now();
    auto result = simulate(setup->config, setup->prefill_cost, setup->decode_cost, **source,
                           std::move(*policy), sink);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!result) {
      std::cerr << "omni-cluster: " << result.error().message << "\n";
      return 1;
    }
    if ((*source)->error()) return fail((*source)->error()->message);
    const benchstat::Summary summary = to_summary(*result, setup->slo);
    std::cout << "== policy " << name << " ==\n" << benchstat::format_table(summary);
    std::cout << class_table_text(*result, !setup->slo.empty());
    std::cout << simulator_line(*result, wall) << "\n\n";
    if (json.size() > 1) json += ",";
    json += results_json(*result, summary, config_json(options, *result, wall));
    results.push_back(std::move(*result));
  }
  json += "]";

  if (!options.out.empty()) {
    // One policy: the results object itself (omni-bench's schema); several: an array of them.
    const std::string text = results.size() == 1 ? json.substr(1, json.size() - 2) : json;
    std::ofstream out(options.out);
    out << text << "\n";
    if (!out) return fail("cannot write " + options.out);
    std::cout << "results written to " << options.out << "\n";
  }
  if (!options.report_dir.empty()) {
    ReportInput input{"omni-cluster report", joined_command_line(argc, argv), describe(options),
                      std::move(results)};
    if (auto status = write_report(options.report_dir, input); !status.ok()) {
      std::cerr << "omni-cluster: " << status.error().message << "\n";
      return 1;
    }
    std::cout << "report written to " << options.report_dir << "/report.html\n";
  }
  return 0;
}

}  // namespace
}  // namespace omni::cluster::app

int main(int argc, char** argv) { return omni::cluster::app::run(argc, argv); }
