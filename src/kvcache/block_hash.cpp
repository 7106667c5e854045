// Digests, NONE_HASH and the KV-event integer form of vLLM block hashes (spec §1.1, §1.5, §1.7).
#include "omni/kvcache/block_hash.hpp"

#include <openssl/sha.h>
#include <xxhash.h>

#include <algorithm>
#include <array>

#include "omni/kvcache/preimage.hpp"

namespace omni::kvcache {
namespace {

struct AlgoName {
  HashAlgo algo;
  std::string_view name;
};
constexpr std::array<AlgoName, 4> kAlgoNames = {{
    {HashAlgo::kSha256, "sha256"},
    {HashAlgo::kSha256Cbor, "sha256_cbor"},
    {HashAlgo::kXxhash, "xxhash"},
    {HashAlgo::kXxhashCbor, "xxhash_cbor"},
}};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

BlockHash digest(HashAlgo algo, std::span<const std::uint8_t> preimage) {
  std::array<std::uint8_t, BlockHash::kMaxSize> out{};
  std::size_t size = 0;
  if (algo == HashAlgo::kSha256 || algo == HashAlgo::kSha256Cbor) {
    SHA256(preimage.data(), preimage.size(), out.data());
    size = SHA256_DIGEST_LENGTH;
  } else {
    // XXH128_canonicalFromHash writes high64 then low64, both big-endian, like
    // python-xxhash's xxh3_128_digest().
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits(preimage.data(), preimage.size()));
    std::copy(std::begin(canonical.digest), std::end(canonical.digest), out.begin());
    size = sizeof(canonical.digest);
  }
  auto hash = BlockHash::from_bytes({out.data(), size});
  assert(hash.ok());
  return std::move(hash).value();
}

}  // namespace

Result<HashAlgo> parse_hash_algo(std::string_view name) {
  for (const AlgoName& entry : kAlgoNames) {
    if (entry.name == name) return entry.algo;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown prefix-caching hash algorithm '" + std::string(name) +
                        "' (expected sha256, sha256_cbor, xxhash or xxhash_cbor)");
}

std::string_view hash_algo_name(HashAlgo algo) noexcept {
  for (const AlgoName& entry : kAlgoNames) {
    if (entry.algo == algo) return entry.name;
  }
  return "unknown";
}

std::size_t digest_size(HashAlgo algo) noexcept {
  return (algo == HashAlgo::kSha256 || algo == HashAlgo::kSha256Cbor) ? 32 : 16;
}

bool uses_cbor(HashAlgo algo) noexcept {
  return algo == HashAlgo::kSha256Cbor || algo == HashAlgo::kXxhashCbor;
}

Result<BlockHash> BlockHash::from_bytes(std::span<const std::uint8_t> bytes) {
  if (bytes.empty() || bytes.size() > kMaxSize) {
    return make_error(ErrorCode::kInvalidArgument, "block hash must be 1.." +
                                                       std::to_string(kMaxSize) + " bytes, got " +
                                                       std::to_string(bytes.size()));
  }
  BlockHash hash;
  std::copy(bytes.begin(), bytes.end(), hash.bytes_.begin());
  hash.size_ = static_cast<std::uint8_t>(bytes.size());
  return hash;
}

Result<BlockHash> BlockHash::from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0 || hex.size() / 2 > kMaxSize) {
    return make_error(ErrorCode::kInvalidArgument, "bad block hash hex length");
  }
  std::array<std::uint8_t, kMaxSize> raw{};
  for (std::size_t i = 0; i < hex.size() / 2; ++i) {
    const int hi = hex_digit(hex[2 * i]);
    const int lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return make_error(ErrorCode::kInvalidArgument, "bad hex digit");
    raw[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return from_bytes({raw.data(), hex.size() / 2});
}

std::string BlockHash::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size_);
  for (std::size_t i = 0; i < size_; ++i) {
    out.push_back(kDigits[bytes_[i] >> 4]);
    out.push_back(kDigits[bytes_[i] & 0x0f]);
  }
  return out;
}

bool operator==(const BlockHash& a, const BlockHash& b) noexcept {
  return a.size_ == b.size_ &&
         std::equal(a.bytes_.begin(), a.bytes_.begin() + a.size_, b.bytes_.begin());
}

void block_preimage(HashAlgo algo, std::span<const std::uint8_t> parent,
                    std::span<const std::uint32_t> tokens, const ExtraKeys& extra,
                    std::vector<std::uint8_t>& out) {
  if (uses_cbor(algo)) {
    cbor_block_preimage(parent, tokens, extra, out);
  } else {
    pickle_block_preimage(parent, tokens, extra, out);
  }
}

BlockHash none_hash(HashAlgo algo, std::string_view python_hash_seed) {
  std::vector<std::uint8_t> preimage;
  if (uses_cbor(algo)) {
    cbor_str_preimage(python_hash_seed, preimage);
  } else {
    pickle_str_preimage(python_hash_seed, preimage);
  }
  return digest(algo, preimage);
}

BlockHash hash_block(HashAlgo algo, const BlockHash& parent, std::span<const std::uint32_t> tokens,
                     const ExtraKeys& extra, std::vector<std::uint8_t>& scratch) {
  block_preimage(algo, parent.bytes(), tokens, extra, scratch);
  return digest(algo, scratch);
}

BlockHash hash_block(HashAlgo algo, const BlockHash& parent, std::span<const std::uint32_t> tokens,
                     const ExtraKeys& extra) {
  std::vector<std::uint8_t> scratch;
  return hash_block(algo, parent, tokens, extra, scratch);
}

std::uint64_t event_int(const BlockHash& hash) noexcept {
  // int.from_bytes(hash, "big") & (2**64 - 1): the last (up to) 8 bytes, big-endian.
  const auto bytes = hash.bytes();
  const std::size_t start = bytes.size() > 8 ? bytes.size() - 8 : 0;
  std::uint64_t value = 0;
  for (std::size_t i = start; i < bytes.size(); ++i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace omni::kvcache
