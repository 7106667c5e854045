#include "omni/placement/model.hpp"

#include <cmath>
#include <string>
#include <utility>

namespace omni::placement {

Result<LoadMatrix> LoadMatrix::make(std::size_t layers, std::size_t experts,
                                    std::vector<double> values) {
  if (layers == 0 || experts == 0) {
    return make_error(ErrorCode::kInvalidArgument, "loads: need at least one layer and expert");
  }
  if (values.size() != layers * experts) {
    return make_error(ErrorCode::kInvalidArgument,
                      "loads: expected " + std::to_string(layers * experts) + " values (" +
                          std::to_string(layers) + " layers x " + std::to_string(experts) +
                          " experts), got " + std::to_string(values.size()));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || values[i] < 0.0) {
      return make_error(ErrorCode::kInvalidArgument, "loads: layer " + std::to_string(i / experts) +
                                                         " expert " + std::to_string(i % experts) +
                                                         ": must be finite and >= 0");
    }
  }
  LoadMatrix m;
  m.layers_ = layers;
  m.experts_ = experts;
  m.values_ = std::move(values);
  return m;
}

Status Topology::validate() const {
  if (nodes == 0 || devices == 0 || slots_per_device == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "topology: nodes, devices and slots_per_device must be > 0");
  }
  if (devices % nodes != 0) {
    return make_error(ErrorCode::kInvalidArgument, "topology: devices (" + std::to_string(devices) +
                                                       ") must be a multiple of nodes (" +
                                                       std::to_string(nodes) + ")");
  }
  return ok_status();
}

std::vector<std::size_t> Placement::copies(std::size_t layer) const {
  std::vector<std::size_t> count(experts, 0);
  for (ExpertId e : layers[layer].phy2log) {
    if (e >= 0 && static_cast<std::size_t>(e) < experts) ++count[static_cast<std::size_t>(e)];
  }
  return count;
}

namespace {

Status check_layer(const Placement& p, std::size_t l, bool allow_colocated) {
  const LayerPlacement& layer = p.layers[l];
  const std::string where = "placement: layer " + std::to_string(l) + ": ";
  if (layer.slots_per_device == 0 || layer.phy2log.size() != p.devices * layer.slots_per_device) {
    return make_error(ErrorCode::kInvalidArgument,
                      where + "expected devices * slots_per_device slots");
  }
  std::vector<std::size_t> seen_on(p.experts, p.devices);  // last device seen, for duplicates
  std::vector<bool> placed(p.experts, false);
  for (std::size_t s = 0; s < layer.phy2log.size(); ++s) {
    const ExpertId e = layer.phy2log[s];
    if (e < 0 || static_cast<std::size_t>(e) >= p.experts) {
      return make_error(ErrorCode::kInvalidArgument,
                        where + "slot " + std::to_string(s) + ": expert id out of range");
    }
    const auto ue = static_cast<std::size_t>(e);
    const std::size_t device = layer.device_of_slot(s);
    if (!allow_colocated && seen_on[ue] == device) {
      return make_error(ErrorCode::kInvalidArgument, where + "device " + std::to_string(device) +
                                                         " holds expert " + std::to_string(e) +
                                                         " twice");
    }
    seen_on[ue] = device;
    placed[ue] = true;
  }
  for (std::size_t e = 0; e < p.experts; ++e) {
    if (!placed[e]) {
      return make_error(ErrorCode::kInvalidArgument,
                        where + "expert " + std::to_string(e) + " has no copy");
    }
  }
  return ok_status();
}

}  // namespace

Status Placement::validate(bool allow_colocated_copies) const {
  if (devices == 0 || experts == 0) {
    return make_error(ErrorCode::kInvalidArgument, "placement: devices and experts must be > 0");
  }
  for (std::size_t l = 0; l < layers.size(); ++l) {
    Status s = check_layer(*this, l, allow_colocated_copies);
    if (!s) return s;
  }
  return ok_status();
}

}  // namespace omni::placement
