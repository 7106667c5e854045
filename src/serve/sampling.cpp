#include "serve/sampling.hpp"

#include "omni/model/vector_math.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <unordered_map>

namespace omni::serve {
namespace json = boost::json;
namespace {

std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Python's repr of a float as vLLM prints it in messages ("1.5", "-0.1", "2.0").
std::string py_float(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v)) + ".0";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // The shortest representation that reads back the same value.
  for (int p = 1; p <= 17; ++p) {
    char t[32];
    std::snprintf(t, sizeof t, "%.*g", p, v);
    if (std::strtod(t, nullptr) == v) return t;
  }
  return buf;
}

struct Reader {
  const json::object& o;
  std::optional<sim::ApiError> error;

  const json::value* get(std::string_view key) const {
    auto it = o.find(key);
    if (it == o.end() || it->value().is_null()) return nullptr;
    return &it->value();
  }
  bool number(std::string_view key, double& out) {
    const json::value* v = get(key);
    if (!v) return true;
    if (!v->is_number()) {
      error = sim::validation_error("Input should be a valid number", std::string(key));
      return false;
    }
    out = v->to_number<double>();
    return true;
  }
  bool integer(std::string_view key, std::optional<std::int64_t>& out) {
    const json::value* v = get(key);
    if (!v) return true;
    if (v->is_int64()) {
      out = v->get_int64();
    } else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
      out = static_cast<std::int64_t>(v->get_uint64());
    } else if (v->is_double() && std::floor(v->get_double()) == v->get_double() &&
               std::fabs(v->get_double()) < 9e18) {
      out = static_cast<std::int64_t>(v->get_double());
    } else {
      error = sim::validation_error("Input should be a valid integer", std::string(key));
      return false;
    }
    return true;
  }
  bool fail(std::string message, std::string param) {
    error = sim::bad_request(std::move(message), std::move(param));
    return false;
  }
};

bool read_logprobs(Reader& r, bool chat, SamplingParams& p) {
  if (!chat) {
    std::optional<std::int64_t> k;
    if (!r.integer("logprobs", k)) return false;
    if (!k) return true;
    if (*k < 0)
      return r.fail("logprobs must be non-negative, got " + std::to_string(*k) + ".", "logprobs");
    if (*k > kMaxLogprobs) {
      return r.fail("Requested sample logprobs of " + std::to_string(*k) +
                        ", which is greater than max allowed: " + std::to_string(kMaxLogprobs),
                    "logprobs");
    }
    p.logprobs = static_cast<int>(*k);
    return true;
  }
  bool want = false;
  if (const json::value* v = r.get("logprobs")) {
    if (!v->is_bool()) {
      r.error = sim::validation_error("Input should be a valid boolean", "logprobs");
      return false;
    }
    want = v->get_bool();
  }
  std::optional<std::int64_t> top;
  if (!r.integer("top_logprobs", top)) return false;
  if (top && *top < 0) return r.fail("`top_logprobs` must be a positive value.", "top_logprobs");
  if (top && *top > 0 && !want) {
    return r.fail("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs");
  }
  if (top && *top > kMaxLogprobs) {
    return r.fail("Requested sample logprobs of " + std::to_string(*top) +
                      ", which is greater than max allowed: " + std::to_string(kMaxLogprobs),
                  "top_logprobs");
  }
  if (want) p.logprobs = static_cast<int>(top.value_or(0));
  return true;
}

}  // namespace

