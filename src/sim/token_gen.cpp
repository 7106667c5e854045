#include "sim/token_gen.hpp"

namespace omni::sim {
namespace {

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view text) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

TokenGenerator::TokenGenerator(std::uint64_t seed, std::string_view request_id,
                               const TextCodec& codec)
    : key_(splitmix64(seed) ^ fnv1a(request_id)), codec_(codec) {}

std::uint32_t TokenGenerator::at(std::uint32_t i) const noexcept {
  const auto choices = codec_.generatable();
  if (choices.empty()) return 0;
  return choices[splitmix64(key_ + i) % choices.size()];
}

std::vector<std::uint32_t> TokenGenerator::range(std::uint32_t from, std::uint32_t to) const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = from; i < to; ++i) out.push_back(at(i));
  return out;
}

}  // namespace omni::sim
