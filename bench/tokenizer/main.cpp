// omni-tokenizer-bench MODEL CORPUS.jsonl: one process = one measured round (bench/tokenizer/run.sh
// alternates it with the Hugging Face script, hf_bench.mjs, and takes medians). Prints JSON:
//   encode:    every document encoded once, one thread, after one warm-up pass (warm word cache,
//              as Hugging Face's BPE cache is warm in its run);
//   multiturn: documents grouped into conversations of TURNS turns; each turn re-encodes the whole
//              conversation so far, with full encodes and with the prefix cache.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "omni/tokenizer/tokenizer.hpp"

namespace {

constexpr std::size_t kTurns = 8;

// Wall time and this process's CPU time (user + system): on a loaded shared machine the CPU time
// is the steadier figure; run.sh reports ratios of both.
struct Stopwatch {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = cpu_now();
  static double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  double wall_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double cpu_s() const { return cpu_now() - cpu; }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: omni-tokenizer-bench MODEL CORPUS.jsonl\n";
    return 2;
  }
  auto loaded = omni::tokenizer::Tokenizer::load(argv[1]);
  if (!loaded.ok()) {
    std::cerr << loaded.error().to_string() << "\n";
    return 1;
  }
  std::vector<std::string> docs;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) docs.emplace_back(boost::json::parse(line).at("text").as_string());
  }
  std::size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();

  omni::tokenizer::Encoder encoder(*loaded);
  std::size_t tokens = 0;
  for (const auto& d : docs) tokens += encoder.encode(d)->size();  // warm-up
  Stopwatch watch;
  tokens = 0;
  for (const auto& d : docs) tokens += encoder.encode(d)->size();
  const double encode_s = watch.wall_s();
  const double encode_cpu_s = watch.cpu_s();

  // Multi-turn: conversations of kTurns documents, re-encoded whole at every turn.
  std::vector<std::string> prompts;
  std::string conversation;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    conversation = i % kTurns == 0 ? docs[i] : conversation + docs[i];
    prompts.push_back(conversation);
  }
  std::size_t prompt_bytes = 0;
  for (const auto& p : prompts) prompt_bytes += p.size();
  watch = Stopwatch{};
  std::size_t full_tokens = 0;
  for (const auto& p : prompts) full_tokens += encoder.encode(p)->size();
  const double multiturn_full_s = watch.wall_s();
  const double multiturn_full_cpu_s = watch.cpu_s();
  omni::tokenizer::Encoder cached(*loaded);
  for (const auto& d : docs) (void)cached.encode(d);  // the same warm word cache as `encoder`
  watch = Stopwatch{};
  std::size_t cached_tokens = 0;
  for (const auto& p : prompts) cached_tokens += cached.encode_incremental(p)->size();
  const double multiturn_cached_s = watch.wall_s();
  const double multiturn_cached_cpu_s = watch.cpu_s();
  if (cached_tokens != full_tokens) {
    std::cerr << "prefix-cached token count differs from full encodes\n";
    return 1;
  }
  std::printf(
      "{\"impl\": \"omni\", \"bytes\": %zu, \"tokens\": %zu, \"encode_s\": %.6f, \"prompt_bytes\": "
      "%zu, "
      "\"prompt_tokens\": %zu, \"multiturn_full_s\": %.6f, \"multiturn_cached_s\": %.6f, "
      "\"encode_cpu_s\": %.6f, "
      "\"multiturn_full_cpu_s\": %.6f, \"multiturn_cached_cpu_s\": %.6f}\n",
      bytes, tokens, encode_s, prompt_bytes, full_tokens, multiturn_full_s, multiturn_cached_s,
      encode_cpu_s, multiturn_full_cpu_s, multiturn_cached_cpu_s);
  return 0;
}
