#include "recent_decisions.hpp"

#include <boost/json.hpp>
#include <ctime>

namespace omni::proxy {

std::string iso_time(std::chrono::system_clock::time_point wall) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf, n) + "." + std::to_string(1'000'000 + micros % 1'000'000).substr(1) + "Z";
}

boost::json::object waits_json(const std::array<double, kWaitCauses>& waited_ms) {
  boost::json::object waits;
  for (std::size_t cause = 0; cause < waited_ms.size(); ++cause) {
    if (waited_ms[cause] > 0) {
      waits[wait_cause_name(static_cast<WaitCause>(cause))] = waited_ms[cause];
    }
  }
  return waits;
}

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
      item["time"] = iso_time(it->wall);
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
      item["band"] = it->band;
      if (!it->tenant.empty()) item["tenant"] = it->tenant;
      item["priority"] = it->priority;
      item["queue_wait_ms"] = waits_json(it->waited_ms);
      list.push_back(std::move(item));
    }
  }
  json::object body;
  body["decisions"] = std::move(list);
  return json::serialize(body);
}

}  // namespace omni::proxy
