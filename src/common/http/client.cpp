// The HTTP client's public face: endpoints, request conversion, Client and ResponseStream.
// Connection management is in client_pool.cpp, the exchange itself in client_exchange.cpp.
#include "omni/http/client.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <utility>
#include <vector>

#include "client_impl.hpp"

#ifndef OMNI_VERSION
#define OMNI_VERSION "0"
#endif

namespace omni::http {
namespace {

constexpr std::string_view kUserAgent = "omni/" OMNI_VERSION;
constexpr std::size_t kStreamPieceBytes = 16 * 1024;

Error invalid(std::string_view text, std::string_view why) {
  return make_error(ErrorCode::kInvalidArgument,
                    "endpoint '" + std::string(text) + "': " + std::string(why));
}

void append_field(std::string& head, std::string_view name, std::string_view value) {
  head.append(name);
  head.append(": ");
  head.append(value);
  head.append("\r\n");
}

// "host:port" ("[v6]:port") appended in place: the Host field of every request, without a
// temporary string.
void append_endpoint(std::string& out, const Endpoint& e) {
  const bool ipv6 = e.host.find(':') != std::string::npos;
  if (ipv6) out += '[';
  out += e.host;
  if (ipv6) out += ']';
  out += ':';
  std::array<char, 8> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), e.port).ptr;
  out.append(digits.data(), end);
}

// RFC 9110 token characters.
bool is_token(std::string_view text) noexcept {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum || c == '-' || c == '_') continue;  // what real names use, checked first
    if (std::string_view("!#$%&'*+.^`|~").find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// The head is written here rather than by Beast's serializer: one string, one allocation,
// and the request goes out as two buffers (head, body) in one gathered write.
Result<detail::WireRequest> to_wire(const Endpoint& to, Request request) {
  if (request.method == Method::kUnknown) {
    return make_error(ErrorCode::kInvalidArgument, "request method is unknown");
  }
  const std::string_view method = method_name(request.method);
  if (request.target.empty() || has_line_break(request.target) ||
      request.target.find(' ') != std::string::npos) {
    return make_error(ErrorCode::kInvalidArgument, "request target is malformed");
  }
  detail::WireRequest wire;
  wire.head_request = request.method == Method::kHead;
  std::size_t size = method.size() + request.target.size() + 64 + to.host.size();
  for (const auto& [name, value] : request.headers) size += name.size() + value.size() + 4;
  wire.head.reserve(size);
  wire.head.append(method);
  wire.head += ' ';
  wire.head.append(request.target);
  wire.head.append(" HTTP/1.1\r\n");
  bool has_host = false;
  bool has_agent = false;
  for (const auto& [name, value] : request.headers) {
    if (!is_token(name) || has_line_break(value)) {
      return make_error(ErrorCode::kInvalidArgument, "request header '" + name + "' is malformed");
    }
    // The framing is ours to decide from the body, never the caller's.
    if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding")) continue;
    has_host = has_host || iequals(name, "Host");
    has_agent = has_agent || iequals(name, "User-Agent");
    append_field(wire.head, name, value);
  }
  if (!has_host) {
    wire.head.append("Host: ");
    append_endpoint(wire.head, to);
    wire.head.append("\r\n");
  }
  if (!has_agent) append_field(wire.head, "User-Agent", kUserAgent);
  // As Beast's prepare_payload: a length whenever there is a body, and for the methods whose
  // empty body still means something (RFC 9110 section 8.6).
  const Method m = request.method;
  if (!request.body.empty() || m == Method::kPost || m == Method::kPut || m == Method::kPatch ||
      m == Method::kOptions) {
    append_field(wire.head, "Content-Length", std::to_string(request.body.size()));
  }
  wire.head.append("\r\n");
  wire.body = std::move(request.body);
  return wire;
}

class StreamImpl final : public ResponseStream {
 public:
  StreamImpl(std::shared_ptr<detail::ClientCore> client, Endpoint to, detail::Exchange exchange,
             Abort* abort)
      : client_(std::move(client)),
        to_(std::move(to)),
        exchange_(std::move(exchange)),
        abort_(abort) {
    detail::copy_head(*exchange_.parser, status_, headers_);
  }

  int status() const noexcept override { return status_; }
  const Headers& headers() const noexcept override { return headers_; }

  Task<Result<std::optional<std::string>>> next() override {
    if (failure_) co_return *failure_;
    while (exchange_.connection) {
      if (exchange_.parser->is_done()) {
        detail::finish_exchange(*client_, to_, exchange_);
        break;
      }
      if (abort_ && abort_->aborted()) {
        ec_abort();
        co_return *failure_;
      }
      if (piece_.empty()) piece_.resize(kStreamPieceBytes);
      auto& target = exchange_.parser->body();
      target.data = piece_.data();
      target.size = piece_.size();
      std::optional<detail::AbortBinding> bound;
      if (abort_) bound.emplace(abort_, *exchange_.connection);
      auto ec = co_await detail::read_some(*exchange_.connection, *exchange_.parser,
                                           client_->options.read_timeout);
      bound.reset();
      const std::size_t produced = piece_.size() - target.size;
      target.data = nullptr;
      if (ec && abort_ && abort_->aborted()) {
        ec_abort();
        co_return *failure_;
      }
      if (ec) {
        exchange_.connection.reset();  // mid-body: it cannot be reused
        failure_ = detail::error_from(ec, to_, "reading the response body");
        co_return *failure_;
      }
      if (produced > 0) {
        const std::size_t more = parse_buffered(produced);
        co_return std::optional<std::string>(std::in_place, piece_.data(), produced + more);
      }
    }
    co_return std::optional<std::string>{};
  }

 private:
  // Appends to the piece (after its first `used` bytes) whatever the bytes already received
  // hold: a read often brings several chunks (SSE events), and the parser hands them out one
  // per put(). No socket read here, so nothing already received waits for more to arrive.
  std::size_t parse_buffered(std::size_t used) {
    auto& parser = *exchange_.parser;
    auto& buffer = exchange_.connection->buffer;
    auto& target = parser.body();
    std::size_t added = 0;
    while (buffer.size() > 0 && !parser.is_done() && used + added < piece_.size()) {
      target.data = piece_.data() + used + added;
      target.size = piece_.size() - used - added;
      boost::system::error_code ec;
      const std::size_t consumed = parser.put(buffer.data(), ec);
      buffer.consume(consumed);
      const std::size_t produced = piece_.size() - used - added - target.size;
      added += produced;
      if (ec == detail::bhttp::error::need_more || ec == detail::bhttp::error::need_buffer) break;
      if (ec) {
        // Handed out after what was good: the next call reports it.
        exchange_.connection.reset();
        failure_ = detail::error_from(ec, to_, "reading the response body");
        break;
      }
      if (consumed == 0 && produced == 0) break;
    }
    target.data = nullptr;
    return added;
  }

  void ec_abort() {
    exchange_.connection.reset();  // mid-body: it cannot be reused
    failure_ = detail::aborted_error(to_);
  }

  std::shared_ptr<detail::ClientCore> client_;  // keeps the pool alive past the Client itself
  Endpoint to_;
  detail::Exchange exchange_;
  int status_ = 0;
  Headers headers_;
  std::vector<char> piece_;  // reused read buffer; each piece handed out is an exact copy
  std::optional<Error> failure_;
  Abort* abort_;  // may end a read early; null when none was given
};

Task<Result<Response>> send_on(std::shared_ptr<detail::ClientCore> impl, Endpoint to,
                               Request request, Abort* abort) {
  auto wire = to_wire(to, std::move(request));
  if (!wire.ok()) co_return std::move(wire).error();
  auto exchange =
      co_await detail::start_exchange(*impl, to, *wire, impl->options.max_body_bytes, abort);
  if (!exchange.ok()) co_return std::move(exchange).error();
  co_return co_await detail::read_whole(*impl, to, std::move(*exchange), abort);
}

Task<Result<std::unique_ptr<ResponseStream>>> open_on(std::shared_ptr<detail::ClientCore> impl,
                                                      Endpoint to, Request request, Abort* abort) {
  auto wire = to_wire(to, std::move(request));
  if (!wire.ok()) co_return std::move(wire).error();
  // The body is handed out piece by piece and never accumulated, so its total length is not
  // a memory risk: a stream (SSE) may legitimately run for hours.
  auto exchange = co_await detail::start_exchange(*impl, to, *wire,
                                                  std::numeric_limits<std::uint64_t>::max(), abort);
  if (!exchange.ok()) co_return std::move(exchange).error();
  co_return std::unique_ptr<ResponseStream>(
      std::make_unique<StreamImpl>(impl, std::move(to), std::move(*exchange), abort));
}

}  // namespace

