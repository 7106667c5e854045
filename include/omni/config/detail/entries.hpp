// The type-erased pieces a Schema<T> is made of: one Entry<T> per key. FieldEntry binds a
// scalar/optional/list member through a codec; SectionEntry nests another Schema; ListEntry
// holds a list of sections. Each knows how to load itself from the YAML tree, validate, dump,
// and describe itself as Leaf records (one per settable value) for --help, flags and docs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/config/detail/node.hpp"
#include "omni/config/detail/value_io.hpp"

namespace omni::config {
template <class T>
class Schema;
}  // namespace omni::config

namespace omni::config::detail {

// What a secret field (FieldBuilder::secret) prints as.
inline constexpr std::string_view kRedacted = "<redacted>";

// One leaf value of a schema, seen from its root type T.
template <class T>
struct Leaf {
  std::string path;       // "listen.port"; "pools[].name" inside a list of sections
  std::string type;       // for docs: "integer", "list of string", "duration, optional"
  std::string flag_type;  // for --help: "INT", "DURATION"
  std::string doc;
  std::string constraints;                          // "1..65535; not empty"
  bool is_bool = false;                             // a bare --flag means true
  bool is_list = false;                             // a repeated flag appends
  std::function<std::string(const T&)> show;        // the value, as text
  std::function<Status(T&, std::string_view)> set;  // empty: only settable in YAML
};

// Re-roots a leaf of S at T through the section member, prefixing its path.
template <class T, class S>
Leaf<T> lift_leaf(Leaf<S> inner, const std::string& prefix, S T::*member) {
  Leaf<T> out{join_path(prefix, inner.path),
              std::move(inner.type),
              std::move(inner.flag_type),
              std::move(inner.doc),
              std::move(inner.constraints),
              inner.is_bool,
              inner.is_list,
              {},
              {}};
  out.show = [member, show = std::move(inner.show)](const T& root) { return show(root.*member); };
  if (inner.set) {
    out.set = [member, set = std::move(inner.set)](T& root, std::string_view text) {
      return set(root.*member, text);
    };
  }
  return out;
}

template <class T>
class Entry {
 public:
  explicit Entry(std::string key) : key_(std::move(key)) {}
  virtual ~Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;

  const std::string& key() const noexcept { return key_; }
  virtual void load(const Node& node, T& obj, const std::string& path, Issues& issues) const = 0;
  // cross_checks: whether struct-level checks run (they are skipped once a value failed to
  // parse, because a half-loaded struct makes them report nonsense).
  virtual void validate(const T& obj, const std::string& path, Issues& issues,
                        bool cross_checks) const = 0;
  virtual Node dump(const T& obj) const = 0;
  virtual void leaves(std::vector<Leaf<T>>& out) const = 0;

 private:
  std::string key_;
};

// Members for which non_empty() means something: strings, lists, optional strings.
template <class M>
concept Emptiable = requires(const M& value) {
  value.empty();
}
|| (Shape<M>::kOptional && requires(const ElementOf<M>& value) { value.empty(); });

template <Emptiable M>
bool is_empty_value(const M& value) {
  if constexpr (Shape<M>::kOptional) {
    return value.has_value() && is_empty_value(*value);
  } else {
    return value.empty();
  }
}

template <class T, class M, class C>
class FieldEntry final : public Entry<T> {
 public:
  using Element = ElementOf<M>;
  // Returns "" when the element is acceptable, else the reason ("must be in 1..65535, got 0").
  using Rule = std::function<std::string(const Element&)>;

  FieldEntry(std::string key, M T::*member, std::string doc, C codec)
      : Entry<T>(std::move(key)), member_(member), doc_(std::move(doc)), codec_(std::move(codec)) {}

  void load(const Node& node, T& obj, const std::string& path, Issues& issues) const override {
    load_value(node, obj.*member_, codec_, path, issues);
  }

  void validate(const T& obj, const std::string& path, Issues& issues, bool) const override {
    const M& value = obj.*member_;
    for_each_element(value, path, [&](const Element& element, const std::string& element_path) {
      for (const auto& rule : rules_) {
        std::string reason = rule(element);
        if (!reason.empty()) issues.add_violation(element_path, std::move(reason));
      }
    });
    if constexpr (Emptiable<M>) {
      if (non_empty_ && is_empty_value(value)) issues.add_violation(path, "must not be empty");
    }
    for (const auto& check : checks_) {
      Status status = check(value);
      if (!status) issues.add_violation(path, status.error().message);
    }
  }

  Node dump(const T& obj) const override {
    if (secret_ && has_secret(obj.*member_)) return Node::make_scalar(std::string(kRedacted));
    return dump_value(obj.*member_, codec_);
  }

  void leaves(std::vector<Leaf<T>>& out) const override {
    Leaf<T> leaf;
    leaf.path = this->key();
    leaf.type = codec_.type_name();
    leaf.flag_type = codec_.flag_type();
    if constexpr (Shape<M>::kVector) {
      leaf.type = "list of " + leaf.type;
      leaf.flag_type += ",...";
      leaf.is_list = true;
    }
    if constexpr (Shape<M>::kOptional) leaf.type += ", optional";
    leaf.is_bool = std::is_same_v<M, bool>;
    leaf.doc = doc_;
    leaf.constraints = constraints_;
    leaf.show = [member = member_, codec = codec_, secret = secret_](const T& obj) {
      if (secret && has_secret(obj.*member)) return std::string(kRedacted);
      return show_value(obj.*member, codec);
    };
    leaf.set = [member = member_, codec = codec_](T& obj, std::string_view text) {
      return set_from_text(obj.*member, text, codec);
    };
    out.push_back(std::move(leaf));
  }

