// The first omni-serve: a real model behind vLLM's HTTP surface, one request at a time.
//   GET /health, GET /v1/models, POST /v1/completions (text or token-id prompts, streaming
//   or not, temperature 0 = greedy, max_tokens, ignore_eos, return_token_ids).
// Request parsing and response bodies are omni-sim's vLLM protocol code (src/sim/request,
// response), so both engines answer byte for byte alike. Part 2 replaces the one-at-a-time
// lock with the omni_engine scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "omni/common/result.hpp"
#include "omni/model/engine.hpp"

namespace omni::model {

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
  unsigned io_threads = 2;        // one answers /health while the other generates
  std::string served_model_name;  // default: the model's name
};

class ModelServer {
 public:
  // `model` and `engine` must outlive the server. The tokenizer is the model's tokenizer.json
  // (text prompts need it; token-id prompts do not).
  static Result<std::unique_ptr<ModelServer>> create(const LoadedModel& model, Engine& engine,
                                                     ServeOptions options);
  ~ModelServer();
  Status start();
  std::uint16_t port() const noexcept;
  void stop();

  struct Impl;

 private:
  explicit ModelServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::model
