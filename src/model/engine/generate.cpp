#include "omni/model/generate.hpp"

#include <chrono>
#include <cmath>

namespace omni::model {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t x = (s += 0x9E3779B97F4A7C15ULL);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

double GenerateStats::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0.0;
}
double GenerateStats::decode_tokens_per_second() const {
  return decode_seconds > 0 ? (output_tokens - 1) / decode_seconds : 0.0;
}

Session::Session(Engine& engine, GenerateOptions options)
    : engine_(engine), options_(options), rng_(options.seed * 0x2545F4914F6CDD1DULL + 7) {}

std::int32_t Session::pick(std::span<const float> logits) {
  const int V = engine_.config().vocab_size;
  const auto row = logits.last(static_cast<std::size_t>(V));
  if (options_.temperature <= 0.0) {
    return static_cast<std::int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  }
  const float mx = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (const float v : row) sum += std::exp((v - mx) / options_.temperature);
  double u = static_cast<double>(splitmix(rng_) >> 11) * (1.0 / 9007199254740992.0) * sum;
  for (int i = 0; i < V; ++i) {
    u -= std::exp((row[static_cast<std::size_t>(i)] - mx) / options_.temperature);
    if (u <= 0.0) return i;
  }
  return V - 1;
}

void Session::accept(std::int32_t token) {
  output_.push_back(token);
  tokens_.push_back(token);
  stats_.output_tokens = static_cast<int>(output_.size());
  if (!options_.ignore_eos && options_.eos_token_id && token == *options_.eos_token_id) {
    done_ = true;
    finish_ = "stop";
  } else if (static_cast<int>(output_.size()) >= options_.max_tokens) {
    done_ = true;
    finish_ = "length";
  }
}

Result<std::int32_t> Session::prefill(std::span<const std::int32_t> prompt) {
  if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "the prompt is empty");
  if (options_.max_tokens < 1)
    return make_error(ErrorCode::kInvalidArgument, "max_tokens must be >= 1");
  const auto& cache = engine_.cache();
  const long need = static_cast<long>(prompt.size()) + options_.max_tokens;
  const long have = static_cast<long>(cache.num_pages()) * cache.page_size();
  if (need > have) {
    return make_error(ErrorCode::kInvalidArgument, "prompt + max_tokens = " + std::to_string(need) +
                                                       " tokens exceed the cache (" +
                                                       std::to_string(have) + ")");
  }
  pages_.resize(static_cast<std::size_t>((need + cache.page_size() - 1) / cache.page_size()));
  for (std::size_t i = 0; i < pages_.size(); ++i) pages_[i] = static_cast<std::int32_t>(i);
  tokens_.assign(prompt.begin(), prompt.end());
  stats_.prompt_tokens = static_cast<int>(prompt.size());
  const auto start = Clock::now();
  SequenceStep step{tokens_, 0, pages_, 1};
  auto out = engine_.forward(std::span(&step, 1));
  if (!out) return std::move(out).error();
  last_logits_ = out->logits;
  const std::int32_t token = pick(out->logits);
  stats_.prefill_seconds = since(start);
  accept(token);
  return token;
}

Result<std::int32_t> Session::next() {
  if (done_) return make_error(ErrorCode::kInvalidArgument, "the generation is done");
  const auto start = Clock::now();
  const int pos = static_cast<int>(tokens_.size()) - 1;
  SequenceStep step{std::span(tokens_).subspan(static_cast<std::size_t>(pos), 1), pos, pages_, 1};
  auto out = engine_.forward(std::span(&step, 1));
  if (!out) return std::move(out).error();
  last_logits_ = out->logits;
  const std::int32_t token = pick(out->logits);
  stats_.decode_seconds += since(start);
  accept(token);
  return token;
}

Result<std::vector<double>> prompt_logprobs(Engine& engine, std::span<const std::int32_t> tokens) {
  const auto& cache = engine.cache();
  std::vector<std::int32_t> pages(static_cast<std::size_t>(
      (static_cast<int>(tokens.size()) + cache.page_size() - 1) / cache.page_size()));
  if (static_cast<int>(pages.size()) > cache.num_pages()) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt exceeds the cache");
  }
  for (std::size_t i = 0; i < pages.size(); ++i) pages[i] = static_cast<std::int32_t>(i);
  SequenceStep step{tokens, 0, pages, -1};
  auto out = engine.forward(std::span(&step, 1));
  if (!out) return std::move(out).error();
  const auto V = static_cast<std::size_t>(engine.config().vocab_size);
  std::vector<double> lp(out->logits.begin(), out->logits.end());
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    double mx = -INFINITY, sum = 0.0;
    for (std::size_t i = 0; i < V; ++i) mx = std::max(mx, lp[r * V + i]);
    for (std::size_t i = 0; i < V; ++i) sum += std::exp(lp[r * V + i] - mx);
    const double lse = mx + std::log(sum);
    for (std::size_t i = 0; i < V; ++i) lp[r * V + i] -= lse;
  }
  return lp;
}

}  // namespace omni::model
