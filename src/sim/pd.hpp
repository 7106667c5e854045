// PD disaggregation as vLLM's NixlConnector exposes it to a router (spec §5.1): what a
// request's kv_transfer_params ask for, and the params a prefill instance returns. Pure.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sim/api_error.hpp"

namespace omni::sim {

enum class PdMode {
  kNone,           // an ordinary request
  kPrefillOnly,    // do_remote_decode: run prefill, hold the KV, return params
  kRemotePrefill,  // do_remote_prefill: pull the KV from the prefill instance, then decode
};

struct RemotePrefill {
  std::string engine_id;
  std::string request_id;  // remote_request_id
  std::string host;
  std::uint16_t port = 0;
  std::uint64_t num_blocks = 0;
  std::optional<std::uint64_t> num_tokens;  // remote_num_tokens
};

struct PdRequest {
  PdMode mode = PdMode::kNone;
  RemotePrefill remote;  // kRemotePrefill only
};

// Both booleans false (or the object absent) is kNone. do_remote_prefill with a missing or
// mistyped field, or an empty remote_block_ids, is a 400 naming the field: omni-sim never
// silently recomputes on params it cannot use.
std::variant<PdRequest, ApiError> parse_pd_request(
    const std::optional<boost::json::object>& kv_transfer_params);

// What the prefill instance answers in the response's top-level kv_transfer_params.
struct PrefillParams {
  std::vector<std::uint64_t> block_ids;  // one KV-cache group
  std::string engine_id;
  std::string request_id;
  std::string host;
  std::uint16_t port = 0;
  std::uint32_t tp_size = 1;
  std::uint32_t num_tokens = 0;
};
std::string format_prefill_params(const PrefillParams& p);

}  // namespace omni::sim
