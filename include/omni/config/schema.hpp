// Schema<T>: binds the members of a plain struct to configuration keys.
//
// A binary's config is an ordinary struct whose member initialisers are the defaults; a
// describe function states, once, each member's key, doc line and constraints:
//
//   struct ListenConfig { std::string host = "127.0.0.1"; std::uint16_t port = 8000; };
//   struct ServerConfig { ListenConfig listen; unsigned io_threads = 1;
//                         omni::Duration header_timeout = 10s; std::size_t max_body = 16 << 20;
//                         LogLevel level = LogLevel::kInfo; std::vector<PoolConfig> pools; };
//
//   void describe(Schema<ServerConfig>& s) {
//     s.section("listen", &ServerConfig::listen, [](Schema<ListenConfig>& l) {
//       l.field("host", &ListenConfig::host, "Address to listen on").non_empty();
//       l.field("port", &ListenConfig::port, "TCP port").range(1, 65535);
//     });
//     s.field("io_threads", &ServerConfig::io_threads, "I/O threads").range(1, 256);
//     s.field("header_timeout", &ServerConfig::header_timeout, "Request head deadline").min(1ms);
//     s.bytes("max_body", &ServerConfig::max_body, "Largest request body");
//     s.field("level", &ServerConfig::level, "Log level").choices({{"info", LogLevel::kInfo}});
//     s.list("pools", &ServerConfig::pools, "Upstream pools", describe_pool).non_empty();
//     s.check([](const ServerConfig& c) -> omni::Status { ... });  // cross-field rule
//   }
//
// The member's type picks the codec (codec.hpp): bool, integers (range-checked, never
// narrowed silently), double, std::string, std::chrono durations ("250ms"), enums (by name,
// from choices()), and byte sizes for unsigned members bound with bytes() ("16MiB"). A member
// may also be std::optional<V> (YAML null = nullopt) or std::vector<V>. A key absent from the
// YAML keeps the struct's default; unknown keys are errors, with the closest known key. Keys are
// written with '_'; YAML may spell them with '-' instead ("max-num-seqs"), as vLLM's files do.
//
// Loading is two passes over the same schema: parse (type errors, unknown keys) and then
// validate (ranges, non_empty, check()). Validation runs on the final struct, after YAML and
// command-line flags were both applied, so a constraint reads the same from either source.
// Element constraints (range/min/max/each) apply to each list item and to an optional's value.
//
// A Schema is built once at start-up; copying it is cheap (entries are shared, immutable after
// describe). Not thread-safe while being described; read-only use afterwards is.
#pragma once

#include <cassert>
#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/config/codec.hpp"
#include "omni/config/detail/entries.hpp"
#include "omni/config/detail/node.hpp"

namespace omni::config {

template <class T>
class Schema;

// A describe callable that is not a plain function (those take the function-pointer overloads,
// which also accept a named describe function overloaded for several structs).
template <class F, class S>
concept DescribeFn = std::invocable < F&,
        Schema<S>
& > &&!std::is_convertible_v<F&&, void (*)(Schema<S>&)>;

// Chained constraints on one field. Returned by Schema::field(); use it in the same statement.
template <class T, class M, class C>
class FieldBuilder {
 public:
  using Element = detail::ElementOf<M>;

  explicit FieldBuilder(detail::FieldEntry<T, M, C>& entry, C codec)
      : entry_(&entry), codec_(std::move(codec)) {}

  // lo <= value <= hi (each element, for lists).
  FieldBuilder& range(Element lo, Element hi) requires std::totally_ordered<Element> &&
      (!std::is_enum_v<Element>) {
    std::string bounds = codec_.format(lo) + ".." + codec_.format(hi);
    entry_->add_rule(bounds, [lo, hi, bounds, codec = codec_](const Element& value) {
      return value < lo || hi < value ? "must be in " + bounds + ", got " + codec.format(value)
                                      : std::string();
    });
    return *this;
  }
  FieldBuilder& min(Element lo) requires std::totally_ordered<Element> &&
      (!std::is_enum_v<Element>) {
    std::string bound = codec_.format(lo);
    entry_->add_rule(">= " + bound, [lo, bound, codec = codec_](const Element& value) {
      return value < lo ? "must be at least " + bound + ", got " + codec.format(value)
                        : std::string();
    });
    return *this;
  }
  FieldBuilder& max(Element hi) requires std::totally_ordered<Element> &&
      (!std::is_enum_v<Element>) {
    std::string bound = codec_.format(hi);
    entry_->add_rule("<= " + bound, [hi, bound, codec = codec_](const Element& value) {
      return hi < value ? "must be at most " + bound + ", got " + codec.format(value)
                        : std::string();
    });
    return *this;
  }
  // A string must not be "", a list must have an item (an unset optional is fine).
  FieldBuilder& non_empty() requires detail::Emptiable<M> {
    entry_->require_non_empty();
    return *this;
  }
  // The names an enum is written as; required for enum fields.
  FieldBuilder& choices(
      std::vector<std::pair<std::string, Element>> names) requires std::is_enum_v<Element> {
    entry_->codec().names = std::move(names);
    return *this;
  }
  // A rule on each element (the value itself, each list item, an optional's value); errors
  // name the element's path, e.g. "pools[1].endpoints[0]: ...".
  FieldBuilder& each(std::function<Status(const Element&)> rule) {
    entry_->add_rule("", [rule = std::move(rule)](const Element& value) {
      Status status = rule(value);
      return status ? std::string() : status.error().message;
    });
    return *this;
  }
  // A secret (a key, a token): --print-config, --help and every dump show kRedacted instead
  // of the value, so it never lands in a log, a support ticket or a config diff.
  FieldBuilder& secret() {
    entry_->mark_secret();
    return *this;
  }
  // Any other rule on the whole member value; the error's message becomes the reason.
  FieldBuilder& check(std::function<Status(const M&)> rule) {
    entry_->add_check(std::move(rule));
    return *this;
  }

