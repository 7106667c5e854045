#include "omni/log/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "json_formatter.hpp"

namespace omni::log {
namespace {

// The logger that owns the shared fan-out sink. It lives in spdlog's registry like every
// other logger, so Omni keeps no logging state of its own.
constexpr const char* kRootLogger = "omni";
constexpr std::size_t kMaxRequestIdBytes = 128;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Registers `logger`, or returns the one another thread registered under its name first.
std::shared_ptr<spdlog::logger> register_or_get(std::shared_ptr<spdlog::logger> logger) {
  logger->set_level(spdlog::get_level());
  logger->flush_on(spdlog::level::trace);  // every line reaches the file before we go on
  try {
    spdlog::register_logger(logger);
    return logger;
  } catch (const spdlog::spdlog_ex&) {
    if (auto existing = spdlog::get(logger->name())) return existing;
    throw;
  }
}

std::shared_ptr<spdlog::sinks::dist_sink_mt> shared_sink() {
  auto root = spdlog::get(kRootLogger);
  if (!root) {
    auto fan_out = std::make_shared<spdlog::sinks::dist_sink_mt>();
    fan_out->set_sinks({std::make_shared<spdlog::sinks::stderr_sink_mt>()});
    root = register_or_get(std::make_shared<spdlog::logger>(kRootLogger, fan_out));
  }
  return std::static_pointer_cast<spdlog::sinks::dist_sink_mt>(root->sinks().front());
}

Result<spdlog::sink_ptr> make_destination(const LogOptions& options) {
  if (options.stream != nullptr) {
    return spdlog::sink_ptr(
        std::make_shared<spdlog::sinks::ostream_sink_mt>(*options.stream, /*force_flush=*/true));
  }
  if (options.sink) return options.sink;
  if (options.file.empty()) {
    return spdlog::sink_ptr(std::make_shared<spdlog::sinks::stderr_sink_mt>());
  }
  // spdlog would create missing directories; a typo in a path should be an error instead.
  const std::filesystem::path parent = std::filesystem::path(options.file).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::is_directory(parent, ec)) {
    return make_error(ErrorCode::kIo, "cannot open log file '" + options.file +
                                          "': no such directory '" + parent.string() + "'");
  }
  try {
    return spdlog::sink_ptr(
        std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file, /*truncate=*/false));
  } catch (const spdlog::spdlog_ex& e) {
    return make_error(ErrorCode::kIo, "cannot open log file '" + options.file + "': " + e.what());
  }
}

std::unique_ptr<spdlog::formatter> make_formatter(Format format) {
  if (format == Format::kJson) return std::make_unique<JsonFormatter>();
  return std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%fZ %l %n: %v",
                                                     spdlog::pattern_time_type::utc);
}

}  // namespace

Result<Level> parse_level(std::string_view text) {
  const std::string name = lower(text);
  if (name == "trace") return Level::kTrace;
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "error") return Level::kError;
  if (name == "critical") return Level::kCritical;
  if (name == "off") return Level::kOff;
  return make_error(ErrorCode::kInvalidArgument,
                    "log level '" + std::string(text) +
                        "': expected trace, debug, info, warn, error, critical or off");
}

Result<Format> parse_format(std::string_view text) {
  const std::string name = lower(text);
  if (name == "text") return Format::kText;
  if (name == "json") return Format::kJson;
  return make_error(ErrorCode::kInvalidArgument,
                    "log format '" + std::string(text) + "': expected text or json");
}

std::string_view level_name(Level level) noexcept {
  switch (level) {
    case Level::kTrace: return "trace";
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
    case Level::kCritical: return "critical";
    case Level::kOff: return "off";
  }
  return "off";
}

spdlog::level::level_enum to_spdlog(Level level) noexcept {
  switch (level) {
    case Level::kTrace: return spdlog::level::trace;
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarn: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kCritical: return spdlog::level::critical;
    case Level::kOff: return spdlog::level::off;
  }
  return spdlog::level::off;
}

Status init(const LogOptions& options) {
  Result<spdlog::sink_ptr> destination = make_destination(options);
  if (!destination) return std::move(destination).error();
  destination.value()->set_formatter(make_formatter(options.format));
  shared_sink()->set_sinks({std::move(destination).value()});
  // Sets the level of every registered logger and the one get() gives new loggers.
  spdlog::set_level(to_spdlog(options.level));
  return ok_status();
}

std::shared_ptr<spdlog::logger> get(std::string_view name) {
  const std::string key(name);
  if (auto existing = spdlog::get(key)) return existing;
  return register_or_get(std::make_shared<spdlog::logger>(key, shared_sink()));
}

std::string request_prefix(std::string_view request_id) {
  std::string prefix = "request_id=";
  const std::string_view id = request_id.substr(0, kMaxRequestIdBytes);
  for (char c : id) {
    const bool safe = c > ' ' && c < 0x7F && c != '"' && c != '\\';
    prefix += safe ? c : '_';
  }
  if (id.empty()) prefix += '-';
  prefix += ' ';
  return prefix;
}

}  // namespace omni::log
