// Lenient, defensive KV-event decoder (spec §2.8): array or tagged-map events, every historical
// field count, int or bytes hashes, unknown event tags skipped. Malformed input is an error
// Result; nothing is sized from a length that the remaining input cannot back.
#include <array>
#include <limits>
#include <string>

#include "msgpack_reader.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {
namespace {

using msgpack::Reader;
using msgpack::Type;

constexpr std::size_t kMaxHashBytes = 1024;  // merged hashes of large-block groups stay far below

Error protocol_error(std::string message) {
  return make_error(ErrorCode::kProtocol, "kv events: " + std::move(message));
}

#define OMNI_KV_TRY(expr)                                 \
  do {                                                    \
    Status status_ = (expr);                              \
    if (!status_.ok()) return std::move(status_).error(); \
  } while (false)

template <class T>
Status assign(Result<T> result, T& out) {
  if (!result.ok()) return std::move(result).error();
  out = std::move(result).value();
  return ok_status();
}

enum class EventKind { kStored, kRemoved, kCleared, kUnknown };

EventKind kind_of(std::string_view tag) {
  if (tag == "BlockStored") return EventKind::kStored;
  if (tag == "BlockRemoved") return EventKind::kRemoved;
  if (tag == "AllBlocksCleared") return EventKind::kCleared;
  return EventKind::kUnknown;
}

// Positional index (1-based, after the tag) of each field, shared by both layouts.
struct FieldName {
  std::string_view name;
  std::size_t index;
};
constexpr std::array<FieldName, 11> kStoredFields = {{
    {"block_hashes", 1},
    {"parent_block_hash", 2},
    {"token_ids", 3},
    {"block_size", 4},
    {"lora_id", 5},
    {"medium", 6},
    {"lora_name", 7},
    {"extra_keys", 8},
    {"group_idx", 9},
    {"kv_cache_spec_kind", 10},
    {"kv_cache_spec_sliding_window", 11},
}};
constexpr std::array<FieldName, 3> kRemovedFields = {{
    {"block_hashes", 1},
    {"medium", 2},
    {"group_idx", 3},
}};

template <std::size_t N>
std::size_t field_index(const std::array<FieldName, N>& fields, std::string_view name) {
  for (const FieldName& f : fields) {
    if (f.name == name) return f.index;
  }
  return 0;  // unknown: skipped
}

class EventDecoder {
 public:
  explicit EventDecoder(Reader& reader) : r_(reader) {}

  // Fills `out` in place (building the variant in place also avoids a GCC 12
  // -Wmaybe-uninitialized false positive on moving it under ASan).
  Status hash(EventHash& out) {
    auto type = r_.peek();
    if (!type.ok()) return std::move(type).error();
    if (*type == Type::kInt) {
      Reader probe = r_;  // read_uint() may fail after consuming; retry from the same spot
      if (auto value = probe.read_uint(); value.ok()) {
        r_ = probe;
        out.emplace<std::uint64_t>(*value);
        return ok_status();
      }
      // Legacy `builtin` hashes were signed 64-bit ints: keep their two's-complement bits.
      auto value = r_.read_int();
      if (!value.ok()) return std::move(value).error();
      out.emplace<std::uint64_t>(static_cast<std::uint64_t>(*value));
      return ok_status();
    }
    if (*type != Type::kBin) return protocol_error("a block hash must be an int or bytes");
    auto bytes = r_.read_bin();
    if (!bytes.ok()) return std::move(bytes).error();
    if (bytes->size() > kMaxHashBytes) return protocol_error("block hash too long");
    out.emplace<std::vector<std::uint8_t>>(bytes->begin(), bytes->end());
    return ok_status();
  }

  Status hashes(std::vector<EventHash>& out) {
    auto count = r_.read_array_header();
    if (!count.ok()) return std::move(count).error();
    out.clear();
    out.reserve(*count);  // bounded: read_array_header checked it against the input size
    for (std::size_t i = 0; i < *count; ++i) OMNI_KV_TRY(hash(out.emplace_back()));
    return ok_status();
  }

  Status optional_hash(std::optional<EventHash>& out) {
    out.reset();
    if (r_.try_nil()) return ok_status();
    return hash(out.emplace());
  }

  Status tokens(std::vector<std::uint32_t>& out) {
    auto count = r_.read_array_header();
    if (!count.ok()) return std::move(count).error();
    out.clear();
    out.reserve(*count);
    for (std::size_t i = 0; i < *count; ++i) {
      auto token = r_.read_uint();
      if (!token.ok()) return std::move(token).error();
      if (*token > std::numeric_limits<std::uint32_t>::max()) {
        return protocol_error("token id out of range");
      }
      out.push_back(static_cast<std::uint32_t>(*token));
    }
    return ok_status();
  }

