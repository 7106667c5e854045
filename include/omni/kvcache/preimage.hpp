// The exact bytes vLLM feeds to the digest (spec §1.6): pickle protocol 5 or canonical CBOR of
// the 3-tuple (parent_bytes, tuple(tokens), extra_keys or None), and of a bare str (NONE_HASH).
// Exposed so tests can compare pre-images byte-for-byte with the golden vectors.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "omni/kvcache/block_hash.hpp"

namespace omni::kvcache {

// Replace `out` with the serialised block tuple (the capacity of `out` is reused).
void pickle_block_preimage(std::span<const std::uint8_t> parent,
                           std::span<const std::uint32_t> tokens, const ExtraKeys& extra,
                           std::vector<std::uint8_t>& out);
void cbor_block_preimage(std::span<const std::uint8_t> parent,
                         std::span<const std::uint32_t> tokens, const ExtraKeys& extra,
                         std::vector<std::uint8_t>& out);

// Replace `out` with the serialised Python str `text` (UTF-8).
void pickle_str_preimage(std::string_view text, std::vector<std::uint8_t>& out);
void cbor_str_preimage(std::string_view text, std::vector<std::uint8_t>& out);

// Dispatch on the algorithm's serialiser.
void block_preimage(HashAlgo algo, std::span<const std::uint8_t> parent,
                    std::span<const std::uint32_t> tokens, const ExtraKeys& extra,
                    std::vector<std::uint8_t>& out);

}  // namespace omni::kvcache
