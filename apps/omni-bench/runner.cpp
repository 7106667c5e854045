#include "runner.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <csignal>
#include <cstdlib>
#include <exception>

#include "omni/http/client.hpp"
#include "omni/http/sse.hpp"
#include "omni/workload/openai_request.hpp"
#include "omni/workload/pacing.hpp"

namespace omni::bench {
namespace {

namespace asio = boost::asio;
using benchstat::ErrorKind;
using benchstat::RecordBuilder;
using benchstat::RequestRecord;

constexpr std::size_t kMaxErrorBodyBytes = 64 * 1024;
// Without --concurrency an open loop is still bounded: past this many streams in flight the
// server is hopelessly behind, and the next send waits for a slot rather than a socket.
constexpr std::uint64_t kDefaultMaxInFlight = 4096;

ErrorKind kind_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnavailable: return ErrorKind::kConnect;
    case ErrorCode::kTimeout: return ErrorKind::kTimeout;
    case ErrorCode::kProtocol:
    case ErrorCode::kTooLarge: return ErrorKind::kMalformedStream;
    default: return ErrorKind::kOther;
  }
}

// The OpenAI error message of an error body, or its first bytes.
std::string error_text(int status, const std::string& body) {
  boost::system::error_code ec;
  auto doc = boost::json::parse(body, ec);
  if (!ec && doc.is_object()) {
    if (const auto* error = doc.get_object().if_contains("error");
        error != nullptr && error->is_object()) {
      if (const auto* msg = error->get_object().if_contains("message");
          msg != nullptr && msg->is_string()) {
        return "HTTP " + std::to_string(status) + ": " + std::string(msg->get_string());
      }
    }
  }
  return "HTTP " + std::to_string(status) + ": " + body.substr(0, 200);
}

http::ClientOptions client_options(const Options& o) {
  http::ClientOptions c;
  c.connect_timeout = std::min<Duration>(o.timeout, std::chrono::seconds(10));
  c.write_timeout = o.timeout;
  c.read_timeout = o.timeout;
  c.max_idle_per_endpoint = std::max<std::size_t>(64, o.concurrency);
  return c;
}

class Runner {
 public:
  Runner(asio::io_context& io, const Options& options, workload::Workload& workload,
         Progress& progress)
      : io_(io),
        options_(options),
        workload_(workload),
        progress_(progress),
        client_(io.get_executor(), client_options(options)),
        pacer_(options.pacing, options.seed),
        pace_timer_(io),
        wake_(io),
        signals_(io, SIGINT, SIGTERM) {
    body_options_ = options.body;
  }

  RunResult run() {
    signals_.async_wait([this](const boost::system::error_code& ec, int) { on_signal(ec); });
    asio::co_spawn(io_, dispatch(), [this](std::exception_ptr e) {
      if (e) result_.workload_error = make_error(ErrorCode::kInternal, "the dispatcher failed");
      io_.stop();  // every request has ended: nothing else is worth waiting for
    });
    io_.run();
    return std::move(result_);
  }

 private:
  // First signal: send nothing more and let in-flight requests end. Second: stop now.
  void on_signal(const boost::system::error_code& ec) {
    if (ec) return;
    if (stop_) {
      result_.duration_s = now_s();
      io_.stop();
      return;
    }
    result_.interrupted = true;
    stop_ = true;
    pace_timer_.cancel();
    wake_.cancel();
    signals_.async_wait([this](const boost::system::error_code& again, int) { on_signal(again); });
  }

  double now_s() const { return to_seconds(clock_.now().time_since_epoch()); }

  Task<void> dispatch() {
    while (!stop_ && (options_.max_requests == 0 || result_.issued < options_.max_requests)) {
      auto next = workload_.next();
      if (!next) {
        result_.workload_error = next.error();
        break;
      }
      if (!next->has_value()) break;
      workload::RequestSpec spec = std::move(**next);
      const double at = pacer_.send_at(spec);
      if (options_.duration_s && at >= *options_.duration_s) break;
      co_await sleep_until(at);
      co_await wait_for_slot();
      if (stop_ || (options_.duration_s && now_s() >= *options_.duration_s)) break;
      launch(std::move(spec));
    }
    while (in_flight_ > 0) co_await wait_for_wake();
    result_.duration_s = now_s();
    progress_.finish(result_.duration_s, ok_, failed_);
  }