 private:
  detail::FieldEntry<T, M, C>* entry_;
  C codec_;  // for formatting bounds in messages
};

template <class T, class S>
class ListBuilder {
 public:
  explicit ListBuilder(detail::ListEntry<T, S>& entry) : entry_(&entry) {}
  ListBuilder& non_empty() {
    entry_->require_non_empty();
    return *this;
  }
  // A rule on the whole list (e.g. unique names); runs after each item validated cleanly.
  ListBuilder& check(std::function<Status(const std::vector<S>&)> rule) {
    entry_->add_check(std::move(rule));
    return *this;
  }

 private:
  detail::ListEntry<T, S>* entry_;
};

template <class T>
class Schema {
 public:
  static_assert(std::is_default_constructible_v<T>, "a config struct's defaults come from T{}");

  // A scalar, optional or list member; the codec follows the element type.
  template <class M>
  auto field(std::string key, M T::*member, std::string doc) {
    return field_as(std::move(key), member, std::move(doc), DefaultCodec<detail::ElementOf<M>>{});
  }
  // A byte-size member ("16MiB"): an unsigned integer, optional or list of them.
  template <class M>
  requires std::unsigned_integral<detail::ElementOf<M>>
  auto bytes(std::string key, M T::*member, std::string doc) {
    return field_as(std::move(key), member, std::move(doc), ByteSizeCodec<detail::ElementOf<M>>{});
  }
  // A member read and written through your own codec (see codec.hpp for the shape).
  template <class M, class C>
  FieldBuilder<T, M, C> field_as(std::string key, M T::*member, std::string doc, C codec) {
    auto entry = std::make_shared<detail::FieldEntry<T, M, C>>(std::move(key), member,
                                                               std::move(doc), codec);
    auto& ref = *entry;
    add(std::move(entry));
    return FieldBuilder<T, M, C>(ref, std::move(codec));
  }

  // A nested struct under `key`, described by `describe(Schema<S>&)`: a lambda, or a named
  // describe function (even one overloaded for several structs).
  template <class S, DescribeFn<S> F>
  Schema& section(std::string key, S T::*member, F&& describe) {
    return add_section(std::move(key), member, make_inner<S>(describe));
  }
  template <class S>
  Schema& section(std::string key, S T::*member, std::type_identity_t<void (*)(Schema<S>&)> fn) {
    return add_section(std::move(key), member, make_inner<S>(fn));
  }

  // A YAML list of sections ("pools: [{name: a, ...}, ...]"); each item starts from S{}.
  template <class S, DescribeFn<S> F>
  ListBuilder<T, S> list(std::string key, std::vector<S> T::*member, std::string doc,
                         F&& describe) {
    return add_list(std::move(key), member, std::move(doc), make_inner<S>(describe));
  }
  template <class S>
  ListBuilder<T, S> list(std::string key, std::vector<S> T::*member, std::string doc,
                         std::type_identity_t<void (*)(Schema<S>&)> fn) {
    return add_list(std::move(key), member, std::move(doc), make_inner<S>(fn));
  }

  // A rule across fields of T, run once every field parsed and validated on its own.
  Schema& check(std::function<Status(const T&)> rule) {
    checks_.push_back(std::move(rule));
    return *this;
  }

  // ---- Used by load_yaml / dump_yaml / add_flags; paths are relative to the root. ----
  void load_into(const detail::Node& node, T& obj, const std::string& path,
                 detail::Issues& issues) const;
  void validate_into(const T& obj, const std::string& path, detail::Issues& issues,
                     bool cross_checks) const;
  detail::Node dump_node(const T& obj) const;
  std::vector<detail::Leaf<T>> leaves() const;
  std::vector<std::string> keys() const;