// The facade's state is the pool; the nesting only keeps the public header free of it.
struct Client::Impl final : detail::ClientCore {
  using ClientCore::ClientCore;
};

std::string Endpoint::to_string() const {
  std::string text;
  text.reserve(host.size() + 8);
  append_endpoint(text, *this);
  return text;
}

namespace {

struct Stripped {
  std::string_view rest;  // "host:port"
  bool tls = false;       // written as https://
};

// "http://host:port", "https://host:port/" -> "host:port": engines' addresses are often copied
// as URLs.
Result<Stripped> without_scheme(std::string_view text) {
  const std::size_t separator = text.find("://");
  if (separator == std::string_view::npos) return Stripped{text};
  std::string scheme(text.substr(0, separator));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (scheme != "http" && scheme != "https") {
    return invalid(text, "unsupported scheme '" + scheme +
                             "://' (expected host:port, http://host:port or https://host:port)");
  }
  std::string_view rest = text.substr(separator + 3);
  if (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) {
    return invalid(text, "a path is not allowed here (expected http://host:port)");
  }
  return Stripped{rest, scheme == "https"};
}

}  // namespace

Result<Endpoint> Endpoint::parse(std::string_view written) {
  auto stripped = without_scheme(written);
  if (!stripped) return std::move(stripped).error();
  const std::string_view text = stripped->rest;
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return invalid(written, "missing ']' after IPv6 address");
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid(written, "missing port (expected [address]:port)");
    }
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return invalid(written, "missing port (expected host:port)");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return invalid(written, "an IPv6 address needs brackets: [address]:port");
    }
  }
  if (host.empty()) return invalid(written, "empty host");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return invalid(written, "bad port '" + std::string(port) + "' (expected 1..65535)");
  }
  return Endpoint{std::string(host), static_cast<std::uint16_t>(value), stripped->tls};
}

Client::Client(boost::asio::any_io_executor executor, ClientOptions options)
    : impl_(std::make_shared<Impl>(std::move(executor), std::move(options))) {}

Client::~Client() { impl_->shutdown(); }

Task<Result<Response>> Client::send(const Endpoint& to, Request request, Abort* abort) {
  return send_on(impl_, to, std::move(request), abort);
}

Task<Result<std::unique_ptr<ResponseStream>>> Client::open(const Endpoint& to, Request request,
                                                           Abort* abort) {
  return open_on(impl_, to, std::move(request), abort);
}

void Client::close_idle() { impl_->close_idle(); }

std::size_t Client::idle_connections() const noexcept { return impl_->idle_count(); }

}  // namespace omni::http
