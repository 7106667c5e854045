// Plans as JSON: EPLB's phy2log / logcnt per layer, plus the shape needed to read them back.
#include <boost/json/parse.hpp>

#include "omni/placement/io.hpp"

namespace omni::placement {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, "plan: " + std::move(message));
}

Result<std::size_t> positive_count(const boost::json::object& doc, std::string_view key) {
  const boost::json::value* v = doc.if_contains(key);
  if (v == nullptr) return invalid("missing '" + std::string(key) + "'");
  if (!v->is_int64() && !v->is_uint64())
    return invalid("'" + std::string(key) + "' is not an integer");
  const double n = v->to_number<double>();
  if (n < 1 || n > static_cast<double>(kMaxNpyElements)) {
    return invalid("'" + std::string(key) + "' must be in 1.." + std::to_string(kMaxNpyElements));
  }
  return static_cast<std::size_t>(n);
}

Result<LayerPlacement> layer_from_json(const boost::json::value& row, std::size_t l,
                                       std::size_t devices, std::size_t experts) {
  const std::string at = "phy2log layer " + std::to_string(l);
  if (!row.is_array()) return invalid(at + " is not an array");
  const boost::json::array& ids = row.get_array();
  if (ids.empty() || ids.size() % devices != 0) {
    return invalid(at + " has " + std::to_string(ids.size()) +
                   " slots, not a positive multiple of " + std::to_string(devices) + " devices");
  }
  LayerPlacement layer;
  layer.slots_per_device = ids.size() / devices;
  layer.phy2log.reserve(ids.size());
  for (std::size_t s = 0; s < ids.size(); ++s) {
    if (!ids[s].is_int64() && !ids[s].is_uint64())
      return invalid(at + ", slot " + std::to_string(s) + ": not an integer");
    const double id = ids[s].to_number<double>();
    if (id < 0 || id >= static_cast<double>(experts)) {
      return invalid(at + ", slot " + std::to_string(s) + ": expert id out of range 0.." +
                     std::to_string(experts - 1));
    }
    layer.phy2log.push_back(static_cast<ExpertId>(id));
  }
  return layer;
}

}  // namespace

boost::json::object placement_to_json(const Placement& placement) {
  boost::json::object doc;
  doc["devices"] = placement.devices;
  doc["experts"] = placement.experts;
  boost::json::array slots;
  boost::json::array phy2log;
  boost::json::array logcnt;
  for (std::size_t l = 0; l < placement.layers.size(); ++l) {
    const LayerPlacement& layer = placement.layers[l];
    slots.emplace_back(layer.slots_per_device);
    phy2log.emplace_back(boost::json::array(layer.phy2log.begin(), layer.phy2log.end()));
    const std::vector<std::size_t> counts = placement.copies(l);
    logcnt.emplace_back(boost::json::array(counts.begin(), counts.end()));
  }
  doc["slots_per_device"] = std::move(slots);
  doc["phy2log"] = std::move(phy2log);
  doc["logcnt"] = std::move(logcnt);
  return doc;
}

Result<Placement> placement_from_json(std::string_view text) {
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text, ec);
  if (ec) return invalid("not JSON: " + ec.message());
  if (!doc.is_object()) return invalid("expected an object with 'devices', 'experts', 'phy2log'");
  const boost::json::object& obj = doc.get_object();
  auto devices = positive_count(obj, "devices");
  if (!devices) return devices.error();
  auto experts = positive_count(obj, "experts");
  if (!experts) return experts.error();
  const boost::json::value* rows = obj.if_contains("phy2log");
  if (rows == nullptr || !rows->is_array() || rows->get_array().empty()) {
    return invalid("'phy2log' must be a non-empty array of per-layer arrays");
  }
  Placement placement;
  placement.devices = *devices;
  placement.experts = *experts;
  const boost::json::array& layers = rows->get_array();
  for (std::size_t l = 0; l < layers.size(); ++l) {
    auto layer = layer_from_json(layers[l], l, *devices, *experts);
    if (!layer) return layer.error();
    placement.layers.push_back(std::move(*layer));
  }
  if (Status s = placement.validate(/*allow_colocated_copies=*/true); !s) {
    return invalid(s.error().message);
  }
  return placement;
}

}  // namespace omni::placement
