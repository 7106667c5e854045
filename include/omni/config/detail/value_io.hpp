// How a field's member value moves between the YAML tree, command-line text and docs, for the
// three shapes a field can have: a scalar V, an std::optional<V> (null / absent = nullopt) and
// an std::vector<V> (a YAML sequence; comma-separated on the command line).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/config/detail/node.hpp"

namespace omni::config::detail {

template <class M>
struct Shape {
  static constexpr bool kOptional = false;
  static constexpr bool kVector = false;
  using Element = M;
};
template <class E>
struct Shape<std::optional<E>> {
  static constexpr bool kOptional = true;
  static constexpr bool kVector = false;
  using Element = E;
};
template <class E, class A>
struct Shape<std::vector<E, A>> {
  static constexpr bool kOptional = false;
  static constexpr bool kVector = true;
  using Element = E;
};

template <class M>
using ElementOf = typename Shape<M>::Element;

// Splits "a, b,c" into trimmed items; an empty text is an empty list.
std::vector<std::string> split_list(std::string_view text);

template <class C>
bool load_scalar(const Node& node, typename C::Value& out, const C& codec, const std::string& path,
                 Issues& issues) {
  if (node.kind != Node::Kind::kScalar) {
    issues.add_at(path, "expected " + codec.expected() + ", got " + node.describe(), node);
    return false;
  }
  auto parsed = codec.parse(node.scalar);
  if (!parsed) {
    issues.add_at(path, parsed.error().message, node);
    return false;
  }
  out = std::move(*parsed);
  return true;
}

template <class M, class C>
void load_value(const Node& node, M& out, const C& codec, const std::string& path, Issues& issues) {
  using S = Shape<M>;
  if constexpr (S::kOptional) {
    if (node.kind == Node::Kind::kNull) {
      out.reset();
      return;
    }
    typename S::Element element{};
    if (load_scalar(node, element, codec, path, issues)) out = std::move(element);
  } else if constexpr (S::kVector) {
    if (node.kind == Node::Kind::kNull) {
      out.clear();
      return;
    }
    if (node.kind != Node::Kind::kSequence) {
      issues.add_at(path, "expected a list of " + codec.type_name() + ", got " + node.describe(),
                    node);
      return;
    }
    M loaded;
    for (std::size_t i = 0; i < node.items.size(); ++i) {
      typename S::Element element{};
      if (load_scalar(node.items[i], element, codec, index_path(path, i), issues)) {
        loaded.push_back(std::move(element));
      }
    }
    out = std::move(loaded);
  } else {
    load_scalar(node, out, codec, path, issues);
  }
}

template <class M, class C>
Node dump_value(const M& value, const C& codec) {
  using S = Shape<M>;
  if constexpr (S::kOptional) {
    return value ? Node::make_scalar(codec.format(*value)) : Node{};
  } else if constexpr (S::kVector) {
    std::vector<Node> items;
    for (std::size_t i = 0; i < value.size(); ++i) {
      items.push_back(Node::make_scalar(codec.format(value[i])));
    }
    return Node::make_sequence(std::move(items), /*flow=*/true);
  } else {
    return Node::make_scalar(codec.format(value));
  }
}

// For --help and the Markdown table.
template <class M, class C>
std::string show_value(const M& value, const C& codec) {
  using S = Shape<M>;
  if constexpr (S::kOptional) {
    return value ? show_value(*value, codec) : std::string("none");
  } else if constexpr (S::kVector) {
    std::string out = "[";
    for (std::size_t i = 0; i < value.size(); ++i) {
      out += (i == 0 ? "" : ", ") + codec.format(value[i]);
    }
    return out + "]";
  } else {
    std::string text = codec.format(value);
    return text.empty() ? std::string("\"\"") : text;
  }
}

// From a command-line value: an optional's empty text clears it, a list is comma-separated.
template <class M, class C>
Status set_from_text(M& out, std::string_view text, const C& codec) {
  using S = Shape<M>;
  if constexpr (S::kOptional) {
    if (text.empty()) {
      out.reset();
      return ok_status();
    }
    auto parsed = codec.parse(text);
    if (!parsed) return std::move(parsed).error();
    out = std::move(*parsed);
  } else if constexpr (S::kVector) {
    M loaded;
    std::vector<std::string> items = split_list(text);
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto parsed = codec.parse(items[i]);
      if (!parsed) {
        return make_error(ErrorCode::kInvalidArgument,
                          "item " + std::to_string(i) + ": " + parsed.error().message);
      }
      loaded.push_back(std::move(*parsed));
    }
    out = std::move(loaded);
  } else {
    auto parsed = codec.parse(text);
    if (!parsed) return std::move(parsed).error();
    out = std::move(*parsed);
  }
  return ok_status();
}

// Calls fn(element, element_path) for each element present: the value itself, the optional's
// value when set, or each list item with its index in the path.
template <class M, class Fn>
void for_each_element(const M& value, const std::string& path, Fn&& fn) {
  using S = Shape<M>;
  if constexpr (S::kOptional) {
    if (value) fn(*value, path);
  } else if constexpr (S::kVector) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      const typename S::Element element = value[i];
      fn(element, index_path(path, i));
    }
  } else {
    fn(value, path);
  }
}

}  // namespace omni::config::detail
