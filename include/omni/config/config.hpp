// Loading, dumping and documenting a config through its Schema (see schema.hpp).
//
//   auto schema = make_schema<ServerConfig>(describe);
//   Result<ServerConfig> cfg = load_yaml_file(schema, "omni.yaml");
//   if (!cfg) { log(cfg.error().message); return 2; }   // every problem, one per line
//
// Loading starts from T{} (or a given base), applies the YAML on top, then validates the result.
// Errors are kInvalidArgument and name each key's path and the reason:
//   listen.prot: unknown key (did you mean 'port'?) (line 2, column 3)
//   io_threads: expected an integer, got 'many' (line 4, column 13)
//   pools[1].endpoints[0]: must not be empty
// A YAML syntax error carries its line and column. Nothing here throws.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/config/detail/node.hpp"
#include "omni/config/schema.hpp"

namespace omni::config {

// Validates a struct built in code (or changed after loading) against the schema.
template <class T>
Status validate(const Schema<T>& schema, const T& cfg) {
  detail::Issues issues;
  schema.validate_into(cfg, "", issues, /*cross_checks=*/true);
  return issues.status();
}

namespace detail {
template <class T>
Result<T> load_node(const Schema<T>& schema, const Result<Node>& node, T base, Issues& issues) {
  if (!node) return node.error();
  schema.load_into(*node, base, "", issues);
  schema.validate_into(base, "", issues, /*cross_checks=*/issues.empty());
  Status status = issues.status();
  if (!status) return std::move(status).error();
  return base;
}
}  // namespace detail

// `yaml` is the document text. An empty document gives `base` (by default T{}) validated.
template <class T>
Result<T> load_yaml(const Schema<T>& schema, std::string_view yaml, T base = T{}) {
  detail::Issues issues;
  return detail::load_node(schema, detail::parse_yaml(yaml, ""), std::move(base), issues);
}

// As load_yaml, from a file; messages name the file. A missing file is kNotFound.
template <class T>
Result<T> load_yaml_file(const Schema<T>& schema, const std::filesystem::path& file, T base = T{}) {
  auto text = detail::read_text_file(file);
  if (!text) return std::move(text).error();
  detail::Issues issues(file.string());
  return detail::load_node(schema, detail::parse_yaml(*text, file.string()), std::move(base),
                           issues);
}

// The effective config as YAML (every key, defaults included), e.g. for --print-config.
// load_yaml(schema, dump_yaml(schema, cfg)) gives back a struct equal to cfg, except that a
// field marked secret() that holds a value is written as "<redacted>".
template <class T>
std::string dump_yaml(const Schema<T>& schema, const T& cfg) {
  return detail::emit_yaml(schema.dump_node(cfg));
}

namespace detail {
struct DocRow {
  std::string key;
  std::string flag;  // "--listen-port", or empty when only YAML can set it
  std::string type;
  std::string default_value;
  std::string doc;
  std::string constraints;
};
std::string render_markdown(const std::vector<DocRow>& rows);
// "listen.io_threads" -> "listen-io-threads"
std::string flag_name(std::string_view path);
}  // namespace detail

// A Markdown table with one row per key: key, command-line flag (a bool's with its --no- form),
// type, default, description (with its constraints). Generated docs never drift from the code
// that parses the config.
template <class T>
std::string describe_markdown(const Schema<T>& schema) {
  const T defaults{};
  std::vector<detail::DocRow> rows;
  for (const auto& leaf : schema.leaves()) {
    std::string flag;
    if (leaf.set) {
      const std::string name = detail::flag_name(leaf.path);
      flag = leaf.is_bool ? "--" + name + ", --no-" + name : "--" + name;
    }
    rows.push_back(
        {leaf.path, std::move(flag), leaf.type, leaf.show(defaults), leaf.doc, leaf.constraints});
  }
  return detail::render_markdown(rows);
}

}  // namespace omni::config
