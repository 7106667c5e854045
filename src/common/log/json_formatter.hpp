// spdlog formatter for Format::kJson (internal to omni_log).
#pragma once

#include <spdlog/formatter.h>

#include <memory>

namespace omni::log {

// One JSON object per line: ts, level, logger, request_id (when the message carries the
// request prefix), msg.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

}  // namespace omni::log