 private:
  void add(std::shared_ptr<detail::Entry<T>> entry) {
    assert(find(entry->key()) == nullptr && "duplicate key in a config schema");
    assert(entry->key().find_first_of(".[]-") == std::string::npos && "keys are plain names");
    entries_.push_back(std::move(entry));
  }
  template <class S, class F>
  static Schema<S> make_inner(F& describe) {
    Schema<S> inner;
    describe(inner);
    return inner;
  }
  template <class S>
  Schema& add_section(std::string key, S T::*member, Schema<S> inner) {
    add(std::make_shared<detail::SectionEntry<T, S>>(std::move(key), member, std::move(inner)));
    return *this;
  }
  template <class S>
  ListBuilder<T, S> add_list(std::string key, std::vector<S> T::*member, std::string doc,
                             Schema<S> inner) {
    auto entry = std::make_shared<detail::ListEntry<T, S>>(std::move(key), member, std::move(doc),
                                                           std::move(inner));
    auto& ref = *entry;
    add(std::move(entry));
    return ListBuilder<T, S>(ref);
  }
  // `key` as the schema spells it (detail::canonical_key).
  const detail::Entry<T>* find(std::string_view key) const {
    for (const auto& entry : entries_) {
      if (entry->key() == key) return entry.get();
    }
    return nullptr;
  }

  // An entry before node.entries[i] that names the same key in the other spelling
  // ("max-num-seqs" and "max_num_seqs"); the YAML parser already refuses exact duplicates.
  static const detail::Node::Entry* earlier_spelling(const detail::Node& node, std::size_t i,
                                                     const std::string& key) {
    for (std::size_t j = 0; j < i; ++j) {
      if (detail::canonical_key(node.entries[j].key) == key) return &node.entries[j];
    }
    return nullptr;
  }

  std::vector<std::shared_ptr<detail::Entry<T>>> entries_;
  std::vector<std::function<Status(const T&)>> checks_;
};

template <class T>
void Schema<T>::load_into(const detail::Node& node, T& obj, const std::string& path,
                          detail::Issues& issues) const {
  using Kind = detail::Node::Kind;
  if (node.kind == Kind::kNull) return;  // "listen:" with nothing under it keeps the defaults
  if (node.kind != Kind::kMap) {
    issues.add_at(path, "expected a mapping of keys, got " + node.describe(), node);
    return;
  }
  for (std::size_t i = 0; i < node.entries.size(); ++i) {
    const auto& item = node.entries[i];
    const std::string key = detail::canonical_key(item.key);
    const detail::Entry<T>* entry = find(key);
    if (entry == nullptr) {
      issues.add_at(detail::join_path(path, item.key),
                    "unknown key" + detail::unknown_key_hint(key, keys()), item.line, item.column);
      continue;
    }
    std::string item_path = detail::join_path(path, key);
    if (const auto* twin = earlier_spelling(node, i, key)) {
      issues.add_at(std::move(item_path), "duplicate key (also written as '" + twin->key + "')",
                    item.line, item.column);
      continue;
    }
    entry->load(item.value, obj, item_path, issues);
  }
}

template <class T>
void Schema<T>::validate_into(const T& obj, const std::string& path, detail::Issues& issues,
                              bool cross_checks) const {
  for (const auto& entry : entries_) {
    entry->validate(obj, detail::join_path(path, entry->key()), issues, cross_checks);
  }
  if (!cross_checks) return;
  for (const auto& rule : checks_) {
    Status status = rule(obj);
    if (!status) issues.add_violation(path, status.error().message);
  }
}

template <class T>
detail::Node Schema<T>::dump_node(const T& obj) const {
  detail::Node node = detail::Node::make_map();
  for (const auto& entry : entries_) node.add(entry->key(), entry->dump(obj));
  return node;
}

template <class T>
std::vector<detail::Leaf<T>> Schema<T>::leaves() const {
  std::vector<detail::Leaf<T>> out;
  for (const auto& entry : entries_) entry->leaves(out);
  return out;
}

template <class T>
std::vector<std::string> Schema<T>::keys() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry->key());
  return out;
}

// The schema produced by a describe function: make_schema<Config>(describe).
template <class T, DescribeFn<T> F>
Schema<T> make_schema(F&& describe) {
  Schema<T> schema;
  describe(schema);
  return schema;
}
template <class T>
Schema<T> make_schema(std::type_identity_t<void (*)(Schema<T>&)> describe) {
  Schema<T> schema;
  describe(schema);
  return schema;
}

}  // namespace omni::config
