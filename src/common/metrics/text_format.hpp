// Pieces of the Prometheus text format 0.0.4 and its naming rules (internal to omni_metrics).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace omni::metrics::text {

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool is_valid_metric_name(std::string_view name) noexcept;
// [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__" (reserved for Prometheus itself).
bool is_valid_label_name(std::string_view name) noexcept;

// A sample value Prometheus parses back exactly: integers without exponent where the double
// holds one exactly (|v| < 2^53), else the shortest round-trip form; +Inf, -Inf, NaN.
void append_value(std::string& out, double value);
void append_value(std::string& out, std::uint64_t value);

// Label values escape backslash, double quote and newline.
void append_label_value(std::string& out, std::string_view value);
// HELP text escapes backslash and newline only.
void append_help(std::string& out, std::string_view help);

// `{a="x",b="y"}`, or nothing when there are no labels. `le`, when not empty, is appended
// as the last label (histogram buckets).
void append_labels(std::string& out, std::span<const std::string> names,
                   std::span<const std::string> values, std::string_view le = {});

// "name{labels} value\n"
void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   std::span<const std::string> label_names,
                   std::span<const std::string> label_values, double value);

}  // namespace omni::metrics::text
