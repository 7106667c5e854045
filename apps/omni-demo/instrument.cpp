#include "instrument.hpp"

#include <chrono>
#include <string_view>
#include <utility>

#include "omni/log/log.hpp"

namespace omni::demo {
namespace {

// Forwards to the server's writer, remembering the status and the bytes of body sent.
class RecordingWriter final : public http::ResponseWriter {
 public:
  explicit RecordingWriter(http::ResponseWriter& inner) : inner_(inner) {}

  Task<Status> send(http::Response response) override {
    status_ = response.status;
    bytes_out_ += response.body.size();
    co_return co_await inner_.send(std::move(response));
  }
  Task<Status> begin_stream(int status, http::Headers headers) override {
    status_ = status;
    co_return co_await inner_.begin_stream(status, std::move(headers));
  }
  Task<Status> write_chunk(std::string_view data) override {
    bytes_out_ += data.size();
    co_return co_await inner_.write_chunk(data);
  }
  Task<Status> end_stream() override { co_return co_await inner_.end_stream(); }
  bool started() const noexcept override { return inner_.started(); }

  int status() const noexcept { return status_; }
  std::uint64_t bytes_out() const noexcept { return bytes_out_; }

 private:
  http::ResponseWriter& inner_;
  int status_ = 500;  // what the server answers when a handler sends nothing
  std::uint64_t bytes_out_ = 0;
};

}  // namespace

Result<std::unique_ptr<Instrumentation>> Instrumentation::create(metrics::Registry& registry,
                                                                 log::AccessLogWriter* access_log) {
  auto requests = registry.counter("omni_demo_requests_total",
                                   "Requests answered by omni-demo's routes.", {"route", "status"});
  if (!requests) return std::move(requests).error();
  auto latency = registry.histogram("omni_demo_request_duration_seconds",
                                    "Time from request to the end of the response.", {"route"},
                                    metrics::default_latency_buckets());
  if (!latency) return std::move(latency).error();
  return std::unique_ptr<Instrumentation>(new Instrumentation(*requests, *latency, access_log));
}

http::Handler Instrumentation::wrap(std::string route, http::Handler handler) {
  // Children are looked up once here, not per request: the hot path only adds to atomics.
  auto latency = latency_->with({route});
  return [this, route = std::move(route), handler = std::move(handler),
          latency = latency ? *latency : nullptr](http::Request& request,
                                                  http::ResponseWriter& writer) -> Task<void> {
    const auto wall = std::chrono::system_clock::now();
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t bytes_in = request.body.size();  // handlers may move the body away
    RecordingWriter recorder(writer);
    co_await handler(request, recorder);
    const auto elapsed = std::chrono::steady_clock::now() - start;

    if (latency) latency->observe(std::chrono::duration<double>(elapsed).count());
    if (auto counter = requests_->with({route, std::to_string(recorder.status())})) {
      (*counter)->inc();
    }
    if (access_log_) {
      log::AccessRecord record;
      record.time = wall;
      record.request_id = request.headers.get("X-Request-Id").value_or("");
      record.remote = request.remote;
      record.method = http::method_name(request.method);
      record.path = request.path();
      record.status = recorder.status();
      record.bytes_in = bytes_in;
      record.bytes_out = recorder.bytes_out();
      record.duration = std::chrono::duration_cast<Duration>(elapsed);
      record.user_agent = request.headers.get("User-Agent").value_or("");
      if (Status written = access_log_->write(record); !written) {
        log::get("demo")->warn("access log: {}", written.error().to_string());
      }
    }
  };
}

}  // namespace omni::demo
