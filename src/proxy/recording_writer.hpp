// A ResponseWriter that passes everything through to the real one and remembers the status
// and the bytes sent, so that routes without a Call of their own (models, admin, probes, the
// router's 404/405) still get an access-log line and a status metric.
#pragma once

#include "omni/http/server.hpp"

namespace omni::proxy {

class RecordingWriter final : public http::ResponseWriter {
 public:
  explicit RecordingWriter(http::ResponseWriter& inner) : inner_(inner) {}

  Task<Status> send(http::Response response) override {
    status_ = response.status;
    bytes_ += response.body.size();
    co_return co_await inner_.send(std::move(response));
  }
  Task<Status> begin_stream(int status, http::Headers headers) override {
    status_ = status;
    co_return co_await inner_.begin_stream(status, std::move(headers));
  }
  Task<Status> write_chunk(std::string_view data) override {
    bytes_ += data.size();
    co_return co_await inner_.write_chunk(data);
  }
  Task<Status> end_stream() override { co_return co_await inner_.end_stream(); }
  bool started() const noexcept override { return inner_.started(); }
  bool watch_close(std::function<void()> on_gone) override {
    return inner_.watch_close(std::move(on_gone));
  }
  void unwatch_close() override { inner_.unwatch_close(); }

  int status() const noexcept { return status_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  http::ResponseWriter& inner_;
  int status_ = 0;  // 0: nothing was sent
  std::size_t bytes_ = 0;
};

}  // namespace omni::proxy
