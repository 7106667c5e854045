// Reading loads and writing placements: NumPy .npy, CSV and JSON.
//
// Every reader here parses untrusted bytes (files handed to the CLI): sizes are bounds-checked
// before use, and malformed input is an Error value naming the problem, never a crash
// (fuzz/placement_npy exercises the .npy reader).
//
//   loads in    .npy [layers, experts] or [experts]   any of <f8 <f4 <i8 <i4 <i2 <u8 <u4 <u2 |u1
//   |i1 |b1
//                                                      (and their big-endian forms), C order
//               .csv one layer per row, optional header row
//               .json [[...], [...]] (per layer) or [...] (one layer)
//   plans out   JSON {"devices", "experts", "slots_per_device", "phy2log", "logcnt", "metrics"}
//               pattern .npy: devices × layers × experts, 0/1, <i4 (omni-infer's layout: its
//               loader does np.load(path).astype(np.int32))
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/placement/model.hpp"

namespace omni::placement {

// A parsed .npy array, converted to double, in C (row-major) order.
struct NpyArray {
  std::vector<std::size_t> shape;
  std::vector<double> values;
  std::string dtype;  // the header's descr, e.g. "<f8"
};

// Limits on what a reader accepts: a malicious header cannot make us allocate more.
inline constexpr std::size_t kMaxNpyElements = std::size_t{1} << 26;
inline constexpr std::size_t kMaxNpyDims = 8;
inline constexpr std::size_t kMaxInputBytes = std::size_t{1} << 30;

// .npy format 1.0, 2.0 or 3.0. kInvalidArgument for a malformed file, kUnsupported for a dtype
// outside the list above or fortran_order True, kTooLarge beyond kMaxNpyElements.
Result<NpyArray> parse_npy(std::span<const std::uint8_t> bytes);

enum class LoadFormat { kAuto, kNpy, kCsv, kJson };

// A 2-D [layers, experts] or 1-D [experts] (one layer) array as loads.
Result<LoadMatrix> loads_from_npy(std::span<const std::uint8_t> bytes);
// One layer per row, comma-separated; blank lines and lines starting with '#' are skipped; a
// first row made only of names (no number, each starting with a letter, '_' or a quote) is a
// header. Errors name the line and column (1-based).
Result<LoadMatrix> loads_from_csv(std::string_view text);
// An array of per-layer arrays of numbers, or one array of numbers (one layer).
Result<LoadMatrix> loads_from_json(std::string_view text);
// kAuto: .npy by its magic bytes, JSON when the first non-blank character is '[', else CSV.
Result<LoadMatrix> parse_loads(std::string_view bytes, LoadFormat format = LoadFormat::kAuto);
// The format from the extension (.npy, .csv, .json), else from the content.
Result<LoadMatrix> read_loads_file(const std::string& path);

// Whole-file helpers; kIo names the path and the reason, kTooLarge beyond max_bytes.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);
Status write_file(const std::string& path, std::string_view bytes);

// {"devices", "experts", "slots_per_device": [per layer], "phy2log": [[per layer]],
//  "logcnt": [[per layer]]}; the caller adds "metrics".
boost::json::object placement_to_json(const Placement& placement);
// The inverse, from a plan written by placement_to_json (extra keys ignored); the placement is
// validated (colocated copies allowed: EPLB's packing may produce them).
Result<Placement> placement_from_json(std::string_view text);

enum class PatternDtype { kInt32, kBool };

// omni-infer's placement pattern: pattern[device][layer][expert] = 1 when the device holds the
// expert in that layer. A 0/1 array cannot say "two copies on one device", so a placement with
// colocated copies is kInvalidArgument.
Result<std::string> pattern_to_npy(const Placement& placement,
                                   PatternDtype dtype = PatternDtype::kInt32);
// The inverse: within a device, slots are in ascending expert order. Every device must hold the
// same number of experts in a layer (the engines' weight tensors require it).
Result<Placement> placement_from_pattern(const NpyArray& pattern);

// Serialises a C-order array of doubles as .npy (<f8, format 1.0); for tests and tools.
std::string npy_from_doubles(std::span<const std::size_t> shape, std::span<const double> values);

}  // namespace omni::placement
