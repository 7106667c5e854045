#include "recent_decisions.hpp"

#include <boost/json.hpp>

namespace omni::proxy {

void RecentDecisions::add(RoutingDecision decision) {
  std::lock_guard lock(mu_);
  if (ring_.size() >= capacity_) ring_.pop_front();
  ring_.push_back(std::move(decision));
}

std::string RecentDecisions::json() const {
  namespace json = boost::json;
  json::array list;
  {
    std::lock_guard lock(mu_);
    for (auto it = ring_.rbegin(); it != ring_.rend(); ++it) {
      json::object item;
      item["time"] = it->time;
      item["request_id"] = it->request_id;
      item["route"] = it->route;
      item["prefill_node"] = it->prefill_node;
      item["decode_node"] = it->decode_node;
      item["status"] = it->status;
      item["outcome"] = it->outcome;
      item["retries"] = it->retries;
      item["migrations"] = it->migrations;
      if (it->ttft_ms >= 0) item["ttft_ms"] = it->ttft_ms;
      item["e2e_ms"] = it->e2e_ms;
      list.push_back(std::move(item));
    }
  }
  json::object body;
  body["decisions"] = std::move(list);
  return json::serialize(body);
}

}  // namespace omni::proxy
