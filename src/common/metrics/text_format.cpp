#include "text_format.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace omni::metrics::text {
namespace {

bool is_name_start(char c, bool allow_colon) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}

bool is_name_char(char c, bool allow_colon) noexcept {
  return is_name_start(c, allow_colon) || (c >= '0' && c <= '9');
}

bool is_valid_name(std::string_view name, bool allow_colon) noexcept {
  if (name.empty() || !is_name_start(name.front(), allow_colon)) return false;
  for (char c : name) {
    if (!is_name_char(c, allow_colon)) return false;
  }
  return true;
}

// Doubles hold every integer exactly up to 2^53; beyond, "integer" output would invent digits.
constexpr double kExactIntegerLimit = 9007199254740992.0;

}  // namespace

bool is_valid_metric_name(std::string_view name) noexcept {
  return is_valid_name(name, /*allow_colon=*/true);
}

bool is_valid_label_name(std::string_view name) noexcept {
  return is_valid_name(name, /*allow_colon=*/false) && !name.starts_with("__");
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  std::array<char, 32> buf{};
  std::to_chars_result res{};
  if (value == std::trunc(value) && std::fabs(value) < kExactIntegerLimit) {
    res = std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<std::int64_t>(value));
  } else {
    res = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  }
  out.append(buf.data(), res.ptr);
}

void append_value(std::string& out, std::uint64_t value) {
  std::array<char, 24> buf{};
  auto res = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  out.append(buf.data(), res.ptr);
}

void append_label_value(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void append_help(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void append_labels(std::string& out, std::span<const std::string> names,
                   std::span<const std::string> values, std::string_view le) {
  if (names.empty() && le.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    append_label_value(out, values[i]);
    out += '"';
  }
  if (!le.empty()) {
    if (!names.empty()) out += ',';
    out += "le=\"";
    out += le;
    out += '"';
  }
  out += '}';
}

void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   std::span<const std::string> label_names,
                   std::span<const std::string> label_values, double value) {
  out += name;
  out += suffix;
  append_labels(out, label_names, label_values);
  out += ' ';
  append_value(out, value);
  out += '\n';
}

}  // namespace omni::metrics::text