std::variant<SamplingParams, sim::ApiError> parse_sampling(const json::object& body, bool chat) {
  SamplingParams p;
  Reader r{body, std::nullopt};
  std::optional<std::int64_t> top_k, seed;
  const bool read = r.number("temperature", p.temperature) && r.number("top_p", p.top_p) &&
                    r.integer("top_k", top_k) && r.number("min_p", p.min_p) &&
                    r.number("presence_penalty", p.presence_penalty) &&
                    r.number("frequency_penalty", p.frequency_penalty) &&
                    r.number("repetition_penalty", p.repetition_penalty) &&
                    r.integer("seed", seed) && read_logprobs(r, chat, p);
  if (!read) return *r.error;
  if (!(p.temperature >= 0.0) || !std::isfinite(p.temperature)) {
    return sim::bad_request(
        "temperature must be non-negative, got " + py_float(p.temperature) + ".", "temperature");
  }
  if (!(p.top_p > 0.0 && p.top_p <= 1.0)) {
    return sim::bad_request("top_p must be in (0, 1], got " + py_float(p.top_p) + ".", "top_p");
  }
  if (top_k && (*top_k < -1 || *top_k > std::numeric_limits<int>::max())) {
    return sim::bad_request(
        "top_k must be 0 (disable), or at least 1, got " + std::to_string(*top_k) + ".", "top_k");
  }
  p.top_k = top_k && *top_k > 0 ? static_cast<int>(*top_k) : 0;
  if (!(p.min_p >= 0.0 && p.min_p <= 1.0)) {
    return sim::bad_request("min_p must be in [0, 1], got " + py_float(p.min_p) + ".", "min_p");
  }
  if (!(p.presence_penalty >= -2.0 && p.presence_penalty <= 2.0)) {
    return sim::bad_request(
        "presence_penalty must be in [-2, 2], got " + py_float(p.presence_penalty) + ".",
        "presence_penalty");
  }
  if (!(p.frequency_penalty >= -2.0 && p.frequency_penalty <= 2.0)) {
    return sim::bad_request(
        "frequency_penalty must be in [-2, 2], got " + py_float(p.frequency_penalty) + ".",
        "frequency_penalty");
  }
  if (!(p.repetition_penalty > 0.0 && p.repetition_penalty <= 2.0)) {
    return sim::bad_request(
        "repetition_penalty must be in (0, 2], got " + py_float(p.repetition_penalty) + ".",
        "repetition_penalty");
  }
  if (seed) {
    p.seed = static_cast<std::uint64_t>(*seed);
    p.seeded = true;
  } else {
    p.seed = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  }
  return p;
}

double Sampler::uniform(std::uint64_t seed, std::uint64_t position,
                        std::uint64_t purpose) noexcept {
  const std::uint64_t h = mix(mix(seed ^ 0x5a4d504c45ULL) ^ mix(position * 0x9e37 + purpose));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

void Sampler::build(std::span<const float> logits, const SamplingParams& params,
                    const SamplingContext& ctx) {
  const std::size_t V = logits.size();
  row_.assign(logits.begin(), logits.end());
  if (params.penalized()) {
    if (params.repetition_penalty != 1.0) {
      const auto rp = static_cast<float>(params.repetition_penalty);
      auto penalize = [&](std::uint32_t t) {
        if (t >= V) return;
        float& l = row_[t];
        l = l > 0 ? l / rp : l * rp;
      };
      // Each seen token once (a set of the prompt and the output).
      order_.clear();
      order_.insert(order_.end(), ctx.prompt.begin(), ctx.prompt.end());
      order_.insert(order_.end(), ctx.output.begin(), ctx.output.end());
      std::sort(order_.begin(), order_.end());
      order_.erase(std::unique(order_.begin(), order_.end()), order_.end());
      for (const std::uint32_t t : order_) penalize(t);
    }
    if (params.presence_penalty != 0.0 || params.frequency_penalty != 0.0) {
      std::unordered_map<std::uint32_t, int> counts;
      for (const std::uint32_t t : ctx.output) ++counts[t];
      for (const auto& [t, n] : counts) {
        if (t >= V) continue;
        row_[t] -= static_cast<float>(params.frequency_penalty * n + params.presence_penalty);
      }
    }
  }
  if (ctx.output.size() < ctx.min_tokens) {
    for (const std::uint32_t t : ctx.stop_ids) {
      if (t < V) row_[t] = -std::numeric_limits<float>::infinity();
    }
  }
  if (params.greedy()) return;
  const auto inv_t = static_cast<float>(1.0 / params.temperature);
  float mx = -std::numeric_limits<float>::infinity();
  for (float& l : row_) {
    l *= inv_t;
    mx = std::max(mx, l);
  }
  p_.resize(V);
  const double mass = model::exp_sum(row_, mx, p_);  // max prob = 1
  const bool truncated = params.min_p > 0.0 || params.top_k > 0 || params.top_p < 1.0;
  if (!truncated) {
    all_ = true;
    sum_ = mass;
    return;
  }
  // Candidates: min_p first (p >= min_p * p_max, p_max = 1 here), then top_k (the k largest,
  // ties kept), then top_p (the most likely tokens until their mass reaches top_p).
  all_ = false;
  ids_.clear();
  const auto floor_p = static_cast<float>(params.min_p);
  for (std::uint32_t i = 0; i < V; ++i) {
    if (p_[i] > 0.0f && p_[i] >= floor_p) ids_.push_back(i);
  }
  if (params.top_k > 0 && ids_.size() > static_cast<std::size_t>(params.top_k)) {
    order_.assign(ids_.begin(), ids_.end());
    auto kth = order_.begin() + (params.top_k - 1);
    std::nth_element(order_.begin(), kth, order_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return p_[a] > p_[b]; });
    const float cut = p_[*kth];
    std::erase_if(ids_, [&](std::uint32_t i) { return p_[i] < cut; });
  }
  if (params.top_p < 1.0) {
    double total = 0.0;
    for (const std::uint32_t i : ids_) total += p_[i];
    std::sort(ids_.begin(), ids_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return p_[a] != p_[b] ? p_[a] > p_[b] : a < b;
    });
    // vLLM drops the least likely tokens whose cumulative mass is <= 1 - top_p (and always
    // keeps the most likely one).
    double tail = 0.0;
    std::size_t keep = ids_.size();
    const double drop = (1.0 - params.top_p) * total;
    for (std::size_t j = ids_.size(); j > 1; --j) {
      if (tail + p_[ids_[j - 1]] > drop) break;
      tail += p_[ids_[j - 1]];
      keep = j - 1;
    }
    ids_.resize(keep);
  }
  std::sort(ids_.begin(), ids_.end());
  sum_ = 0.0;
  for (const std::uint32_t i : ids_) sum_ += p_[i];
}