  Task<void> sleep_until(double at_s) {
    const double wait = at_s - now_s();
    if (wait <= 0 || stop_) co_return;
    pace_timer_.expires_after(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(from_seconds(wait)));
    co_await pace_timer_.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  Task<void> wait_for_slot() {
    const std::uint64_t cap = options_.concurrency > 0 ? options_.concurrency : kDefaultMaxInFlight;
    while (!stop_ && in_flight_ >= cap) co_await wait_for_wake();
  }

  // Woken when a request ends or a signal arrives.
  Task<void> wait_for_wake() {
    wake_.expires_at(asio::steady_timer::time_point::max());
    co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
  }

  void launch(workload::RequestSpec spec) {
    ++in_flight_;
    ++result_.issued;
    const double start = now_s();
    const std::uint64_t index = spec.index;
    asio::co_spawn(io_, exchange(std::move(spec), start),
                   [this, index, start](std::exception_ptr e, RequestRecord record) {
                     if (e) {
                       record = RecordBuilder(index, start, 0)
                                    .fail(now_s(), ErrorKind::kOther, "internal exception");
                     }
                     finished(std::move(record));
                   });
  }

  void finished(RequestRecord record) {
    --in_flight_;
    ++(record.ok ? ok_ : failed_);
    result_.records.push_back(std::move(record));
    progress_.update(now_s(), ok_, failed_, in_flight_);
    wake_.cancel();
  }

  // One request: send, then read the SSE stream to its end.
  Task<RequestRecord> exchange(workload::RequestSpec spec, double start) {
    RecordBuilder builder(spec.index, start, spec.input_tokens);
    if (spec.session) builder.set_session(spec.session->session_id);
    http::Request request;
    request.method = http::Method::kPost;
    request.target = options_.target;
    request.headers.add("Content-Type", "application/json");
    request.headers.add("Accept", "text/event-stream");
    request.headers.add("X-Request-Id", options_.request_id_prefix + std::to_string(spec.index));
    request.body = workload::request_body(spec, body_options_);
    auto opened = co_await client_.open(options_.server, std::move(request));
    if (!opened)
      co_return builder.fail(now_s(), kind_of(opened.error().code), opened.error().to_string());
    std::unique_ptr<http::ResponseStream> stream = std::move(*opened);
    if (!result_.header_speed) {
      if (auto speed = stream->headers().get("X-Omni-Sim-Speed")) {
        const double v = std::atof(std::string(*speed).c_str());
        if (v > 0) result_.header_speed = v;
      }
    }
    if (stream->status() != 200) {
      const int status = stream->status();
      std::string body = co_await read_error_body(*stream);
      co_return builder.fail(now_s(), ErrorKind::kHttpStatus, error_text(status, body), status);
    }
    co_return co_await read_events(*stream, builder, start);
  }

  Task<std::string> read_error_body(http::ResponseStream& stream) {
    std::string body;
    while (body.size() < kMaxErrorBodyBytes) {
      auto piece = co_await stream.next();
      if (!piece || !piece->has_value()) break;
      body += **piece;
    }
    co_return body;
  }

  Task<RequestRecord> read_events(http::ResponseStream& stream, RecordBuilder& builder,
                                  double start) {
    http::SseParser parser;
    std::vector<http::SseEvent> events;
    bool saw_done = false;
    const double deadline = start + to_seconds(options_.timeout);
    while (true) {
      auto piece = co_await stream.next();
      const double now = now_s();
      if (!piece)
        co_return builder.fail(now, kind_of(piece.error().code), piece.error().to_string(), 200);
      if (!piece->has_value()) break;
      events.clear();
      if (auto fed = parser.feed(**piece, events); !fed) {
        co_return builder.fail(now, ErrorKind::kMalformedStream, fed.error().to_string(), 200);
      }
      for (const http::SseEvent& event : events) {
        if (saw_done) continue;  // nothing counts after [DONE]
        auto chunk = benchstat::parse_stream_chunk(event.data);
        if (!chunk)
          co_return builder.fail(now, ErrorKind::kMalformedStream, chunk.error().to_string(), 200);
        builder.on_chunk(now, *chunk);
        saw_done = chunk->done;
      }
      if (now > deadline)
        co_return builder.fail(now, ErrorKind::kTimeout, "over the request timeout", 200);
    }
    const double end = now_s();
    if (parser.finish())
      co_return builder.fail(end, ErrorKind::kMalformedStream, "stream cut mid-event", 200);
    co_return builder.finish(end, saw_done);
  }

  asio::io_context& io_;
  const Options& options_;
  workload::Workload& workload_;
  Progress& progress_;
  http::Client client_;
  workload::Pacer pacer_;
  workload::BodyOptions body_options_;
  SteadyClock clock_;
  asio::steady_timer pace_timer_;
  asio::steady_timer wake_;
  asio::signal_set signals_;
  bool stop_ = false;
  std::uint64_t in_flight_ = 0;
  std::uint64_t ok_ = 0;
  std::uint64_t failed_ = 0;
  RunResult result_;
};

}  // namespace

RunResult run_benchmark(const Options& options, workload::Workload& workload, Progress& progress) {
  asio::io_context io;
  Runner runner(io, options, workload, progress);
  return runner.run();
}

}  // namespace omni::bench
