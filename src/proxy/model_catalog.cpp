#include "model_catalog.hpp"

#include <boost/json.hpp>
#include <set>

namespace omni::proxy {

namespace json = boost::json;

Result<ModelList> parse_models(std::string_view body) {
  boost::system::error_code ec;
  json::value parsed = json::parse(body, ec);
  const json::value* data =
      !ec && parsed.is_object() ? parsed.get_object().if_contains("data") : nullptr;
  if (!data || !data->is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "not an OpenAI model list");
  }
  ModelList list;
  for (const json::value& model : data->get_array()) {
    const json::object* object = model.if_object();
    const json::value* id = object ? object->if_contains("id") : nullptr;
    if (!id || !id->is_string()) continue;
    list.models.emplace_back(std::string(id->get_string()), json::serialize(model));
    const json::value* len = object->if_contains("max_model_len");
    if (len && len->is_int64() && len->get_int64() > 0) {
      const auto value = static_cast<std::uint64_t>(len->get_int64());
      list.max_model_len = list.max_model_len == 0 ? value : std::min(list.max_model_len, value);
    }
  }
  return list;
}

void ModelCatalog::store(const std::string& node, ModelList list, TimePoint at) {
  const std::lock_guard lock(mu_);
  by_node_[node] = Entry{std::move(list), at};
}

std::optional<TimePoint> ModelCatalog::fetched_at(const std::string& node) const {
  const std::lock_guard lock(mu_);
  auto it = by_node_.find(node);
  if (it == by_node_.end()) return std::nullopt;
  return it->second.at;
}

std::optional<std::string> ModelCatalog::union_body(const std::vector<std::string>& nodes) const {
  const std::lock_guard lock(mu_);
  std::set<std::string_view> seen;
  std::string data;
  bool any = false;
  for (const std::string& node : nodes) {
    auto it = by_node_.find(node);
    if (it == by_node_.end()) continue;
    any = true;
    for (const auto& [id, model] : it->second.list.models) {
      if (!seen.insert(id).second) continue;
      if (!data.empty()) data.push_back(',');
      data += model;
    }
  }
  if (!any) return std::nullopt;
  return R"({"object":"list","data":[)" + data + "]}";
}

std::uint64_t ModelCatalog::max_model_len() const {
  const std::lock_guard lock(mu_);
  std::uint64_t smallest = 0;
  for (const auto& [node, entry] : by_node_) {
    const std::uint64_t len = entry.list.max_model_len;
    if (len > 0) smallest = smallest == 0 ? len : std::min(smallest, len);
  }
  return smallest;
}

}  // namespace omni::proxy