std::uint32_t Sampler::argmax() const {
  return static_cast<std::uint32_t>(std::max_element(row_.begin(), row_.end()) - row_.begin());
}

// Inverse CDF over the candidates in id order; `exclude` (>= 0) removed from the mass.
std::uint32_t Sampler::draw(double u, std::int64_t exclude) const {
  double total = sum_;
  if (exclude >= 0) total -= prob(static_cast<std::uint32_t>(exclude)) * sum_;
  double target = u * total;
  std::uint32_t last = 0;
  auto visit = [&](std::uint32_t id) -> bool {
    if (static_cast<std::int64_t>(id) == exclude) return false;
    const float v = p_[id];
    if (v <= 0.0f) return false;
    last = id;
    target -= v;
    return target < 0.0;
  };
  if (all_) {
    for (std::uint32_t i = 0; i < p_.size(); ++i) {
      if (visit(i)) return i;
    }
  } else {
    for (const std::uint32_t i : ids_) {
      if (visit(i)) return i;
    }
  }
  return last;  // rounding left a sliver of mass: the last candidate
}

double Sampler::prob(std::uint32_t token) const {
  if (token >= p_.size() || sum_ <= 0.0) return 0.0;
  if (!all_ && !std::binary_search(ids_.begin(), ids_.end(), token)) return 0.0;
  return p_[token] / sum_;
}

std::uint32_t Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                              const SamplingContext& ctx, std::uint64_t position) {
  build(logits, params, ctx);
  if (params.greedy()) return argmax();
  return draw(uniform(params.seed, position, 1), -1);
}

bool Sampler::verify(std::span<const float> logits, const SamplingParams& params,
                     const SamplingContext& ctx, std::uint64_t position, std::uint32_t draft,
                     std::uint32_t& replacement) {
  build(logits, params, ctx);
  if (params.greedy()) {
    replacement = argmax();
    return replacement == draft;
  }
  const double p = prob(draft);
  if (uniform(params.seed, position, 2) < p) return true;
  replacement = p >= 1.0 ? draft : draw(uniform(params.seed, position, 3), draft);
  return false;
}

TokenLogprobs Sampler::logprobs(std::span<const float> logits, std::uint32_t token, int k) {
  TokenLogprobs out;
  float mx = -std::numeric_limits<float>::infinity();
  for (const float l : logits) mx = std::max(mx, l);
  scratch_.resize(logits.size());
  const double lse = mx + std::log(model::exp_sum(logits, mx, scratch_));
  if (token < logits.size()) out.logprob = static_cast<float>(logits[token] - lse);
  if (k <= 0) return out;
  order_.resize(logits.size());
  for (std::uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  const auto n = std::min<std::size_t>(static_cast<std::size_t>(k), order_.size());
  std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n), order_.end(),
                    [&](std::uint32_t a, std::uint32_t b) {
                      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
                    });
  for (std::size_t j = 0; j < n; ++j) {
    out.top.push_back({order_[j], static_cast<float>(logits[order_[j]] - lse)});
  }
  return out;
}

}  // namespace omni::serve
