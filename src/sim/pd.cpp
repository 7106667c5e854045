#include "sim/pd.hpp"

#include <boost/json/value.hpp>

#include "sim/response.hpp"

namespace omni::sim {
namespace json = boost::json;
namespace {

bool flag(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_bool() && it->value().get_bool();
}

ApiError invalid(const std::string& why) {
  return bad_request("invalid kv_transfer_params: " + why, "kv_transfer_params");
}

std::optional<std::string> text(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return std::nullopt;
  return std::string(it->value().get_string());
}

// remote_block_ids: a list per KV-cache group (current) or a flat list (older servers).
std::optional<std::uint64_t> count_blocks(const json::value& v) {
  if (!v.is_array()) return std::nullopt;
  std::uint64_t n = 0;
  for (const json::value& item : v.get_array()) {
    if (item.is_array()) {
      for (const json::value& id : item.get_array()) {
        if (!id.is_int64() && !id.is_uint64()) return std::nullopt;
      }
      n = std::max<std::uint64_t>(n, item.get_array().size());
    } else if (item.is_int64() || item.is_uint64()) {
      ++n;
    } else {
      return std::nullopt;
    }
  }
  return n;
}

}  // namespace

std::variant<PdRequest, ApiError> parse_pd_request(const std::optional<json::object>& params) {
  PdRequest out;
  if (!params) return out;
  const bool decode = flag(*params, "do_remote_decode");
  const bool prefill = flag(*params, "do_remote_prefill");
  if (decode && prefill) return invalid("do_remote_decode and do_remote_prefill are both true");
  if (decode) out.mode = PdMode::kPrefillOnly;
  if (!prefill) return out;
  out.mode = PdMode::kRemotePrefill;
  RemotePrefill& r = out.remote;
  auto engine = text(*params, "remote_engine_id");
  auto request = text(*params, "remote_request_id");
  auto host = text(*params, "remote_host");
  if (!engine) return invalid("remote_engine_id is missing or not a string");
  if (!request) return invalid("remote_request_id is missing or not a string");
  if (!host) return invalid("remote_host is missing or not a string");
  auto port = params->find("remote_port");
  if (port == params->end() || !port->value().is_int64() || port->value().get_int64() < 1 ||
      port->value().get_int64() > 65535) {
    return invalid("remote_port is missing or not a port number");
  }
  auto blocks = params->find("remote_block_ids");
  std::optional<std::uint64_t> count =
      blocks == params->end() ? std::nullopt : count_blocks(blocks->value());
  if (!count) return invalid("remote_block_ids is missing or not a list of block ids");
  if (*count == 0) return invalid("remote_block_ids is empty: the prefill instance holds no KV");
  r.engine_id = *engine;
  r.request_id = *request;
  r.host = *host;
  r.port = static_cast<std::uint16_t>(port->value().get_int64());
  r.num_blocks = *count;
  auto tokens = params->find("remote_num_tokens");
  if (tokens != params->end() && tokens->value().is_int64() && tokens->value().get_int64() >= 0) {
    r.num_tokens = static_cast<std::uint64_t>(tokens->value().get_int64());
  }
  return out;
}

std::string format_prefill_params(const PrefillParams& p) {
  std::string out =
      "{\"do_remote_prefill\":true,\"do_remote_decode\":false,\"remote_block_ids\":[[";
  for (std::size_t i = 0; i < p.block_ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(p.block_ids[i]);
  }
  out += "]],\"remote_engine_id\":" + json_quote(p.engine_id) +
         ",\"remote_request_id\":" + json_quote(p.request_id) +
         ",\"remote_host\":" + json_quote(p.host) + ",\"remote_port\":" + std::to_string(p.port) +
         ",\"tp_size\":" + std::to_string(p.tp_size) +
         ",\"remote_num_tokens\":" + std::to_string(p.num_tokens) + "}";
  return out;
}

}  // namespace omni::sim
