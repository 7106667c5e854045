// A GoogleTest fixture for omni::http::Client tests: one io_context, a scripted raw-socket
// server (client_script_server.hpp) and the client under test, with helpers to run coroutines.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "client_script_server.hpp"
#include "omni/http/client.hpp"

namespace omni::http::testing {

class ClientFixture : public ::testing::Test {
 protected:
  ScriptServer& serve(ScriptServer::Script script) {
    server_ = std::make_unique<ScriptServer>(io_, std::move(script));
    return *server_;
  }
  Client& make_client(ClientOptions options = {}) {
    client_ = std::make_unique<Client>(io_.get_executor(), options);
    return *client_;
  }
  void run(Task<void> task) { run_task(io_, std::move(task)); }
  // Named locals rather than temporaries in the co_await expressions: GCC 12 mishandles
  // brace-initialised temporaries there (it destroys them from the wrong address).
  Task<Result<Response>> get(std::string_view target = "/") {
    Request request;
    request.target = std::string(target);
    const Endpoint to = server_->endpoint();
    co_return co_await client_->send(to, std::move(request));
  }
  Task<Result<std::unique_ptr<ResponseStream>>> open_get() {
    Request request;
    const Endpoint to = server_->endpoint();
    co_return co_await client_->open(to, std::move(request));
  }
  // Runs get() and describes its outcome with `describe`, or the error as "error: <code>".
  template <class Describe>
  std::string get_outcome(Describe describe) {
    std::string outcome;
    run([&]() -> Task<void> {
      auto response = co_await get();
      outcome = response.ok() ? describe(*response)
                              : "error: " + std::string(error_code_name(response.error().code));
    }());
    return outcome;
  }

  boost::asio::io_context io_;
  std::unique_ptr<ScriptServer> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace omni::http::testing
