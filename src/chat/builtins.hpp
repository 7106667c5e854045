// The builtins of the template language, as @huggingface/jinja defines them: filters
// (`x | name(args)`), tests (`x is name`), attribute and method access on values
// (`s.strip()`, `d.items()`), and the globals (namespace, range, raise_exception).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "interpreter.hpp"
#include "value.hpp"

namespace omni::chat::jinja {

// `operand | name` (args == nullptr) or `operand | name(args...)`.
Result<Value> apply_filter(Interpreter& in, const Value& operand, std::string_view name,
                           CallArgs* args, Scope& scope);

// `operand is name`; kInvalidArgument for an unknown test.
Result<bool> apply_test(const Value& operand, std::string_view name);
// The same with the compared value of equalto/eq (selectattr("a", "equalto", "x")).
Result<bool> apply_test_with(const Value& operand, std::string_view name, const Value* other);

// `object.name` / `object[key]` (undefined when absent, as in Jinja); a method comes back as a
// function bound to `object`.
Result<Value> get_member(const Value& object, const Value& key);

// A dict method: get, items, keys, values, dictsort (filters.cpp).
Result<Value> call_object_builtin(const Value& object, std::string_view name, const CallArgs& args);

// A string method: upper, lower, strip, lstrip, rstrip, title, capitalize, startswith,
// endswith, split, replace (builtins.cpp).
Result<Value> call_string_method(const std::string& s, std::string_view name, const CallArgs& args);

// The global variables: true/false/none (and Title-case), namespace, range, raise_exception,
// and strftime_now when a time is given.
void install_globals(Scope& globals, std::optional<std::int64_t> now_unix_seconds);

// strftime for the reference's subset (%Y %m %d %b %B %H %M %%), in UTC.
std::string format_time(std::int64_t unix_seconds, std::string_view format);

// Strict equality (JS ===) and loose equality (JS ==) on values, as the reference uses them for
// `in`/unique and for `==`/`!=`.
bool strict_equal(const Value& a, const Value& b);
bool loose_equal(const Value& a, const Value& b);

}  // namespace omni::chat::jinja
