// The fleet message codec (omni/fleet/fleet_message.hpp).
#include "omni/fleet/fleet_message.hpp"

#include <array>
#include <boost/json.hpp>

namespace omni::fleet {
namespace {

namespace json = boost::json;

Error bad(std::string what) {
  return make_error(ErrorCode::kInvalidArgument, "fleet message: " + std::move(what));
}

Result<std::string> name_field(const json::object& o, std::string_view key, bool may_be_empty) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_string()) return bad(std::string(key) + " must be a string");
  const json::string& s = v->as_string();
  if (s.size() > kMaxNameBytes) return bad(std::string(key) + " is too long");
  if (s.empty() && !may_be_empty) return bad(std::string(key) + " is empty");
  for (const char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) return bad(std::string(key) + " has a control byte");
  }
  return std::string(s);
}

Result<std::int64_t> integer_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  std::int64_t n = 0;
  if (v && v->is_int64()) {
    n = v->as_int64();
  } else if (v && v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(kMaxMagnitude)) {
    n = static_cast<std::int64_t>(v->as_uint64());
  } else {
    return bad(std::string(key) + " must be an integer");
  }
  if (n > kMaxMagnitude || n < -kMaxMagnitude) return bad(std::string(key) + " is out of range");
  return n;
}

Result<MessageKind> kind_field(const json::object& o) {
  auto name = name_field(o, "kind", false);
  if (!name) return std::move(name).error();
  for (const MessageKind k :
       {MessageKind::kDelta, MessageKind::kSnapshot, MessageKind::kBye, MessageKind::kPrefix}) {
    if (*name == message_kind_name(k)) return k;
  }
  return bad("unknown kind " + *name);
}

Result<std::vector<std::uint64_t>> blocks_field(const json::object& o) {
  const json::value* v = o.if_contains("blocks");
  if (!v || !v->is_array()) return bad("blocks must be a list");
  const json::array& items = v->as_array();
  if (items.empty()) return bad("blocks is empty");
  if (items.size() > kMaxBlocks) return bad("too many blocks");
  std::vector<std::uint64_t> blocks;
  blocks.reserve(items.size());
  for (const json::value& item : items) {
    if (item.is_uint64()) {
      blocks.push_back(item.as_uint64());
    } else if (item.is_int64() && item.as_int64() >= 0) {
      blocks.push_back(static_cast<std::uint64_t>(item.as_int64()));
    } else {
      return bad("a block hash must be an unsigned integer");
    }
  }
  return blocks;
}

Result<std::vector<NodeLoadEntry>> loads_field(const json::object& o, MessageKind kind) {
  std::vector<NodeLoadEntry> loads;
  const json::value* v = o.if_contains("loads");
  if (!v) {
    if (kind == MessageKind::kBye || kind == MessageKind::kPrefix) return loads;
    return bad("loads is missing");
  }
  if (!v->is_array()) return bad("loads must be a list");
  const json::array& items = v->as_array();
  if (items.size() > kMaxLoads) return bad("too many loads");
  loads.reserve(items.size());
  for (const json::value& item : items) {
    if (!item.is_object()) return bad("a load must be an object");
    const json::object& entry = item.as_object();
    auto node = name_field(entry, "node", false);
    if (!node) return std::move(node).error();
    auto tokens = integer_field(entry, "tokens");
    if (!tokens) return std::move(tokens).error();
    auto prompt = integer_field(entry, "prompt");
    if (!prompt) return std::move(prompt).error();
    auto running = integer_field(entry, "running");
    if (!running) return std::move(running).error();
    if (kind == MessageKind::kSnapshot && (*tokens < 0 || *prompt < 0 || *running < 0)) {
      return bad("a snapshot's counts cannot be negative");
    }
    loads.push_back(NodeLoadEntry{std::move(*node), *tokens, *prompt, *running});
  }
  return loads;
}

}  // namespace

std::string_view message_kind_name(MessageKind kind) noexcept {
  static constexpr std::array<std::string_view, 4> kNames = {"delta", "snapshot", "bye", "prefix"};
  return kNames[static_cast<std::size_t>(kind)];
}

std::string encode(const FleetMessage& m) {
  json::object o;
  o["v"] = 1;
  o["fleet"] = m.fleet;
  o["replica"] = m.replica;
  o["epoch"] = m.epoch;
  o["config"] = m.config;
  o["seq"] = m.seq;
  o["kind"] = message_kind_name(m.kind);
  json::array loads;
  loads.reserve(m.loads.size());
  for (const NodeLoadEntry& l : m.loads) {
    loads.push_back(json::object{
        {"node", l.node}, {"tokens", l.tokens}, {"prompt", l.prompt}, {"running", l.running}});
  }
  o["loads"] = std::move(loads);
  if (m.kind == MessageKind::kPrefix) {
    o["node"] = m.prefix_node;
    json::array blocks;
    blocks.reserve(m.blocks.size());
    for (const std::uint64_t b : m.blocks) blocks.emplace_back(b);
    o["blocks"] = std::move(blocks);
  }
  return json::serialize(o);
}

Result<FleetMessage> decode(std::string_view text) {
  if (text.size() > kMaxMessageBytes) return bad("too large");
  boost::system::error_code ec;
  json::parse_options options;
  options.max_depth = 8;
  json::value v = json::parse(text, ec, {}, options);
  if (ec) return bad("not JSON: " + ec.message());
  if (!v.is_object()) return bad("not an object");
  const json::object& o = v.as_object();
  auto version = integer_field(o, "v");
  if (!version) return std::move(version).error();
  if (*version != 1) return bad("unknown version " + std::to_string(*version));
  FleetMessage m;
  auto fleet = name_field(o, "fleet", false);
  if (!fleet) return std::move(fleet).error();
  auto replica = name_field(o, "replica", false);
  if (!replica) return std::move(replica).error();
  auto epoch = name_field(o, "epoch", false);
  if (!epoch) return std::move(epoch).error();
  auto config = name_field(o, "config", true);
  if (!config) return std::move(config).error();
  auto seq = integer_field(o, "seq");
  if (!seq) return std::move(seq).error();
  if (*seq < 0) return bad("seq cannot be negative");
  auto kind = kind_field(o);
  if (!kind) return std::move(kind).error();
  auto loads = loads_field(o, *kind);
  if (!loads) return std::move(loads).error();
  if (*kind == MessageKind::kPrefix) {
    if (!loads->empty()) return bad("a prefix message carries no loads");
    auto node = name_field(o, "node", false);
    if (!node) return std::move(node).error();
    auto blocks = blocks_field(o);
    if (!blocks) return std::move(blocks).error();
    m.prefix_node = std::move(*node);
    m.blocks = std::move(*blocks);
  }
  m.fleet = std::move(*fleet);
  m.replica = std::move(*replica);
  m.epoch = std::move(*epoch);
  m.config = std::move(*config);
  m.seq = static_cast<std::uint64_t>(*seq);
  m.kind = *kind;
  m.loads = std::move(*loads);
  return m;
}

}  // namespace omni::fleet
