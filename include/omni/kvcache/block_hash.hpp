// vLLM-exact prefix-cache block hashing (vLLM v1, see docs/kvcache.md and the wire-protocol spec
// §1).
//
// A request's tokens are cut into full blocks of `block_size` tokens; block i is hashed as
//
//   hash(i) = DIGEST( SERIALISE( (parent(i), tuple(tokens of block i), extra_keys(i)) ) )
//
//   NONE_HASH ──► hash(0) ──► hash(1) ──► hash(2) ...   (each hash is the next block's parent)
//
// where SERIALISE is pickle protocol 5 or canonical CBOR and DIGEST is SHA-256 or XXH3-128.
// The bytes fed to the digest are identical to what vLLM's Python produces, so a router can
// predict the hashes an engine will publish in its KV events.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::kvcache {

// vLLM's `--prefix-caching-hash-algo` values.
enum class HashAlgo { kSha256, kSha256Cbor, kXxhash, kXxhashCbor };

// Accepts vLLM's spelling: "sha256", "sha256_cbor", "xxhash", "xxhash_cbor".
Result<HashAlgo> parse_hash_algo(std::string_view name);
std::string_view hash_algo_name(HashAlgo algo) noexcept;
// 32 for the SHA-256 algorithms, 16 for the XXH3-128 ones.
std::size_t digest_size(HashAlgo algo) noexcept;
bool uses_cbor(HashAlgo algo) noexcept;

// A block hash: the raw digest bytes (no heap allocation).
class BlockHash {
 public:
  static constexpr std::size_t kMaxSize = 32;

  BlockHash() = default;
  // Returns an error when `bytes` is empty or longer than kMaxSize.
  static Result<BlockHash> from_bytes(std::span<const std::uint8_t> bytes);
  static Result<BlockHash> from_hex(std::string_view hex);

  std::span<const std::uint8_t> bytes() const noexcept { return {bytes_.data(), size_}; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::string hex() const;

  friend bool operator==(const BlockHash& a, const BlockHash& b) noexcept;

 private:
  std::array<std::uint8_t, kMaxSize> bytes_{};
  std::uint8_t size_ = 0;
};

// A multimodal extra key: (identifier, offset of the item's start relative to the block start).
struct MmExtraKey {
  std::string identifier;
  std::int64_t offset = 0;
  friend bool operator==(const MmExtraKey&, const MmExtraKey&) = default;
};

// One element of a block's extra-keys tuple: a str (LoRA name, cache salt), a multimodal 2-tuple,
// or bytes (the SHA-256 of a block's prompt embeddings).
using ExtraKey = std::variant<std::string, MmExtraKey, std::vector<std::uint8_t>>;

// A block's extra keys. Empty means Python `None` (vLLM never hashes an empty tuple here).
struct ExtraKeys {
  std::vector<ExtraKey> items;
  bool empty() const noexcept { return items.empty(); }
  friend bool operator==(const ExtraKeys&, const ExtraKeys&) = default;
};

// A multimodal item's placeholder range in the token sequence.
struct MmItem {
  std::string identifier;  // the item's hash string (with a LoRA prefix when vLLM adds one)
  std::size_t offset = 0;  // first token of the placeholder
  std::size_t length = 0;  // number of placeholder tokens
};

// What a request contributes to extra keys (vLLM's generate_block_hash_extra_keys).
struct RequestExtraInputs {
  std::optional<std::string> lora_name;   // every block
  std::vector<MmItem> mm_items;           // sorted by offset; blocks they overlap
  std::optional<std::string> cache_salt;  // block 0 only
  bool empty() const noexcept { return !lora_name && mm_items.empty() && !cache_salt; }
};

// The extra keys of the block covering tokens [block_start, block_start + block_size), in vLLM's
// order: LoRA name, overlapping multimodal items, cache salt (block 0 only). Prompt-embedding
// digests are not derived here; append them to the result when a request carries embeddings.
ExtraKeys block_extra_keys(const RequestExtraInputs& inputs, std::size_t block_start,
                           std::size_t block_size);

// NONE_HASH, the parent of block 0, for a given PYTHONHASHSEED value (the digest of the
// serialised Python str `python_hash_seed`). With PYTHONHASHSEED unset vLLM uses random bytes,
// which no one else can reproduce; callers model that with a random BlockHash of their own.
BlockHash none_hash(HashAlgo algo, std::string_view python_hash_seed);

// One block. `parent` is the previous block's hash (or NONE_HASH for block 0). `scratch` is
// reused for the serialised pre-image, so a caller hashing many blocks allocates once.
BlockHash hash_block(HashAlgo algo, const BlockHash& parent, std::span<const std::uint32_t> tokens,
                     const ExtraKeys& extra, std::vector<std::uint8_t>& scratch);
BlockHash hash_block(HashAlgo algo, const BlockHash& parent, std::span<const std::uint32_t> tokens,
                     const ExtraKeys& extra);

// The value a KV event carries for a hash (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1, the default):
// the last 8 bytes of the hash read big-endian.
std::uint64_t event_int(const BlockHash& hash) noexcept;

// Computes the hash chain of a token sequence, incrementally: extend() hashes only the blocks
// completed since the last call, like vLLM does as a request's tokens grow. Not thread-safe.
class BlockHasher {
 public:
  // block_size must be > 0.
  BlockHasher(HashAlgo algo, std::size_t block_size, BlockHash root);

  HashAlgo algo() const noexcept { return algo_; }
  std::size_t block_size() const noexcept { return block_size_; }
  const BlockHash& root() const noexcept { return root_; }

  // Appends to `hashes` the hash of every full block of `tokens` not yet in `hashes`
  // (hashes[i] must be the hash of block i of the same sequence). Trailing partial blocks are
  // left for a later call.
  void extend(std::span<const std::uint32_t> tokens, const RequestExtraInputs& extra,
              std::vector<BlockHash>& hashes);

  // The whole chain of a sequence's full blocks.
  std::vector<BlockHash> hash_all(std::span<const std::uint32_t> tokens,
                                  const RequestExtraInputs& extra = {});

 private:
  HashAlgo algo_;
  std::size_t block_size_;
  BlockHash root_;
  std::vector<std::uint8_t> scratch_;
};

}  // namespace omni::kvcache
