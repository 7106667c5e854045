// The value model of the chat-template interpreter, modelled on @huggingface/jinja's runtime
// values (which in turn model Python's): undefined, none, bool, integer, float, string, array
// (or tuple), object (an insertion-ordered map), namespace (a mutable object), and function.
//
// Strings, arrays and objects are shared and immutable once built, so copying a Value is O(1);
// a namespace is the one mutable container (`{% set ns.x = ... %}`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::chat::jinja {

class Value;
class Interpreter;
class Scope;
class ObjectMap;
struct ArrayData;
struct CallArgs;

// A callable: a builtin (namespace, range, a bound string method) or a template macro. `caller`
// is the scope of the call site (macros see it, as in @huggingface/jinja).
using NativeFunction = std::function<Result<Value>(Interpreter&, CallArgs&, Scope& caller)>;

struct UndefinedTag {};
struct NoneTag {};
struct NamespaceRef {
  std::shared_ptr<ObjectMap> map;
};

class Value {
 public:
  enum class Kind : std::uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kArray,
    kObject,
    kNamespace,
    kFunction
  };

  Value() = default;  // undefined
  static Value none() { return Value(Storage(NoneTag{})); }
  static Value boolean(bool b) { return Value(Storage(b)); }
  static Value integer(std::int64_t i) { return Value(Storage(i)); }
  static Value floating(double d) { return Value(Storage(d)); }
  static Value string(std::string s);
  static Value string(std::shared_ptr<const std::string> s) { return Value(Storage(std::move(s))); }
  static Value array(std::vector<Value> items, bool tuple = false);
  static Value object(ObjectMap map);
  static Value ns(ObjectMap map);
  static Value function(NativeFunction fn);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is(Kind k) const { return kind() == k; }
  bool is_undefined() const { return is(Kind::kUndefined); }
  bool is_none() const { return is(Kind::kNone); }
  bool is_string() const { return is(Kind::kString); }
  bool is_array() const { return is(Kind::kArray); }
  bool is_tuple() const;
  bool is_object() const { return is(Kind::kObject); }
  bool is_number() const { return is(Kind::kInt) || is(Kind::kFloat); }

  bool as_bool() const { return std::get<bool>(data_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  double as_number() const { return is(Kind::kInt) ? static_cast<double>(as_int()) : as_float(); }
  const std::string& as_string() const {
    return *std::get<std::shared_ptr<const std::string>>(data_);
  }
  const ArrayData& array_data() const { return *std::get<std::shared_ptr<const ArrayData>>(data_); }
  const std::vector<Value>& items() const;
  const ObjectMap& as_object() const;  // object or namespace
  ObjectMap& namespace_map() const { return *std::get<NamespaceRef>(data_).map; }
  const NativeFunction& as_function() const {
    return *std::get<std::shared_ptr<const NativeFunction>>(data_);
  }

  // Python/Jinja truthiness: empty strings, arrays and objects are false.
  bool truthy() const;
  // The runtime type name used in error messages ("string", "array", ...).
  std::string_view type_name() const;
  // Container nesting depth (0 for scalars) and whether a namespace is inside (or is this).
  std::uint32_t depth() const;
  bool has_namespace() const;
  // Identity of a shared container (for JS-style `==` on arrays and objects).
  const void* identity() const;

 private:
  using Storage = std::variant<UndefinedTag, NoneTag, bool, std::int64_t, double,
                               std::shared_ptr<const std::string>, std::shared_ptr<const ArrayData>,
                               std::shared_ptr<const ObjectMap>, NamespaceRef,
                               std::shared_ptr<const NativeFunction>>;
  explicit Value(Storage s) : data_(std::move(s)) {}
  Storage data_;
};

// Positional and keyword arguments of a call, evaluated.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;

  const Value* keyword(std::string_view name) const;
};

// An insertion-ordered string-keyed map (the iteration order of a JS Map / Python dict).
class ObjectMap {
 public:
  const Value* find(std::string_view key) const;
  void set(std::string key, Value value);
  std::size_t size() const { return entries_.size(); }
  // Nesting depth of the values held (0 when empty or all scalar) plus one, and whether a
  // namespace is held anywhere inside: both guard against hostile nesting and cycles.
  std::uint32_t depth() const { return depth_; }
  bool has_namespace() const { return has_namespace_; }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

 private:
  std::size_t position(std::string_view key) const;  // entries_.size() when absent

  std::vector<std::pair<std::string, Value>> entries_;
  std::unordered_map<std::string, std::size_t> index_;  // built past a few entries
  std::uint32_t depth_ = 1;
  bool has_namespace_ = false;
};

struct ArrayData {
  std::vector<Value> items;
  bool tuple = false;
  std::uint32_t depth = 1;
  bool has_namespace = false;
};

inline bool Value::is_tuple() const { return is_array() && array_data().tuple; }
inline const std::vector<Value>& Value::items() const { return array_data().items; }

}  // namespace omni::chat::jinja
