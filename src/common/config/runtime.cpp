// Schemas of the runtime's shared config pieces (include/omni/config/runtime.hpp).
#include "omni/config/runtime.hpp"

namespace omni::config {

void describe_http_server(Schema<HttpServerConfig>& s) {
  using C = HttpServerConfig;
  s.field("host", &C::host, "Address to listen on").non_empty();
  s.field("port", &C::port, "TCP port; 0 picks an ephemeral port");
  s.field("io_threads", &C::io_threads, "Threads running the I/O event loops").range(1, 1024);
  s.field("max_connections", &C::max_connections,
          "Open connections beyond this are answered 503 and closed")
      .min(1);
  s.bytes("max_header_bytes", &C::max_header_bytes, "Largest request head (431 beyond)").min(1024);
  s.bytes("max_body_bytes", &C::max_body_bytes, "Largest request body (413 beyond)");
  s.field("header_timeout", &C::header_timeout, "Deadline for a whole request head").min(1ms);
  s.field("body_timeout", &C::body_timeout, "Deadline for a whole request body").min(1ms);
  s.field("idle_timeout", &C::idle_timeout, "Keep-alive wait for the next request").min(1ms);
  s.field("write_timeout", &C::write_timeout, "Deadline for each write to a client").min(1ms);
  s.field("shutdown_grace", &C::shutdown_grace,
          "How long stop() lets in-flight requests finish before cancelling them");
}

const std::vector<std::pair<std::string, LogLevel>>& log_level_names() {
  static const std::vector<std::pair<std::string, LogLevel>> names{
      {"trace", LogLevel::kTrace}, {"debug", LogLevel::kDebug}, {"info", LogLevel::kInfo},
      {"warn", LogLevel::kWarn},   {"error", LogLevel::kError}, {"critical", LogLevel::kCritical},
      {"off", LogLevel::kOff}};
  return names;
}

const std::vector<std::pair<std::string, LogFormat>>& log_format_names() {
  static const std::vector<std::pair<std::string, LogFormat>> names{{"text", LogFormat::kText},
                                                                    {"json", LogFormat::kJson}};
  return names;
}

void describe_log(Schema<LogConfig>& s) {
  s.field("level", &LogConfig::level, "Least severe level written").choices(log_level_names());
  s.field("format", &LogConfig::format, "Line format: human-readable text or one JSON object")
      .choices(log_format_names());
  s.field("file", &LogConfig::file, "Log file path; none writes to standard error").non_empty();
}

}  // namespace omni::config
