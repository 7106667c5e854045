// Prefix-index throughput: replays the block streams a gateway would see for the Mooncake trace
// (or a synthetic stand-in) — per request a lookup over every instance, then the BlockStored of
// the chosen instance and the BlockRemoved its LRU eviction causes — and counts operations per
// second of CPU time on one core. Two counts: operations (one block stored or removed, or one
// whole prompt looked up) and block operations (a lookup counts every block it probed).
//
//   omni-prefix-index-bench [TRACE.jsonl] [--instances N] [--rounds R] [--capacity BLOCKS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

#include "omni/cluster/request.hpp"
#include "omni/sched/prefix_index.hpp"
#include "omni/workload/trace.hpp"

namespace {

struct Options {
  std::string trace;
  std::uint32_t instances = 16;
  int rounds = 5;
  std::size_t capacity = 8000;  // blocks of 64 tokens an instance keeps (512k tokens)
};

std::vector<std::vector<std::uint64_t>> load_prompts(const Options& o) {
  std::vector<std::vector<std::uint64_t>> prompts;
  if (!o.trace.empty()) {
    auto w = omni::workload::open_trace_workload(o.trace, omni::workload::TraceFormat::kMooncake);
    if (w) {
      while (true) {
        auto next = (*w)->next();
        if (!next || !*next) break;
        omni::cluster::ClusterRequest r{(*next)->index, 0, (*next)->input_tokens, 1,
                                        (*next)->hash_ids};
        prompts.push_back(omni::cluster::engine_block_hashes(r, 64).value());
      }
    }
  }
  if (prompts.empty()) {  // synthetic: 4,000 prompts of 240 blocks sharing 0-200 leading blocks
    for (std::uint64_t i = 0; i < 4000; ++i) {
      omni::cluster::ClusterRequest r{i, 0, 15360, 1, {}};
      for (std::uint64_t b = 0; b < 30; ++b) r.hash_ids.push_back(b < (i % 25) ? b : i * 100 + b);
      prompts.push_back(omni::cluster::engine_block_hashes(r, 64).value());
    }
  }
  return prompts;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--instances" && i + 1 < argc)
      o.instances = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    else if (arg == "--rounds" && i + 1 < argc)
      o.rounds = std::atoi(argv[++i]);
    else if (arg == "--capacity" && i + 1 < argc)
      o.capacity = static_cast<std::size_t>(std::atol(argv[++i]));
    else
      o.trace = arg;
  }
  const auto prompts = load_prompts(o);
  omni::sched::PrefixIndex index;
  std::vector<std::deque<std::uint64_t>> resident(o.instances);  // each instance's LRU order
  std::uint64_t stored = 0, removed = 0, lookups = 0, matched_blocks = 0, probed_blocks = 0;
  std::vector<std::uint64_t> evict;
  // CPU time of this process: the figure is per core, and a shared machine's other work does not
  // count against it (wall time is printed too).
  const auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  const double cpu_start = cpu_now();
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < o.rounds; ++round) {
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const auto& hashes = prompts[i];
      const auto matches = index.match(hashes, 0.0);
      ++lookups;
      const auto instance = matches.empty() ? static_cast<omni::sched::InstanceId>(i % o.instances)
                                            : matches.front().instance;
      const std::uint32_t hit = matches.empty() ? 0 : matches.front().blocks;
      matched_blocks += hit;
      probed_blocks += std::min<std::uint64_t>(hashes.size(), hit + 1);
      const std::span<const std::uint64_t> fresh(hashes.data() + hit, hashes.size() - hit);
      index.stored(instance, fresh, 0.0);
      stored += fresh.size();
      auto& lru = resident[instance];
      lru.insert(lru.end(), fresh.begin(), fresh.end());
      evict.clear();
      while (lru.size() > o.capacity) {
        evict.push_back(lru.front());
        lru.pop_front();
      }
      index.removed(instance, evict);
      removed += evict.size();
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double seconds = cpu_now() - cpu_start;
  const double ops = static_cast<double>(stored + removed + lookups);
  // Block-level work: every block stored or removed, and every block a lookup probed.
  const double block_ops = static_cast<double>(stored + removed + probed_blocks);
  const auto stats = index.stats();
  std::printf(
      "{\"prompts\": %zu, \"instances\": %u, \"rounds\": %d, \"lookups\": %llu, "
      "\"blocks_stored\": %llu, \"blocks_removed\": %llu, \"cpu_seconds\": %.3f, "
      "\"wall_seconds\": %.3f, "
      "\"ops_per_second\": %.0f, \"block_ops_per_second\": %.0f, \"lookups_per_second\": %.0f, "
      "\"mean_matched_blocks\": %.1f, "
      "\"index_entries\": %zu, \"index_bytes\": %zu}\n",
      prompts.size(), o.instances, o.rounds, static_cast<unsigned long long>(lookups),
      static_cast<unsigned long long>(stored), static_cast<unsigned long long>(removed), seconds,
      wall, ops / seconds, block_ops / seconds, static_cast<double>(lookups) / seconds,
      static_cast<double>(matched_blocks) / static_cast<double>(lookups), stats.entries,
      stats.memory_bytes);
  return 0;
}
