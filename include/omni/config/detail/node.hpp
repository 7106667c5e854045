// A YAML document as plain data, and the issue list that loading fills.
//
// yaml-cpp stays inside src/: the schema templates walk this small tree instead, so public
// headers do not drag yaml-cpp (or its exceptions) into every binary that declares a config.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::config::detail {

struct Node {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  struct Entry;

  Kind kind = Kind::kNull;
  std::string scalar;          // kScalar: the text as written (quotes removed)
  std::vector<Node> items;     // kSequence
  std::vector<Entry> entries;  // kMap, in document order
  int line = 0;                // 1-based position in the document; 0 when built in code
  int column = 0;
  bool flow = false;  // emit hint: write the sequence inline, [a, b]

  static Node make_scalar(std::string text);
  static Node make_sequence(std::vector<Node> items, bool flow);
  static Node make_map();
  void add(std::string key, Node value);  // kMap only

  // For messages: "'many'", "null", "a list", "a mapping".
  std::string describe() const;
};

struct Node::Entry {
  std::string key;
  Node value;
  int line = 0;  // where the key is written, for "unknown key" messages
  int column = 0;
};

// Parses one YAML document. Errors (kInvalidArgument) carry line and column; `source` (a file
// name, may be empty) prefixes them. Duplicate keys in a mapping are errors too.
Result<Node> parse_yaml(std::string_view text, std::string_view source);
// Writes a tree as block-style YAML that parse_yaml() reads back to the same tree.
std::string emit_yaml(const Node& root);
// The whole file, or kNotFound / kIo naming the path.
Result<std::string> read_text_file(const std::filesystem::path& path);

// One problem found while loading: `path` is the key ("pools[1].endpoints[0]"), `where` a
// location ("line 3, column 7" or "from --listen-port"), either may be empty.
struct Issue {
  std::string path;
  std::string message;
  std::string where;
  std::string to_string() const;  // "path: message (where)"
};

// Loading reports every problem at once, so a user fixes a config in one round.
class Issues {
 public:
  explicit Issues(std::string source = {}) : source_(std::move(source)) {}

  void add(std::string path, std::string message, std::string where = {});
  // Located at (line, column) in the source document when the line is known.
  void add_at(std::string path, std::string message, int line, int column);
  void add_at(std::string path, std::string message, const Node& node) {
    add_at(std::move(path), std::move(message), node.line, node.column);
  }

  // A failed constraint. Dropped when the key (or a part of it) already failed to parse:
  // one message per key, and the one that names the actual mistake.
  void add_violation(std::string path, std::string message);

  bool empty() const noexcept { return issues_.empty(); }
  std::size_t size() const noexcept { return issues_.size(); }
  const std::vector<Issue>& list() const noexcept { return issues_; }
  // Ok, or kInvalidArgument listing every issue: one alone reads "path: message", several
  // read "N configuration errors:" followed by one indented line each.
  Status status() const;

 private:
  std::string source_;
  std::vector<Issue> issues_;
};

// The known name closest to `unknown` (a typo or two away, more for long names), or nullptr.
const std::string* nearest_name(std::string_view unknown, const std::vector<std::string>& known);
// " (did you mean 'port'?)" for a near miss, otherwise " (known keys: a, b, c)".
std::string unknown_key_hint(std::string_view unknown, const std::vector<std::string>& known);
// A key as the schema spells it: YAML may write "max-num-seqs" for "max_num_seqs", as vLLM's
// config files do.
std::string canonical_key(std::string_view key);
// "a" + "b" -> "a.b"; "" + "b" -> "b".
std::string join_path(std::string_view prefix, std::string_view key);
// "pools" + 1 -> "pools[1]".
std::string index_path(std::string_view prefix, std::size_t index);

}  // namespace omni::config::detail
