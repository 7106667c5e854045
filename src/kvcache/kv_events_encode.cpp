// KV-event encoder: byte-exact with msgspec's output for the reference commit (spec §2.3, §2.7).
#include <type_traits>

#include "msgpack_writer.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::kvcache {
namespace {

using msgpack::Writer;

void put_hash(Writer& w, const EventHash& hash) {
  if (const auto* value = std::get_if<std::uint64_t>(&hash)) {
    w.uint(*value);
  } else {
    w.bin(std::get<std::vector<std::uint8_t>>(hash));
  }
}

void put_hashes(Writer& w, const std::vector<EventHash>& hashes) {
  w.array_header(hashes.size());
  for (const EventHash& hash : hashes) put_hash(w, hash);
}

template <class T, class Put>
void put_optional(Writer& w, const std::optional<T>& value, Put put) {
  if (value) {
    put(*value);
  } else {
    w.nil();
  }
}

void put_int_or_nil(Writer& w, const std::optional<std::int64_t>& value) {
  put_optional(w, value, [&w](std::int64_t v) { w.sint(v); });
}
void put_str_or_nil(Writer& w, const std::optional<std::string>& value) {
  put_optional(w, value, [&w](const std::string& v) { w.str(v); });
}

void put_extra_keys(Writer& w, const ExtraKeys& keys) {
  if (keys.empty()) {
    w.nil();
    return;
  }
  w.array_header(keys.items.size());
  for (const ExtraKey& key : keys.items) {
    std::visit(
        [&w](const auto& k) {
          using K = std::decay_t<decltype(k)>;
          if constexpr (std::is_same_v<K, std::string>) {
            w.str(k);
          } else if constexpr (std::is_same_v<K, MmExtraKey>) {
            w.array_header(2);
            w.str(k.identifier);
            w.sint(k.offset);
          } else {
            w.bin(k);
          }
        },
        key);
  }
}

void put_extra_keys_list(Writer& w, const std::optional<std::vector<ExtraKeys>>& list) {
  put_optional(w, list, [&w](const std::vector<ExtraKeys>& per_block) {
    w.array_header(per_block.size());
    for (const ExtraKeys& keys : per_block) put_extra_keys(w, keys);
  });
}

void put_tokens(Writer& w, const std::vector<std::uint32_t>& tokens) {
  w.array_header(tokens.size());
  for (std::uint32_t t : tokens) w.uint(t);
}

// In the map layout, fields declared with a default are left out when they hold it (nil).
void encode_stored(Writer& w, const BlockStored& e, EventLayout layout) {
  const bool map = layout == EventLayout::kMap;
  if (map) {
    const std::size_t defaulted =
        static_cast<std::size_t>(e.extra_keys.has_value()) +
        static_cast<std::size_t>(e.group_idx.has_value()) +
        static_cast<std::size_t>(e.kv_cache_spec_kind.has_value()) +
        static_cast<std::size_t>(e.kv_cache_spec_sliding_window.has_value());
    w.map_header(8 + defaulted);
    w.str("type");
  } else {
    w.array_header(12);
  }
  w.str("BlockStored");
  auto key = [&](std::string_view name) {
    if (map) w.str(name);
  };
  key("block_hashes");
  put_hashes(w, e.block_hashes);
  key("parent_block_hash");
  put_optional(w, e.parent_block_hash, [&w](const EventHash& h) { put_hash(w, h); });
  key("token_ids");
  put_tokens(w, e.token_ids);
  key("block_size");
  w.sint(e.block_size);
  key("lora_id");
  put_int_or_nil(w, e.lora_id);
  key("medium");
  put_str_or_nil(w, e.medium);
  key("lora_name");
  put_str_or_nil(w, e.lora_name);
  if (!map || e.extra_keys) {
    key("extra_keys");
    put_extra_keys_list(w, e.extra_keys);
  }
  if (!map || e.group_idx) {
    key("group_idx");
    put_int_or_nil(w, e.group_idx);
  }
  if (!map || e.kv_cache_spec_kind) {
    key("kv_cache_spec_kind");
    put_str_or_nil(w, e.kv_cache_spec_kind);
  }
  if (!map || e.kv_cache_spec_sliding_window) {
    key("kv_cache_spec_sliding_window");
    put_int_or_nil(w, e.kv_cache_spec_sliding_window);
  }
}

void encode_removed(Writer& w, const BlockRemoved& e, EventLayout layout) {
  if (layout == EventLayout::kMap) {
    w.map_header(3 + static_cast<std::size_t>(e.group_idx.has_value()));
    w.str("type");
    w.str("BlockRemoved");
    w.str("block_hashes");
    put_hashes(w, e.block_hashes);
    w.str("medium");
    put_str_or_nil(w, e.medium);
    if (e.group_idx) {
      w.str("group_idx");
      w.sint(*e.group_idx);
    }
    return;
  }
  w.array_header(4);
  w.str("BlockRemoved");
  put_hashes(w, e.block_hashes);
  put_str_or_nil(w, e.medium);
  put_int_or_nil(w, e.group_idx);
}

void encode_cleared(Writer& w, EventLayout layout) {
  if (layout == EventLayout::kMap) {
    w.map_header(1);
    w.str("type");
  } else {
    w.array_header(1);
  }
  w.str("AllBlocksCleared");
}

}  // namespace

void encode_batch(const KVEventBatch& batch, std::vector<std::uint8_t>& out, EventLayout layout) {
  Writer w(out);
  w.array_header(3);
  w.float64(batch.ts);
  w.array_header(batch.events.size());
  for (const KVEvent& event : batch.events) {
    if (const auto* stored = std::get_if<BlockStored>(&event)) {
      encode_stored(w, *stored, layout);
    } else if (const auto* removed = std::get_if<BlockRemoved>(&event)) {
      encode_removed(w, *removed, layout);
    } else {
      encode_cleared(w, layout);
    }
  }
  put_int_or_nil(w, batch.data_parallel_rank);
}

std::vector<std::uint8_t> encode_batch(const KVEventBatch& batch, EventLayout layout) {
  std::vector<std::uint8_t> out;
  encode_batch(batch, out, layout);
  return out;
}

}  // namespace omni::kvcache
