// safetensors: parse (bounds-checked, for untrusted files) and write.
#include <boost/json.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>

#include "omni/model/formats.hpp"

namespace omni::model {
namespace json = boost::json;
namespace {

Error bad(std::string_view file, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, std::string(file) + ": " + what);
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  if (s == "F8_E4M3") return DType::kF8E4M3;
  if (s == "I32") return DType::kI32;
  if (s == "I64") return DType::kI64;
  if (s == "F64") return DType::kF64;
  return std::nullopt;
}

std::string_view dtype_tag(DType d) {
  switch (d) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kF8E4M3: return "F8_E4M3";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kF64: return "F64";
    case DType::kQ8_0: return "";
  }
  return "";
}

std::size_t element_bytes(DType d) { return row_bytes(d, 1); }

Result<TensorView> parse_entry(const std::string& name, const json::value& v,
                               const std::byte* data_base, std::size_t data_size,
                               std::string_view file) {
  const std::string where = "tensor '" + name + "'";
  if (!v.is_object()) return bad(file, where + ": expected an object");
  const auto& o = v.as_object();
  const auto* dt = o.if_contains("dtype");
  const auto* shape = o.if_contains("shape");
  const auto* offsets = o.if_contains("data_offsets");
  if (!dt || !dt->is_string()) return bad(file, where + ": dtype missing");
  const auto dtype = parse_dtype(dt->as_string());
  if (!dtype) {
    return bad(file, where + ": unsupported dtype '" + std::string(dt->as_string()) + "'");
  }
  if (!shape || !shape->is_array() || shape->as_array().size() > 8) {
    return bad(file, where + ": shape must be an array of at most 8 dimensions");
  }
  TensorView t;
  t.name = name;
  t.dtype = *dtype;
  t.file = std::string(file);
  std::uint64_t count = 1;
  for (const auto& d : shape->as_array()) {
    if (!d.is_int64() || d.as_int64() < 0 || d.as_int64() > (1LL << 40)) {
      return bad(file, where + ": bad dimension " + json::serialize(d));
    }
    t.shape.push_back(d.as_int64());
    const auto dim = static_cast<std::uint64_t>(d.as_int64());
    if (dim != 0 && count > (std::uint64_t{1} << 50) / dim) return bad(file, where + ": too large");
    count *= dim;
  }
  if (!offsets || !offsets->is_array() || offsets->as_array().size() != 2) {
    return bad(file, where + ": data_offsets must be [begin, end]");
  }
  const auto& off = offsets->as_array();
  if (!off[0].is_int64() || !off[1].is_int64() || off[0].as_int64() < 0 ||
      off[1].as_int64() < off[0].as_int64()) {
    return bad(file, where + ": bad data_offsets");
  }
  const auto begin = static_cast<std::uint64_t>(off[0].as_int64());
  const auto end = static_cast<std::uint64_t>(off[1].as_int64());
  if (end > data_size) {
    return bad(file, where + ": data_offsets end " + std::to_string(end) +
                         " past the end of the data (" + std::to_string(data_size) +
                         " bytes; truncated file?)");
  }
  if (end - begin != count * element_bytes(*dtype)) {
    return bad(file, where + ": " + std::to_string(end - begin) + " bytes for " +
                         std::to_string(count) + " elements of " + std::string(dtype_name(*dtype)));
  }
  t.bytes = static_cast<std::size_t>(end - begin);
  t.data = data_base + begin;
  return t;
}

}  // namespace

Result<SafetensorsHeader> parse_safetensors(std::span<const std::byte> file,
                                            std::string_view name) {
  if (file.size() < 8) return bad(name, "truncated: shorter than the 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) {
    header_len = (header_len << 8) | static_cast<std::uint8_t>(file[static_cast<std::size_t>(i)]);
  }
  if (header_len > file.size() - 8 || header_len > (std::uint64_t{100} << 20)) {
    return bad(name, "header length " + std::to_string(header_len) +
                         " exceeds the file (truncated or not safetensors)");
  }
  const auto* text = reinterpret_cast<const char*>(file.data() + 8);
  boost::system::error_code ec;
  json::value root = json::parse(std::string_view(text, static_cast<std::size_t>(header_len)), ec);
  if (ec) return bad(name, "header is not valid JSON: " + ec.message());
  if (!root.is_object()) return bad(name, "header is not a JSON object");
  const std::size_t data_start = 8 + static_cast<std::size_t>(header_len);
  const std::size_t data_size = file.size() - data_start;
  SafetensorsHeader out;
  for (const auto& [key, value] : root.as_object()) {
    if (key == "__metadata__") {
      if (value.is_object()) {
        for (const auto& [mk, mv] : value.as_object()) {
          if (mv.is_string()) out.metadata[std::string(mk)] = std::string(mv.as_string());
        }
      }
      continue;
    }
    auto t = parse_entry(std::string(key), value, file.data() + data_start, data_size, name);
    if (!t) return std::move(t).error();
    out.tensors.push_back(std::move(*t));
  }
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const TensorView& a, const TensorView& b) { return a.data < b.data; });
  for (std::size_t i = 1; i < out.tensors.size(); ++i) {
    const auto& prev = out.tensors[i - 1];
    if (out.tensors[i].data < prev.data + prev.bytes) {
      return bad(name, "tensors '" + prev.name + "' and '" + out.tensors[i].name + "' overlap");
    }
  }
  return out;
}

Status write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                         const std::map<std::string, std::string>& metadata) {
  json::object header;
  if (!metadata.empty()) {
    json::object meta;
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (dtype_tag(t.dtype).empty()) {
      return make_error(ErrorCode::kUnsupported,
                        "safetensors cannot hold " + std::string(dtype_name(t.dtype)));
    }
    json::object e;
    e["dtype"] = dtype_tag(t.dtype);
    json::array shape;
    for (const auto d : t.shape) shape.push_back(d);
    e["shape"] = std::move(shape);
    e["data_offsets"] = json::array{offset, offset + t.data.size()};
    offset += t.data.size();
    header[t.name] = std::move(e);
  }
  std::string text = json::serialize(header);
  while ((text.size() + 8) % 8 != 0) text.push_back(' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(ErrorCode::kIo, "cannot write " + path.string());
  std::uint64_t len = text.size();
  char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<char>((len >> (8 * i)) & 0xffU);
  out.write(len_bytes, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& t : tensors) {
    out.write(reinterpret_cast<const char*>(t.data.data()),
              static_cast<std::streamsize>(t.data.size()));
  }
  if (!out) return make_error(ErrorCode::kIo, "write failed: " + path.string());
  return ok_status();
}

}  // namespace omni::model
