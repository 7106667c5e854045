// Logging: a thin, explicit layer over spdlog.
//
//   omni::log::get("proxy") ─┐
//   omni::log::get("router") ├─► one shared fan-out sink ─► destination sink (formatter)
//   ...                      ┘   (spdlog dist_sink)          stderr | file | test stream
//
// init() may be called again (e.g. by a test) and retargets every logger handed out before,
// because they all write through the one shared sink. Sinks are synchronous: a line is
// formatted and written (and flushed) by the thread that logs it. That keeps ordering simple
// and loses nothing on a crash; logs are per request, never per streamed token, so the cost
// of a write per line is acceptable. (An async sink would add a bounded queue and a thread;
// revisit if profiles show logging on the hot path.)
//
// Request ids: coroutines hop threads, so there is no thread-local "current request". A
// caller passes the id explicitly, e.g. through a RequestLogger it keeps in its frame. The id
// is written as a "request_id=<id> " message prefix, which the JSON format lifts into its own
// "request_id" field.
//
// Threading: everything here is thread-safe. init() is meant for start-up.
#pragma once

#include <spdlog/spdlog.h>

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "omni/common/result.hpp"
#include "omni/log/level.hpp"

namespace omni::log {

struct LogOptions {
  Level level = Level::kInfo;  // lines below this level are not even formatted
  Format format = Format::kText;
  std::string file;  // append to this file; empty: stderr
  // Test hooks, in priority order over `file`: a caller-owned stream (must outlive the
  // logging), or any spdlog sink. The formatter is installed on them too.
  std::ostream* stream = nullptr;
  spdlog::sink_ptr sink;
};

// "trace", "debug", "info", "warn" (or "warning"), "error", "critical", "off"; any case.
Result<Level> parse_level(std::string_view text);
// "text" or "json"; any case.
Result<Format> parse_format(std::string_view text);
std::string_view level_name(Level level) noexcept;
spdlog::level::level_enum to_spdlog(Level level) noexcept;

// Installs the destination, format and level. Errors: kIo if the file cannot be opened for
// appending or its directory does not exist (missing directories are not created); nothing
// changes then.
Status init(const LogOptions& options);

// The named logger for a component, created on first use at the current level.
std::shared_ptr<spdlog::logger> get(std::string_view name);

// The message prefix that carries a request id: "request_id=<id> ". Characters that would
// break the prefix (spaces, control bytes, quotes, non-ASCII) become '_', and the id is cut at
// 128 bytes, because ids may come from clients.
std::string request_prefix(std::string_view request_id);

// A logger bound to one request; cheap to copy into a coroutine frame.
class RequestLogger {
 public:
  RequestLogger(std::shared_ptr<spdlog::logger> logger, std::string_view request_id)
      : logger_(std::move(logger)), prefix_(request_prefix(request_id)) {}

  template <class... Args>
  void log(Level level, fmt::format_string<Args...> format, Args&&... args) const {
    const auto spd_level = to_spdlog(level);
    if (!logger_->should_log(spd_level)) return;
    fmt::memory_buffer line;
    line.append(prefix_.data(), prefix_.data() + prefix_.size());
    fmt::format_to(std::back_inserter(line), format, std::forward<Args>(args)...);
    logger_->log(spd_level, std::string_view(line.data(), line.size()));
  }
  template <class... Args>
  void debug(fmt::format_string<Args...> format, Args&&... args) const {
    log(Level::kDebug, format, std::forward<Args>(args)...);
  }
  template <class... Args>
  void info(fmt::format_string<Args...> format, Args&&... args) const {
    log(Level::kInfo, format, std::forward<Args>(args)...);
  }
  template <class... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) const {
    log(Level::kWarn, format, std::forward<Args>(args)...);
  }
  template <class... Args>
  void error(fmt::format_string<Args...> format, Args&&... args) const {
    log(Level::kError, format, std::forward<Args>(args)...);
  }

  spdlog::logger& logger() const noexcept { return *logger_; }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::string prefix_;
};

}  // namespace omni::log
