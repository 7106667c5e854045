#include "value.hpp"

#include <algorithm>

namespace omni::chat::jinja {
namespace {
// Small maps (the common case: a chat message) are searched linearly; larger ones get a hash
// index so that a template looping over a big object stays linear.
constexpr std::size_t kIndexThreshold = 16;
}  // namespace

const Value* CallArgs::keyword(std::string_view name) const {
  for (const auto& [key, value] : keywords) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::size_t ObjectMap::position(std::string_view key) const {
  if (!index_.empty()) {
    auto it = index_.find(std::string(key));
    return it == index_.end() ? entries_.size() : it->second;
  }
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first == key) return i;
  }
  return entries_.size();
}

const Value* ObjectMap::find(std::string_view key) const {
  const std::size_t at = position(key);
  return at == entries_.size() ? nullptr : &entries_[at].second;
}

void ObjectMap::set(std::string key, Value value) {
  depth_ = std::max(depth_, value.depth() + 1);
  has_namespace_ = has_namespace_ || value.has_namespace();
  if (const std::size_t at = position(key); at != entries_.size()) {
    entries_[at].second = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    index_.emplace(entries_.back().first, entries_.size() - 1);
  } else if (entries_.size() > kIndexThreshold) {
    for (std::size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  }
}

Value Value::string(std::string s) {
  return Value(Storage(std::make_shared<const std::string>(std::move(s))));
}

Value Value::array(std::vector<Value> items, bool tuple) {
  ArrayData data{std::move(items), tuple, 1, false};
  for (const Value& item : data.items) {
    data.depth = std::max(data.depth, item.depth() + 1);
    data.has_namespace = data.has_namespace || item.has_namespace();
  }
  return Value(Storage(std::make_shared<const ArrayData>(std::move(data))));
}

Value Value::object(ObjectMap map) {
  return Value(Storage(std::make_shared<const ObjectMap>(std::move(map))));
}

Value Value::ns(ObjectMap map) {
  return Value(Storage(NamespaceRef{std::make_shared<ObjectMap>(std::move(map))}));
}

Value Value::function(NativeFunction fn) {
  return Value(Storage(std::make_shared<const NativeFunction>(std::move(fn))));
}

const ObjectMap& Value::as_object() const {
  if (is(Kind::kNamespace)) return namespace_map();
  return *std::get<std::shared_ptr<const ObjectMap>>(data_);
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_float() != 0.0 && as_float() == as_float();  // NaN is false in JS
    case Kind::kString: return !as_string().empty();
    case Kind::kArray: return !items().empty();
    case Kind::kObject: return as_object().size() > 0;
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kArray: return is_tuple() ? "tuple" : "array";
    case Kind::kObject: return "object";
    case Kind::kNamespace: return "namespace";
    case Kind::kFunction: return "function";
  }
  return "unknown";
}

std::uint32_t Value::depth() const {
  switch (kind()) {
    case Kind::kArray: return array_data().depth;
    case Kind::kObject:
    case Kind::kNamespace: return as_object().depth();
    default: return 0;
  }
}

bool Value::has_namespace() const {
  switch (kind()) {
    case Kind::kArray: return array_data().has_namespace;
    case Kind::kObject: return as_object().has_namespace();
    case Kind::kNamespace: return true;
    default: return false;
  }
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::kArray: return &array_data();
    case Kind::kObject:
    case Kind::kNamespace: return &as_object();
    case Kind::kFunction: return &as_function();
    default: return nullptr;
  }
}

}  // namespace omni::chat::jinja
