// The two checkpoint formats, parsed from bytes (the fuzz targets call these directly) and
// written (make-model). Parsers never read outside the span they are given and reject
// anything inconsistent with a message naming the file and the tensor or key:
//
//   safetensors: u64 LE header length N | N bytes of JSON {name: {dtype, shape,
//                data_offsets: [begin, end]}, "__metadata__": {...}} | data
//   GGUF v2/v3:  "GGUF" | u32 version | u64 tensors | u64 kv | kv pairs (typed values,
//                arrays of them) | tensor infos (name, dims innermost first, ggml type,
//                offset) | padding to general.alignment | data
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/model/tensor.hpp"

namespace omni::model {

// Tensor infos of a safetensors file; views point into `file`.
struct SafetensorsHeader {
  std::vector<TensorView> tensors;
  std::map<std::string, std::string> metadata;
};
Result<SafetensorsHeader> parse_safetensors(std::span<const std::byte> file, std::string_view name);

struct GgufValue;
using GgufArray = std::vector<GgufValue>;
struct GgufValue {
  // u64 holds every unsigned type, i64 every signed one; the original type id is kept.
  std::variant<std::uint64_t, std::int64_t, double, bool, std::string, GgufArray> value;
  std::uint32_t type = 0;
};

struct GgufHeader {
  std::uint32_t version = 3;
  std::map<std::string, GgufValue> kv;
  std::vector<TensorView> tensors;  // shape outermost first (GGUF's dims reversed)
  std::size_t alignment = 32;

  const GgufValue* find(std::string_view key) const;
  Result<std::uint64_t> get_uint(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
};
Result<GgufHeader> parse_gguf(std::span<const std::byte> file, std::string_view name);

// ---- writing ----

struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;  // outermost first
  std::span<const std::byte> data;
};
Status write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                         const std::map<std::string, std::string>& metadata = {});

struct GgufKv {
  std::string key;
  GgufValue value;
};
GgufValue gguf_u32(std::uint32_t v);
GgufValue gguf_i32(std::int32_t v);
GgufValue gguf_f32(float v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_string_array(std::vector<std::string> v);
GgufValue gguf_i32_array(const std::vector<std::int32_t>& v);
Status write_gguf(const std::filesystem::path& path, std::span<const GgufKv> kv,
                  std::span<const TensorToWrite> tensors);

}  // namespace omni::model
