// .npy writing, and omni-infer's placement pattern (devices × layers × experts, 0/1) both ways.
#include <bit>
#include <string>

#include "omni/placement/io.hpp"

namespace omni::placement {
namespace {

// Format 1.0 header, padded with spaces so that the data starts on a 64-byte boundary, as
// NumPy writes it.
std::string npy_header(std::string_view descr, std::span<const std::size_t> shape) {
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) dict += ", ";
    dict += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dict += ',';  // Python's 1-tuple: "(3,)"
  dict += "), }";
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

void append_le(std::string& out, std::uint64_t bits, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out += static_cast<char>((bits >> (8 * i)) & 0xff);
}

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

}  // namespace

std::string npy_from_doubles(std::span<const std::size_t> shape, std::span<const double> values) {
  std::string out = npy_header("<f8", shape);
  out.reserve(out.size() + values.size() * 8);
  for (double v : values) append_le(out, std::bit_cast<std::uint64_t>(v), 8);
  return out;
}

Result<std::string> pattern_to_npy(const Placement& placement, PatternDtype dtype) {
  if (Status s = placement.validate(/*allow_colocated_copies=*/true); !s) return s.error();
  const std::size_t devices = placement.devices;
  const std::size_t layers = placement.layers.size();
  const std::size_t experts = placement.experts;
  std::vector<std::uint8_t> present(devices * layers * experts, 0);
  for (std::size_t l = 0; l < layers; ++l) {
    const LayerPlacement& layer = placement.layers[l];
    for (std::size_t slot = 0; slot < layer.phy2log.size(); ++slot) {
      const std::size_t d = layer.device_of_slot(slot);
      const auto e = static_cast<std::size_t>(layer.phy2log[slot]);
      std::uint8_t& cell = present[(d * layers + l) * experts + e];
      if (cell != 0) {
        return invalid("pattern: layer " + std::to_string(l) + ": device " + std::to_string(d) +
                       " holds expert " + std::to_string(e) +
                       " twice, which a 0/1 pattern cannot express");
      }
      cell = 1;
    }
  }
  const std::size_t shape[] = {devices, layers, experts};
  const bool as_bool = dtype == PatternDtype::kBool;
  std::string out = npy_header(as_bool ? "|b1" : "<i4", shape);
  out.reserve(out.size() + present.size() * (as_bool ? 1 : 4));
  for (std::uint8_t cell : present) append_le(out, cell, as_bool ? 1 : 4);
  return out;
}

Result<Placement> placement_from_pattern(const NpyArray& pattern) {
  if (pattern.shape.size() != 3) {
    return invalid("pattern: expected 3 dimensions (devices, layers, experts), got " +
                   std::to_string(pattern.shape.size()));
  }
  if (pattern.values.size() != pattern.shape[0] * pattern.shape[1] * pattern.shape[2]) {
    return invalid("pattern: value count does not match the shape");
  }
  Placement placement;
  placement.devices = pattern.shape[0];
  const std::size_t layers = pattern.shape[1];
  placement.experts = pattern.shape[2];
  placement.layers.resize(layers);
  for (std::size_t l = 0; l < layers; ++l) {
    LayerPlacement& layer = placement.layers[l];
    for (std::size_t d = 0; d < placement.devices; ++d) {
      std::size_t held = 0;
      for (std::size_t e = 0; e < placement.experts; ++e) {
        const double cell = pattern.values[(d * layers + l) * placement.experts + e];
        if (cell != 0.0 && cell != 1.0) {
          return invalid("pattern: value at [" + std::to_string(d) + ", " + std::to_string(l) +
                         ", " + std::to_string(e) + "] is neither 0 nor 1");
        }
        if (cell == 1.0) {
          layer.phy2log.push_back(static_cast<ExpertId>(e));
          ++held;
        }
      }
      if (d == 0) layer.slots_per_device = held;
      if (held != layer.slots_per_device || held == 0) {
        return invalid("pattern: layer " + std::to_string(l) + ": device " + std::to_string(d) +
                       " holds " + std::to_string(held) + " experts, device 0 holds " +
                       std::to_string(layer.slots_per_device) + " (must be equal and non-zero)");
      }
    }
  }
  if (Status s = placement.validate(); !s) return s.error();
  return placement;
}

}  // namespace omni::placement
