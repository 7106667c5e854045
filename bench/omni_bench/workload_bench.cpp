// omni-workload-bench: how fast the workload library produces requests, against baselines run
// side by side (alternating, median of the rounds):
//   mooncake — the whole Mooncake trace through the lazy reader (JSON parse, id
//              normalisation) vs reading the same bytes line by line with std::getline;
//   synthetic — 1M single-turn requests from a --synthetic spec (lognormal lengths, Poisson
//              arrivals) vs drawing the same number of raw uniforms from SeededRandom;
//   prompt — materialising the token ids of 40,000-token prompts (request_body for
//              /v1/completions) vs std::fill of the same token buffer.
// Prints one JSON object on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "omni/workload/openai_request.hpp"
#include "omni/workload/synthetic.hpp"
#include "omni/workload/trace.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Both sides return a checksum so the compiler cannot drop the work.
std::uint64_t read_lines(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::uint64_t bytes = 0;
  while (std::getline(in, line)) bytes += line.size();
  return bytes;
}

std::uint64_t read_trace(const std::string& path) {
  auto w = omni::workload::open_trace_workload(path, omni::workload::TraceFormat::kMooncake);
  std::uint64_t tokens = 0;
  while (true) {
    auto next = (*w)->next();
    if (!next.ok() || !next->has_value()) break;
    tokens += (**next).input_tokens + (**next).hash_ids.size();
  }
  return tokens;
}

std::uint64_t synthetic(std::uint64_t n) {
  auto spec = *omni::workload::parse_synthetic_spec(
      "n=" + std::to_string(n) + ",rate=100,input=lognormal:2000:1500,output=exp:200");
  auto w = omni::workload::make_synthetic_workload(spec, 1);
  std::uint64_t tokens = 0;
  while (true) {
    auto next = w->next();
    if (!next.ok() || !next->has_value()) break;
    tokens += (**next).input_tokens;
  }
  return tokens;
}

std::uint64_t raw_draws(std::uint64_t n) {
  omni::SeededRandom rng(1);
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < n * 3; ++i) sum += rng.next_u64() >> 60;  // ~3 draws per request
  return sum;
}

std::uint64_t bodies(int count) {
  omni::workload::RequestSpec spec;
  spec.input_tokens = 40000;
  spec.max_output_tokens = 100;
  for (std::uint64_t i = 0; i < omni::workload::blocks_for(spec.input_tokens); ++i)
    spec.hash_ids.push_back(i);
  omni::workload::BodyOptions options;
  std::uint64_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    spec.hash_ids[0] = static_cast<std::uint64_t>(i);
    bytes += omni::workload::request_body(spec, options).size();
  }
  return bytes;
}

std::uint64_t fills(int count) {
  std::vector<std::uint32_t> tokens(40000);
  std::uint64_t sum = 0;
  for (int i = 0; i < count; ++i) {
    std::fill(tokens.begin(), tokens.end(), static_cast<std::uint32_t>(i));
    sum += tokens[static_cast<std::size_t>(i) % tokens.size()];
  }
  return sum;
}

template <class A, class B>
std::pair<double, double> ab(int rounds, A a, B b, std::uint64_t& sink) {
  std::vector<double> ta, tb;
  for (int r = 0; r < rounds; ++r) {
    auto t = Clock::now();
    sink += a();
    ta.push_back(seconds_since(t));
    t = Clock::now();
    sink += b();
    tb.push_back(seconds_since(t));
  }
  return {median(ta), median(tb)};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: omni-workload-bench MOONCAKE_TRACE [ROUNDS]\n");
    return 2;
  }
  const std::string trace = argv[1];
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::uint64_t sink = 0;
  constexpr std::uint64_t kSynthetic = 1'000'000;
  constexpr int kBodies = 200;
  const auto [moon, lines] = ab(
      rounds, [&] { return read_trace(trace); }, [&] { return read_lines(trace); }, sink);
  const auto [syn, draws] = ab(
      rounds, [&] { return synthetic(kSynthetic); }, [&] { return raw_draws(kSynthetic); }, sink);
  const auto [body, fill] = ab(
      rounds, [&] { return bodies(kBodies); }, [&] { return fills(kBodies); }, sink);
  std::printf(
      "{\"rounds\":%d,\"mooncake_s\":%.6f,\"getline_s\":%.6f,\"mooncake_vs_getline\":%.3f,"
      "\"synthetic_1m_s\":%.6f,\"raw_draws_s\":%.6f,\"synthetic_vs_draws\":%.3f,\"synthetic_"
      "requests_per_s\":%.0f,"
      "\"body_40k_ms\":%.4f,\"fill_40k_ms\":%.4f,\"body_vs_fill\":%.3f,\"sink\":%llu}\n",
      rounds, moon, lines, moon / lines, syn, draws, syn / draws, kSynthetic / syn,
      body * 1000 / kBodies, fill * 1000 / kBodies, body / fill,
      static_cast<unsigned long long>(sink % 10));
  return 0;
}
