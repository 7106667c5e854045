#include "json_formatter.hpp"

#include <string>
#include <string_view>

#include "omni/common/json_text.hpp"

namespace omni::log {
namespace {

constexpr std::string_view kRequestKey = "request_id=";

std::string_view json_level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "off";
  }
}

// Splits "request_id=<id> rest" into id and rest; no prefix: empty id, whole message.
std::pair<std::string_view, std::string_view> split_request_id(std::string_view message) {
  if (!message.starts_with(kRequestKey)) return {{}, message};
  const std::string_view tail = message.substr(kRequestKey.size());
  const std::size_t space = tail.find(' ');
  if (space == std::string_view::npos) return {tail, {}};
  return {tail.substr(0, space), tail.substr(space + 1)};
}

}  // namespace

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string_view payload(msg.payload.data(), msg.payload.size());
  const auto [request_id, text] = split_request_id(payload);
  std::string line;
  line.reserve(96 + payload.size());
  line += "{\"ts\":\"";
  json::append_timestamp(line, msg.time);
  line += "\",\"level\":\"";
  line += json_level_name(msg.level);
  line += "\",\"logger\":";
  json::append_string(line, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
  if (!request_id.empty()) {
    line += ",\"request_id\":";
    json::append_string(line, request_id);
  }
  line += ",\"msg\":";
  json::append_string(line, text);
  line += "}\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

}  // namespace omni::log
