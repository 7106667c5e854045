// yaml-cpp at the boundary: YAML text <-> detail::Node. yaml-cpp reports problems by throwing;
// every exception is caught here and becomes an error value with the line and column.
#include <yaml-cpp/yaml.h>

#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include "omni/config/detail/node.hpp"

namespace omni::config::detail {
namespace {

std::string location(std::string_view source, const YAML::Mark& mark) {
  const std::string line = std::to_string(mark.line + 1);
  const std::string column = std::to_string(mark.column + 1);
  return source.empty() ? "line " + line + ", column " + column
                        : std::string(source) + ":" + line + ":" + column;
}

void set_position(Node& node, const YAML::Mark& mark) {
  if (mark.is_null()) return;
  node.line = mark.line + 1;
  node.column = mark.column + 1;
}

Node convert(const YAML::Node& in, Issues& issues, const std::string& path) {
  Node out;
  set_position(out, in.Mark());
  switch (in.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null: break;
    case YAML::NodeType::Scalar:
      out.kind = Node::Kind::kScalar;
      out.scalar = in.Scalar();
      break;
    case YAML::NodeType::Sequence:
      out.kind = Node::Kind::kSequence;
      for (std::size_t i = 0; i < in.size(); ++i) {
        out.items.push_back(convert(in[i], issues, index_path(path, i)));
      }
      break;
    case YAML::NodeType::Map: {
      out.kind = Node::Kind::kMap;
      std::set<std::string> seen;
      for (const auto& item : in) {
        Node key = convert(item.first, issues, path);
        if (key.kind != Node::Kind::kScalar) {
          issues.add_at(path, "mapping keys must be plain names, got " + key.describe(), key);
          continue;
        }
        if (!seen.insert(key.scalar).second) {
          issues.add_at(join_path(path, key.scalar), "duplicate key", key);
          continue;
        }
        out.entries.push_back(Node::Entry{key.scalar,
                                          convert(item.second, issues, join_path(path, key.scalar)),
                                          key.line, key.column});
      }
      break;
    }
  }
  return out;
}

void emit(YAML::Emitter& out, const Node& node) {
  switch (node.kind) {
    case Node::Kind::kNull: out << YAML::Null; break;
    case Node::Kind::kScalar:
      out << node.scalar;  // the emitter quotes what would otherwise read back differently
      break;
    case Node::Kind::kSequence:
      if (node.flow || node.items.empty()) out << YAML::Flow;  // "[]", not a dangling "-"
      out << YAML::BeginSeq;
      for (const auto& item : node.items) emit(out, item);
      out << YAML::EndSeq;
      break;
    case Node::Kind::kMap:
      out << YAML::BeginMap;
      for (const auto& entry : node.entries) {
        out << YAML::Key << entry.key << YAML::Value;
        emit(out, entry.value);
      }
      out << YAML::EndMap;
      break;
  }
}

}  // namespace

Result<Node> parse_yaml(std::string_view text, std::string_view source) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    Issues issues{std::string(source)};
    Node out = convert(root, issues, "");
    Status status = issues.status();
    if (!status) return std::move(status).error();
    return out;
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidArgument,
                      "YAML syntax error: " + e.msg + " (" + location(source, e.mark) + ")");
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, std::string("YAML error: ") + e.what());
  }
}

std::string emit_yaml(const Node& root) {
  try {
    YAML::Emitter out;
    emit(out, root);
    if (!out.good()) return "# cannot write YAML: " + out.GetLastError() + "\n";
    return std::string(out.c_str()) + "\n";
  } catch (const std::exception& e) {
    return std::string("# cannot write YAML: ") + e.what() + "\n";
  }
}

Result<std::string> read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return make_error(ErrorCode::kNotFound, "config file '" + path.string() + "' not found");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, "cannot open config file '" + path.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return make_error(ErrorCode::kIo, "cannot read config file '" + path.string() + "'");
  return text.str();
}

}  // namespace omni::config::detail
