// Markdown rendering for describe_markdown() and flag naming shared with the CLI.
#include <string>
#include <string_view>
#include <vector>

#include "omni/config/config.hpp"

namespace omni::config::detail {
namespace {

// A table cell: '|' would end the cell and a newline the row.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string code(std::string_view text) {
  return text.empty() ? std::string() : "`" + cell(text) + "`";
}

}  // namespace

std::string flag_name(std::string_view path) {
  std::string out(path);
  for (char& c : out) {
    if (c == '.' || c == '_') c = '-';
  }
  return out;
}

std::string render_markdown(const std::vector<DocRow>& rows) {
  std::string out = "| Key | Flag | Type | Default | Description |\n";
  out += "|---|---|---|---|---|\n";
  for (const auto& row : rows) {
    std::string description = row.doc;
    if (!row.constraints.empty()) description += " (" + row.constraints + ")";
    out += "| " + code(row.key) + " | " + code(row.flag) + " | " + cell(row.type) + " | " +
           code(row.default_value) + " | " + cell(description) + " |\n";
  }
  return out;
}

}  // namespace omni::config::detail
