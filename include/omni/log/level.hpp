// Log levels and formats, apart from spdlog so configuration code can name them without
// compiling spdlog.
#pragma once

namespace omni::log {

enum class Level { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };
enum class Format {
  kText,  // 2024-05-01T12:00:00.123456Z info proxy: message
  kJson,  // {"ts":"2024-05-01T12:00:00.123456Z","level":"info","logger":"proxy","msg":"..."}
};

}  // namespace omni::log
