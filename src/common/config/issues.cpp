// The config tree's small helpers and the issue list (include/omni/config/detail/node.hpp).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "omni/config/detail/node.hpp"
#include "omni/config/detail/value_io.hpp"

namespace omni::config::detail {
namespace {

// Edit distance counting an adjacent swap as one edit ("prot" -> "port" is 1), so the
// commonest typos get a suggestion.
std::size_t typo_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

Node Node::make_scalar(std::string text) {
  Node node;
  node.kind = Kind::kScalar;
  node.scalar = std::move(text);
  return node;
}

Node Node::make_sequence(std::vector<Node> items, bool flow) {
  Node node;
  node.kind = Kind::kSequence;
  node.items = std::move(items);
  node.flow = flow;
  return node;
}

Node Node::make_map() {
  Node node;
  node.kind = Kind::kMap;
  return node;
}

void Node::add(std::string key, Node value) {
  entries.push_back(Entry{std::move(key), std::move(value), 0, 0});
}

std::string Node::describe() const {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kScalar: return "'" + scalar + "'";
    case Kind::kSequence: return "a list";
    case Kind::kMap: return "a mapping";
  }
  return "?";
}

std::string Issue::to_string() const {
  std::string out = path.empty() ? message : path + ": " + message;
  if (!where.empty()) out += " (" + where + ")";
  return out;
}

void Issues::add(std::string path, std::string message, std::string where) {
  issues_.push_back(Issue{std::move(path), std::move(message), std::move(where)});
}

void Issues::add_at(std::string path, std::string message, int line, int column) {
  std::string where;
  if (line > 0) {
    where = source_.empty() ? "line " + std::to_string(line) + ", column " + std::to_string(column)
                            : source_ + ":" + std::to_string(line) + ":" + std::to_string(column);
  }
  add(std::move(path), std::move(message), std::move(where));
}

void Issues::add_violation(std::string path, std::string message) {
  for (const auto& issue : issues_) {
    const std::string_view earlier = issue.path;
    if (earlier.starts_with(path) && (earlier.size() == path.size() ||
                                      earlier[path.size()] == '.' || earlier[path.size()] == '[')) {
      return;
    }
  }
  add(std::move(path), std::move(message));
}

Status Issues::status() const {
  if (issues_.empty()) return ok_status();
  if (issues_.size() == 1) {
    return make_error(ErrorCode::kInvalidArgument, issues_.front().to_string());
  }
  std::string message = std::to_string(issues_.size()) + " configuration errors:";
  for (const auto& issue : issues_) message += "\n  " + issue.to_string();
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

const std::string* nearest_name(std::string_view unknown, const std::vector<std::string>& known) {
  const std::size_t allowed = unknown.size() <= 3 ? 1 : unknown.size() <= 8 ? 2 : 3;
  const std::string* best = nullptr;
  std::size_t best_distance = allowed + 1;
  for (const auto& name : known) {
    const std::size_t distance = typo_distance(unknown, name);
    if (distance < best_distance) {
      best = &name;
      best_distance = distance;
    }
  }
  return best;
}

std::string unknown_key_hint(std::string_view unknown, const std::vector<std::string>& known) {
  if (known.empty()) return " (this section has no keys)";
  if (const std::string* best = nearest_name(unknown, known)) {
    return " (did you mean '" + *best + "'?)";
  }
  std::string list;
  for (const auto& key : known) list += (list.empty() ? "" : ", ") + key;
  return " (known keys: " + list + ")";
}

std::string canonical_key(std::string_view key) {
  std::string out(key);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::string join_path(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  if (key.empty()) return std::string(prefix);
  return std::string(prefix) + "." + std::string(key);
}

std::string index_path(std::string_view prefix, std::size_t index) {
  return std::string(prefix) + "[" + std::to_string(index) + "]";
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  if (trim(text).empty()) return items;
  while (true) {
    const std::size_t comma = text.find(',');
    items.emplace_back(trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

}  // namespace omni::config::detail
