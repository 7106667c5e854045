// Conversions of values to text and from JSON, with @huggingface/jinja's exact spelling:
// `{{ x }}` output, `~`/`+` string conversion, `tojson`, and the JSON context a caller passes.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>

#include "omni/common/result.hpp"
#include "value.hpp"

namespace omni::chat::jinja {

struct JsonFormat {
  std::optional<std::int64_t> indent;  // pretty-print with this many spaces
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
  bool undefined_as_null = true;  // false: spelled "undefined" (how arrays print in output)
};

// JSON text of a value; kInvalidArgument for a function. `budget` bounds the output size.
Result<std::string> to_json(const Value& v, const JsonFormat& format, std::size_t budget);

// How `{{ v }}` prints v (none/undefined print nothing; handled by the caller), e.g. 2.0 ->
// "2.0", true -> "true", [1, "a"] -> "[1, \"a\"]".
Result<std::string> to_output(const Value& v, std::size_t budget);

// The string `~` and string `+` make of an operand (JS `value.toString()`): 2.0 -> "2".
Result<std::string> to_concat_string(const Value& v, std::size_t budget);

// A float as FloatValue.toString prints it ("1.0", "0.5", "-0.0").
std::string float_to_output(double d);

// JSON -> value, as JSON.parse + @huggingface/jinja's conversion: integral numbers become
// integers, object keys that are array indices come first in ascending order (JS objects).
Result<Value> from_json(const boost::json::value& json, std::size_t max_depth);

}  // namespace omni::chat::jinja
