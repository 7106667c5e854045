// What each engine serves, from its GET /v1/models: the proxy's own /v1/models answers from
// here (the union by id over the engines), so a stalled engine never stalls the route, and the
// engines' max_model_len bounds the output of requests that give no max_tokens.
//
// Filled by the health checker (one fetch per node when it is first seen healthy, then every
// refresh period) and by the route itself for engines not known yet, within a short deadline.
//
// Threading: every method is thread-safe (one mutex; the lists are small and read rarely).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"

namespace omni::proxy {

struct ModelList {
  // Each model object as the engine wrote it, with its id.
  std::vector<std::pair<std::string, std::string>> models;
  std::uint64_t max_model_len = 0;  // the smallest the engine reported; 0: none
};

// An engine's /v1/models body; kInvalidArgument when it is not {"data": [...]} JSON.
Result<ModelList> parse_models(std::string_view body);

class ModelCatalog {
 public:
  void store(const std::string& node, ModelList list, TimePoint at);
  // When `node`'s list was last stored, if ever.
  std::optional<TimePoint> fetched_at(const std::string& node) const;
  // The OpenAI list body, the union by id over `nodes` in their order; nullopt when none of
  // them has a known list.
  std::optional<std::string> union_body(const std::vector<std::string>& nodes) const;
  // The smallest max_model_len any engine reported; 0 when none did.
  std::uint64_t max_model_len() const;

 private:
  struct Entry {
    ModelList list;
    TimePoint at{};
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> by_node_;
};

}  // namespace omni::proxy