  Status optional_int(std::optional<std::int64_t>& out) {
    out.reset();
    if (r_.try_nil()) return ok_status();
    auto value = r_.read_int();
    if (!value.ok()) return std::move(value).error();
    out = *value;
    return ok_status();
  }

  Status optional_str(std::optional<std::string>& out) {
    out.reset();
    if (r_.try_nil()) return ok_status();
    auto value = r_.read_str();
    if (!value.ok()) return std::move(value).error();
    out = std::string(*value);
    return ok_status();
  }

  Status extra_key(ExtraKey& out) {
    auto type = r_.peek();
    if (!type.ok()) return std::move(type).error();
    if (*type == Type::kStr) {
      auto text = r_.read_str();
      if (!text.ok()) return std::move(text).error();
      out = std::string(*text);
      return ok_status();
    }
    if (*type == Type::kBin) {
      auto bytes = r_.read_bin();
      if (!bytes.ok()) return std::move(bytes).error();
      out = std::vector<std::uint8_t>(bytes->begin(), bytes->end());
      return ok_status();
    }
    auto count = r_.read_array_header();
    if (!count.ok()) return protocol_error("an extra key must be a str, bytes or [str, int]");
    if (*count != 2) return protocol_error("a multimodal extra key must have 2 elements");
    MmExtraKey mm;
    auto identifier = r_.read_str();
    if (!identifier.ok()) return std::move(identifier).error();
    mm.identifier = std::string(*identifier);
    OMNI_KV_TRY(assign(r_.read_int(), mm.offset));
    out = std::move(mm);
    return ok_status();
  }

  Status block_extra_keys(ExtraKeys& out) {
    out.items.clear();
    if (r_.try_nil()) return ok_status();
    auto count = r_.read_array_header();
    if (!count.ok()) return std::move(count).error();
    out.items.reserve(*count);
    for (std::size_t i = 0; i < *count; ++i) {
      ExtraKey key;
      OMNI_KV_TRY(extra_key(key));
      out.items.push_back(std::move(key));
    }
    return ok_status();
  }

  Status extra_keys_list(std::optional<std::vector<ExtraKeys>>& out) {
    out.reset();
    if (r_.try_nil()) return ok_status();
    auto count = r_.read_array_header();
    if (!count.ok()) return std::move(count).error();
    std::vector<ExtraKeys> list(*count);
    for (ExtraKeys& keys : list) OMNI_KV_TRY(block_extra_keys(keys));
    out = std::move(list);
    return ok_status();
  }

  Status stored_field(std::size_t index, BlockStored& e) {
    switch (index) {
      case 1: return hashes(e.block_hashes);
      case 2: return optional_hash(e.parent_block_hash);
      case 3: return tokens(e.token_ids);
      case 4: return assign(r_.read_int(), e.block_size);
      case 5: return optional_int(e.lora_id);
      case 6: return optional_str(e.medium);
      case 7: return optional_str(e.lora_name);
      case 8: return extra_keys_list(e.extra_keys);
      case 9: return optional_int(e.group_idx);
      case 10: return optional_str(e.kv_cache_spec_kind);
      case 11: return optional_int(e.kv_cache_spec_sliding_window);
      default: return r_.skip();  // a field from a newer server
    }
  }

  Status removed_field(std::size_t index, BlockRemoved& e) {
    switch (index) {
      case 1: return hashes(e.block_hashes);
      case 2: return optional_str(e.medium);
      case 3: return optional_int(e.group_idx);
      default: return r_.skip();
    }
  }

