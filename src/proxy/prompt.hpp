// Tokenize once, in the proxy (issue 5, innovation 4): the prompt's exact token count and its
// KV block hashes, computed by the I/O worker that parsed the request, so the scheduler can
// look the prompt up in its prefix index and the engine can be sent token ids.
//
//   body ──scan_object──▶ "prompt" (text | token ids | a batch of one), "cache_salt"
//     text ──tokenizer (same tokenizer.json as the engine, no special tokens, as omni-sim)──▶ ids
//     ids ──kvcache::BlockHasher(algo, block size, NONE_HASH from the hash seed)──▶ event_int()
//
// The hashes equal the engine's only when every input equals the engine's: the tokenizer, the
// block size, --prefix-caching-hash-algo and PYTHONHASHSEED (the proxy's --hash-seed). A chat
// body read here gets a token count only (a plain role rendering, not the engine's template:
// hashes of a guessed rendering would attract traffic for nothing); with --chat-to-completions
// the chat bridge renders the real template and reads the resulting ids as a completions prompt.
//
// Threading: a PromptReader is immutable after create() and shared by every I/O thread; each
// thread keeps its own tokenizer Encoder (word cache).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "omni/proxy/rewrite.hpp"
#include "omni/tokenizer/tokenizer.hpp"

namespace omni::proxy {

struct PromptOptions {
  std::optional<std::string> tokenizer;  // tokenizer.json or a model directory; none: ids only
  std::uint32_t block_size = 16;
  std::string hash_algo = "sha256";
  // The engines' PYTHONHASHSEED; none: this process's $PYTHONHASHSEED, else a random root
  // (then only the proxy's own predictions match, never the engines' events).
  std::optional<std::string> hash_seed;
};

struct PromptInfo {
  std::optional<std::uint64_t> tokens;      // exact; nullopt: unknown (keep the byte estimate)
  std::vector<std::uint64_t> block_hashes;  // full blocks only, KV-event form
  std::vector<std::uint32_t> text_ids;      // the ids of a text prompt (for --send-token-ids)
};

class PromptReader {
 public:
  static Result<std::unique_ptr<PromptReader>> create(const PromptOptions& options);

  // Never fails: what cannot be read (a batch, a malformed field, no tokenizer) stays unknown.
  PromptInfo read(std::string_view body, Api api) const;
  // The same for a body already known to be one valid JSON object (inspect_request accepted
  // it, or the proxy built it): no second validating pass on the hot path.
  PromptInfo read_valid(std::string_view object, Api api) const;

  bool has_tokenizer() const noexcept { return tokenizer_ != nullptr; }
  // The tokenizer loaded from --tokenizer (null without one), for others that need the same.
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer() const noexcept { return tokenizer_; }
  const kvcache::BlockHash& root() const noexcept { return root_; }

 private:
  PromptInfo read_members(const std::vector<JsonMember>& members, Api api) const;
  PromptReader(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, std::uint32_t block_size,
               kvcache::HashAlgo algo, kvcache::BlockHash root);
  std::optional<std::vector<std::uint32_t>> encode(std::string_view text) const;
  std::vector<std::uint64_t> hashes(const std::vector<std::uint32_t>& ids,
                                    std::optional<std::string> cache_salt) const;

  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::uint32_t block_size_;
  kvcache::HashAlgo algo_;
  kvcache::BlockHash root_;
};

}  // namespace omni::proxy