  // Used by FieldBuilder while the schema is being described.
  C& codec() noexcept { return codec_; }
  void add_rule(std::string constraint, Rule rule) {
    note(std::move(constraint));
    rules_.push_back(std::move(rule));
  }
  void require_non_empty() {
    if (!non_empty_) note("not empty");
    non_empty_ = true;
  }
  void add_check(std::function<Status(const M&)> check) { checks_.push_back(std::move(check)); }
  void mark_secret() noexcept { secret_ = true; }

 private:
  // Whether a secret member holds anything to hide (an unset or empty one prints as it is).
  static bool has_secret(const M& value) {
    if constexpr (Shape<M>::kOptional) {
      return value.has_value();
    } else if constexpr (Emptiable<M>) {
      return !value.empty();
    } else {
      return true;
    }
  }

  void note(std::string constraint) {
    if (constraint.empty()) return;
    if (!constraints_.empty()) constraints_ += "; ";
    constraints_ += constraint;
  }

  M T::*member_;
  std::string doc_;
  C codec_;
  std::vector<Rule> rules_;
  std::vector<std::function<Status(const M&)>> checks_;
  std::string constraints_;
  bool non_empty_ = false;
  bool secret_ = false;  // dumped and shown as kRedacted
};

template <class T, class S>
class SectionEntry final : public Entry<T> {
 public:
  SectionEntry(std::string key, S T::*member, Schema<S> schema)
      : Entry<T>(std::move(key)), member_(member), schema_(std::move(schema)) {}

  void load(const Node& node, T& obj, const std::string& path, Issues& issues) const override {
    schema_.load_into(node, obj.*member_, path, issues);
  }
  void validate(const T& obj, const std::string& path, Issues& issues,
                bool cross_checks) const override {
    schema_.validate_into(obj.*member_, path, issues, cross_checks);
  }
  Node dump(const T& obj) const override { return schema_.dump_node(obj.*member_); }
  void leaves(std::vector<Leaf<T>>& out) const override {
    for (auto& inner : schema_.leaves()) {
      out.push_back(lift_leaf<T, S>(std::move(inner), this->key(), member_));
    }
  }

 private:
  S T::*member_;
  Schema<S> schema_;
};

template <class T, class S>
class ListEntry final : public Entry<T> {
 public:
  ListEntry(std::string key, std::vector<S> T::*member, std::string doc, Schema<S> schema)
      : Entry<T>(std::move(key)),
        member_(member),
        doc_(std::move(doc)),
        schema_(std::move(schema)) {}

  void load(const Node& node, T& obj, const std::string& path, Issues& issues) const override;
  void validate(const T& obj, const std::string& path, Issues& issues,
                bool cross_checks) const override;
  Node dump(const T& obj) const override;
  void leaves(std::vector<Leaf<T>>& out) const override;

  void require_non_empty() { non_empty_ = true; }
  void add_check(std::function<Status(const std::vector<S>&)> check) {
    checks_.push_back(std::move(check));
  }

 private:
  std::vector<S> T::*member_;
  std::string doc_;
  Schema<S> schema_;
  std::vector<std::function<Status(const std::vector<S>&)>> checks_;
  bool non_empty_ = false;
};

template <class T, class S>
void ListEntry<T, S>::load(const Node& node, T& obj, const std::string& path,
                           Issues& issues) const {
  auto& list = obj.*member_;
  if (node.kind == Node::Kind::kNull) {
    list.clear();
    return;
  }
  if (node.kind != Node::Kind::kSequence) {
    issues.add_at(path, "expected a list of sections, got " + node.describe(), node);
    return;
  }
  std::vector<S> loaded;
  for (std::size_t i = 0; i < node.items.size(); ++i) {
    S item{};  // each item starts from the section's own defaults
    schema_.load_into(node.items[i], item, index_path(path, i), issues);
    loaded.push_back(std::move(item));
  }
  list = std::move(loaded);
}

template <class T, class S>
void ListEntry<T, S>::validate(const T& obj, const std::string& path, Issues& issues,
                               bool cross_checks) const {
  const auto& list = obj.*member_;
  for (std::size_t i = 0; i < list.size(); ++i) {
    schema_.validate_into(list[i], index_path(path, i), issues, cross_checks);
  }
  if (non_empty_ && list.empty()) issues.add_violation(path, "must not be empty");
  if (!cross_checks) return;
  for (const auto& check : checks_) {
    Status status = check(list);
    if (!status) issues.add_violation(path, status.error().message);
  }
}

template <class T, class S>
Node ListEntry<T, S>::dump(const T& obj) const {
  std::vector<Node> items;
  for (const auto& item : obj.*member_) items.push_back(schema_.dump_node(item));
  return Node::make_sequence(std::move(items), /*flow=*/false);
}

template <class T, class S>
void ListEntry<T, S>::leaves(std::vector<Leaf<T>>& out) const {
  Leaf<T> self;
  self.path = this->key();
  self.type = "list of sections";
  self.doc = doc_;
  self.constraints = non_empty_ ? "not empty" : "";
  self.show = [member = member_](const T& obj) {
    auto count = (obj.*member).size();
    return count == 0 ? std::string("[]") : std::to_string(count) + " entries";
  };
  out.push_back(std::move(self));
  // Items exist only in YAML, so their leaves show a fresh item's defaults and have no flag.
  for (auto& inner : schema_.leaves()) {
    Leaf<T> leaf{join_path(this->key() + "[]", inner.path),
                 std::move(inner.type),
                 std::move(inner.flag_type),
                 std::move(inner.doc),
                 std::move(inner.constraints),
                 inner.is_bool,
                 inner.is_list,
                 {},
                 {}};
    leaf.show = [show = std::move(inner.show)](const T&) { return show(S{}); };
    out.push_back(std::move(leaf));
  }
}

}  // namespace omni::config::detail