 private:
  Reader& r_;
};

// Fields every layout carries: BlockStored needs block_hashes and block_size (the parent, the
// tokens and the rest may be absent or nil), BlockRemoved needs block_hashes.
constexpr unsigned kStoredRequired = (1u << 1) | (1u << 4);
constexpr unsigned kRemovedRequired = 1u << 1;

Status check_required(EventKind kind, unsigned seen) {
  const unsigned required = kind == EventKind::kStored    ? kStoredRequired
                            : kind == EventKind::kRemoved ? kRemovedRequired
                                                          : 0u;
  if ((seen & required) != required) return protocol_error("event lacks a required field");
  return ok_status();
}

Status decode_field(EventDecoder& d, EventKind kind, std::size_t index, KVEvent& event) {
  if (kind == EventKind::kStored) return d.stored_field(index, std::get<BlockStored>(event));
  return d.removed_field(index, std::get<BlockRemoved>(event));
}

KVEvent empty_event(EventKind kind) {
  if (kind == EventKind::kStored) return BlockStored{};
  if (kind == EventKind::kRemoved) return BlockRemoved{};
  return AllBlocksCleared{};
}

// ["Tag", field1, field2, ...]. Returns nullopt for an unknown tag (skipped whole).
Result<std::optional<KVEvent>> decode_array_event(Reader& r) {
  auto count = r.read_array_header();
  if (!count.ok()) return std::move(count).error();
  if (*count == 0) return protocol_error("empty event array");
  auto tag = r.read_str();
  if (!tag.ok()) return protocol_error("event tag must be a string");
  const EventKind kind = kind_of(*tag);
  if (kind == EventKind::kUnknown || kind == EventKind::kCleared) {
    for (std::size_t i = 1; i < *count; ++i) OMNI_KV_TRY(r.skip());
    if (kind == EventKind::kUnknown) return std::optional<KVEvent>{};
    return std::optional<KVEvent>{AllBlocksCleared{}};
  }
  KVEvent event = empty_event(kind);
  EventDecoder d(r);
  unsigned seen = 0;
  for (std::size_t i = 1; i < *count; ++i) {
    OMNI_KV_TRY(decode_field(d, kind, i, event));
    if (i < 32) seen |= 1u << i;
  }
  OMNI_KV_TRY(check_required(kind, seen));
  return std::optional<KVEvent>{std::move(event)};
}

// Looks ahead (on a copy of the reader) for the "type" key of a map event.
Result<EventKind> find_map_kind(Reader look, std::size_t pairs) {
  for (std::size_t i = 0; i < pairs; ++i) {
    auto key = look.read_str();
    if (!key.ok()) return protocol_error("event map keys must be strings");
    if (*key == "type") {
      auto tag = look.read_str();
      if (!tag.ok()) return protocol_error("event type must be a string");
      return kind_of(*tag);
    }
    OMNI_KV_TRY(look.skip());
  }
  return protocol_error("event map has no \"type\"");
}

Result<std::optional<KVEvent>> decode_map_event(Reader& r) {
  auto pairs = r.read_map_header();
  if (!pairs.ok()) return std::move(pairs).error();
  auto kind = find_map_kind(r, *pairs);
  if (!kind.ok()) return std::move(kind).error();
  KVEvent event = empty_event(*kind);
  EventDecoder d(r);
  unsigned seen = 0;
  for (std::size_t i = 0; i < *pairs; ++i) {
    auto key = r.read_str();
    if (!key.ok()) return protocol_error("event map keys must be strings");
    std::size_t index = 0;
    if (*kind == EventKind::kStored) index = field_index(kStoredFields, *key);
    if (*kind == EventKind::kRemoved) index = field_index(kRemovedFields, *key);
    if (index == 0) {
      OMNI_KV_TRY(r.skip());  // "type", or a field this decoder does not know
      continue;
    }
    OMNI_KV_TRY(decode_field(d, *kind, index, event));
    seen |= 1u << index;
  }
  if (*kind == EventKind::kUnknown) return std::optional<KVEvent>{};
  OMNI_KV_TRY(check_required(*kind, seen));
  return std::optional<KVEvent>{std::move(event)};
}

Status decode_events(Reader& r, const DecodeLimits& limits, DecodedBatch& out) {
  auto count = r.read_array_header();
  if (!count.ok()) return std::move(count).error();
  if (*count > limits.max_events) {
    return make_error(ErrorCode::kTooLarge, "kv events: " + std::to_string(*count) +
                                                " events in one batch, limit " +
                                                std::to_string(limits.max_events));
  }
  out.batch.events.reserve(*count);
  for (std::size_t i = 0; i < *count; ++i) {
    auto type = r.peek();
    if (!type.ok()) return std::move(type).error();
    Result<std::optional<KVEvent>> event =
        *type == Type::kArray ? decode_array_event(r)
        : *type == Type::kMap
            ? decode_map_event(r)
            : Result<std::optional<KVEvent>>(protocol_error("an event must be an array or a map"));
    if (!event.ok()) return std::move(event).error();
    if (event->has_value()) {
      out.batch.events.push_back(std::move(**event));
    } else {
      ++out.skipped_events;
    }
  }
  return ok_status();
}

}  // namespace

Result<DecodedBatch> decode_batch(std::span<const std::uint8_t> payload,
                                  const DecodeLimits& limits) {
  if (payload.size() > limits.max_payload_bytes) {
    return make_error(ErrorCode::kTooLarge,
                      "kv events: payload of " + std::to_string(payload.size()) + " bytes");
  }
  Reader r(payload, limits.max_depth);
  auto fields = r.read_array_header();
  if (!fields.ok()) return std::move(fields).error();
  if (*fields < 2) return protocol_error("a batch needs at least [ts, events]");
  DecodedBatch out;
  OMNI_KV_TRY(assign(r.read_number(), out.batch.ts));
  OMNI_KV_TRY(decode_events(r, limits, out));
  if (*fields >= 3 && !r.try_nil()) {
    std::int64_t rank = 0;
    OMNI_KV_TRY(assign(r.read_int(), rank));
    out.batch.data_parallel_rank = rank;
  }
  for (std::size_t i = 3; i < *fields; ++i) OMNI_KV_TRY(r.skip());
  if (!r.at_end()) return protocol_error("trailing bytes after the batch");
  return out;
}

}  // namespace omni::kvcache
