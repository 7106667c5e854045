// One engine request of omni-serve (a choice of an HTTP request) as the engine loop and the
// model executor see it: its tokens, sampling, stop rules and text, its prefix-cache hash chain,
// its MTP drafts and, for PD, the KV it holds for a decode instance or fetched from a prefill
// instance.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "omni/engine/engine.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "serve/channel.hpp"
#include "serve/sampling.hpp"
#include "serve/text_stream.hpp"

namespace omni::serve {

// A decode instance's fetched KV, waiting for the blocks its request is admitted with.
//   data: [block][layer][page_bytes], blocks first_block .. first_block + blocks - 1 of the
//         prompt; hidden: the prompt's last final (normed) hidden state.
struct StagedKv {
  std::uint32_t first_block = 0;
  std::uint32_t blocks = 0;
  std::uint32_t layers = 0;
  std::size_t page_bytes = 0;
  std::vector<std::byte> data;
  std::vector<float> hidden;
  std::size_t bytes() const { return data.size() + hidden.size() * sizeof(float); }
};

// Where a PD decode request's KV is: the prefill instance's side channel and its blocks.
struct RemoteKv {
  std::string engine_id;
  std::string request_id;  // the hold's key
  std::string host;
  std::uint16_t port = 0;
  std::vector<std::uint32_t> block_ids;  // the prefill instance's blocks, in token order
  std::uint32_t num_tokens = 0;
};

struct Seq {
  Seq(const sim::TextCodec& codec, StopRules rules, std::vector<std::uint32_t> prompt_tokens)
      : prompt(std::move(prompt_tokens)), all(prompt), text(codec, std::move(rules), prompt) {}

  engine::SeqId id = 0;
  std::vector<std::uint32_t> prompt;
  std::vector<std::uint32_t> all;  // prompt + output
  SamplingParams sampling;
  std::vector<std::uint32_t> masked_ids;  // EOS and stop ids, masked before min_tokens
  TextStream text;
  std::shared_ptr<ChoiceChannel> channel;
  std::uint32_t max_tokens_param = 0;

  // Prefix caching: the chain of full-block hashes of `all`; the first `hashes_given` are
  // the engine's.
  kvcache::RequestExtraInputs extra;
  std::vector<kvcache::BlockHash> hashes;
  std::size_t hashes_given = 0;

  // MTP: drafts proposed for the positions after the last known token.
  std::vector<std::uint32_t> drafts;

  // PD prefill side: the hold's key; the prompt's last final hidden state (for the decode
  // instance's first token).
  bool prefill_only = false;
  std::string hold_key;
  std::vector<float> last_hidden;
  // PD decode side: where the KV comes from, and the fetched KV until admission.
  std::optional<RemoteKv> remote;
  std::unique_ptr<StagedKv> staged;
  std::uint64_t staged_bytes = 0;     // of the loop's staging budget, until the KV is imported
  std::uint32_t external_tokens = 0;  // prompt tokens whose KV was transferred

  // This step's results, handed to the engine and the handler.
  std::vector<std::uint32_t> step_tokens;
  std::vector<std::uint64_t> step_hashes;
  std::vector<TokenLogprobs> step_logprobs;
  bool aborted = false;

  // Metrics (seconds on the loop's clock).
  double arrival = 0, first_scheduled = -1, first_token = -1, last_token = -1;

  std::uint32_t output_len() const {
    return static_cast<std::uint32_t>(all.size() - prompt.size());
  }
};

}  // namespace omni::serve
