// GGUF: parse (bounds-checked, for untrusted files) and write, as llama.cpp's gguf.cpp lays
// the file out. Only the tensor types the engine runs are accepted: F32, F16, BF16, Q8_0.
#include <cstring>
#include <fstream>
#include <optional>

#include "omni/model/formats.hpp"

namespace omni::model {
namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" little endian
enum : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
enum : std::uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ8_0 = 8, kGgmlBF16 = 30 };

Error bad(std::string_view file, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, std::string(file) + ": " + what);
}

class Cursor {
 public:
  Cursor(std::span<const std::byte> data, std::string_view file) : data_(data), file_(file) {}
  std::size_t pos() const { return pos_; }
  bool read(void* out, std::size_t n) {
    if (n > data_.size() - pos_) return false;
    std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <class T>
  bool get(T& out) {
    return read(&out, sizeof(T));
  }
  bool string(std::string& out) {
    std::uint64_t len = 0;
    if (!get(len) || len > data_.size() - pos_ || len > (1U << 24)) return false;
    out.assign(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<std::size_t>(len));
    pos_ += static_cast<std::size_t>(len);
    return true;
  }
  std::size_t remaining() const { return data_.size() - pos_; }

 private:
  std::span<const std::byte> data_;
  std::string_view file_;
  std::size_t pos_ = 0;
};

std::size_t scalar_size(std::uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kU64:
    case kI64:
    case kF64: return 8;
    default: return 0;
  }
}

bool read_scalar(Cursor& c, std::uint32_t type, GgufValue& out) {
  out.type = type;
  switch (type) {
    case kU8: {
      std::uint8_t v;
      if (!c.get(v)) return false;
      out.value = std::uint64_t{v};
      return true;
    }
    case kU16: {
      std::uint16_t v;
      if (!c.get(v)) return false;
      out.value = std::uint64_t{v};
      return true;
    }
    case kU32: {
      std::uint32_t v;
      if (!c.get(v)) return false;
      out.value = std::uint64_t{v};
      return true;
    }
    case kU64: {
      std::uint64_t v;
      if (!c.get(v)) return false;
      out.value = v;
      return true;
    }
    case kI8: {
      std::int8_t v;
      if (!c.get(v)) return false;
      out.value = std::int64_t{v};
      return true;
    }
    case kI16: {
      std::int16_t v;
      if (!c.get(v)) return false;
      out.value = std::int64_t{v};
      return true;
    }
    case kI32: {
      std::int32_t v;
      if (!c.get(v)) return false;
      out.value = std::int64_t{v};
      return true;
    }
    case kI64: {
      std::int64_t v;
      if (!c.get(v)) return false;
      out.value = v;
      return true;
    }
    case kF32: {
      float v;
      if (!c.get(v)) return false;
      out.value = static_cast<double>(v);
      return true;
    }
    case kF64: {
      double v;
      if (!c.get(v)) return false;
      out.value = v;
      return true;
    }
    case kBool: {
      std::uint8_t v;
      if (!c.get(v) || v > 1) return false;
      out.value = v == 1;
      return true;
    }
    case kString: {
      std::string s;
      if (!c.string(s)) return false;
      out.value = std::move(s);
      return true;
    }
    default: return false;
  }
}

bool read_value(Cursor& c, std::uint32_t type, GgufValue& out) {
  if (type != kArray) return read_scalar(c, type, out);
  std::uint32_t elem = 0;
  std::uint64_t count = 0;
  if (!c.get(elem) || !c.get(count) || elem == kArray) return false;
  const std::size_t min_size = elem == kString ? 8 : scalar_size(elem);
  if (min_size == 0 || count > c.remaining() / min_size) return false;
  GgufArray items;
  items.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    GgufValue v;
    if (!read_scalar(c, elem, v)) return false;
    items.push_back(std::move(v));
  }
  out.type = kArray;
  out.value = std::move(items);
  return true;
}

std::optional<DType> ggml_dtype(std::uint32_t type) {
  switch (type) {
    case kGgmlF32: return DType::kF32;
    case kGgmlF16: return DType::kF16;
    case kGgmlQ8_0: return DType::kQ8_0;
    case kGgmlBF16: return DType::kBF16;
    default: return std::nullopt;
  }
}

std::uint32_t ggml_type(DType d) {
  switch (d) {
    case DType::kF16: return kGgmlF16;
    case DType::kQ8_0: return kGgmlQ8_0;
    case DType::kBF16: return kGgmlBF16;
    default: return kGgmlF32;
  }
}

std::size_t align_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

}  // namespace

const GgufValue* GgufHeader::find(std::string_view key) const {
  const auto it = kv.find(std::string(key));
  return it == kv.end() ? nullptr : &it->second;
}

Result<std::uint64_t> GgufHeader::get_uint(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, "GGUF key " + std::string(key) + " missing");
  if (const auto* u = std::get_if<std::uint64_t>(&v->value)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&v->value); i && *i >= 0) {
    return static_cast<std::uint64_t>(*i);
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "GGUF key " + std::string(key) + " is not an unsigned integer");
}

Result<double> GgufHeader::get_float(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, "GGUF key " + std::string(key) + " missing");
  if (const auto* d = std::get_if<double>(&v->value)) return *d;
  return make_error(ErrorCode::kInvalidArgument,
                    "GGUF key " + std::string(key) + " is not a float");
}

Result<std::string> GgufHeader::get_string(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, "GGUF key " + std::string(key) + " missing");
  if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
  return make_error(ErrorCode::kInvalidArgument,
                    "GGUF key " + std::string(key) + " is not a string");
}

Result<bool> GgufHeader::get_bool(std::string_view key) const {
  const auto* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, "GGUF key " + std::string(key) + " missing");
  if (const auto* b = std::get_if<bool>(&v->value)) return *b;
  return make_error(ErrorCode::kInvalidArgument, "GGUF key " + std::string(key) + " is not a bool");
}

Result<GgufHeader> parse_gguf(std::span<const std::byte> file, std::string_view name) {
  Cursor c(file, name);
  std::uint32_t magic = 0, version = 0;
  std::uint64_t n_tensors = 0, n_kv = 0;
  if (!c.get(magic) || magic != kMagic) return bad(name, "not a GGUF file (bad magic)");
  if (!c.get(version) || version < 2 || version > 3) {
    return bad(name, "unsupported GGUF version " + std::to_string(version));
  }
  if (!c.get(n_tensors) || !c.get(n_kv)) return bad(name, "truncated header");
  if (n_kv > c.remaining() / 13 || n_tensors > c.remaining() / 24) {
    return bad(name, "header counts exceed the file (truncated or corrupt)");
  }
  GgufHeader h;
  h.version = version;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    std::uint32_t type = 0;
    GgufValue value;
    if (!c.string(key) || !c.get(type) || !read_value(c, type, value)) {
      return bad(name, "truncated or corrupt metadata at pair " + std::to_string(i) +
                           (key.empty() ? "" : " ('" + key + "')"));
    }
    h.kv[key] = std::move(value);
  }
  if (const auto* a = h.find("general.alignment")) {
    const auto* u = std::get_if<std::uint64_t>(&a->value);
    if (!u || *u == 0 || *u > 4096 || (*u & (*u - 1)) != 0) {
      return bad(name, "general.alignment must be a power of two <= 4096");
    }
    h.alignment = static_cast<std::size_t>(*u);
  }
  struct Info {
    std::string name;
    std::vector<std::int64_t> dims;
    std::uint32_t type;
    std::uint64_t offset;
  };
  std::vector<Info> infos;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    Info info;
    std::uint32_t n_dims = 0;
    if (!c.string(info.name) || !c.get(n_dims) || n_dims == 0 || n_dims > 4) {
      return bad(name, "corrupt tensor info " + std::to_string(i));
    }
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      std::uint64_t dim = 0;
      if (!c.get(dim) || dim > (std::uint64_t{1} << 40)) {
        return bad(name, "tensor '" + info.name + "': bad dimension");
      }
      info.dims.push_back(static_cast<std::int64_t>(dim));
    }
    if (!c.get(info.type) || !c.get(info.offset)) {
      return bad(name, "tensor '" + info.name + "': truncated info");
    }
    infos.push_back(std::move(info));
  }
  const std::size_t data_start = align_up(c.pos(), h.alignment);
  if (data_start > file.size()) return bad(name, "truncated before the tensor data");
  const std::size_t data_size = file.size() - data_start;
  for (auto& info : infos) {
    const auto dtype = ggml_dtype(info.type);
    if (!dtype) {
      return make_error(ErrorCode::kUnsupported, std::string(name) + ": tensor '" + info.name +
                                                     "': ggml type " + std::to_string(info.type) +
                                                     " is not supported (F32, F16, BF16, Q8_0)");
    }
    if (*dtype == DType::kQ8_0 && info.dims[0] % kQ8Block != 0) {
      return bad(name, "tensor '" + info.name + "': q8_0 rows must be a multiple of 32");
    }
    std::uint64_t rows = 1;
    for (std::size_t d = 1; d < info.dims.size(); ++d) {
      const auto dim = static_cast<std::uint64_t>(info.dims[d]);
      if (dim != 0 && rows > (std::uint64_t{1} << 50) / dim)
        return bad(name, "tensor '" + info.name + "': too large");
      rows *= dim;
    }
    const std::uint64_t rb = row_bytes(*dtype, info.dims[0]);
    if (rows != 0 && rb > (std::uint64_t{1} << 50) / rows)
      return bad(name, "tensor '" + info.name + "': too large");
    const std::uint64_t bytes = rows * rb;
    if (info.offset % h.alignment != 0 || info.offset > data_size ||
        bytes > data_size - info.offset) {
      return bad(name, "tensor '" + info.name + "': data at offset " + std::to_string(info.offset) +
                           " (+" + std::to_string(bytes) + " bytes) is outside the file (" +
                           std::to_string(data_size) + " data bytes; truncated?)");
    }
    TensorView t;
    t.name = info.name;
    t.dtype = *dtype;
    t.shape.assign(info.dims.rbegin(), info.dims.rend());
    t.data = file.data() + data_start + info.offset;
    t.bytes = static_cast<std::size_t>(bytes);
    t.file = std::string(name);
    h.tensors.push_back(std::move(t));
  }
  return h;
}

GgufValue gguf_u32(std::uint32_t v) { return {std::uint64_t{v}, kU32}; }
GgufValue gguf_i32(std::int32_t v) { return {std::int64_t{v}, kI32}; }
GgufValue gguf_f32(float v) { return {static_cast<double>(v), kF32}; }
GgufValue gguf_bool(bool v) { return {v, kBool}; }
GgufValue gguf_string(std::string v) { return {std::move(v), kString}; }
GgufValue gguf_string_array(std::vector<std::string> v) {
  GgufArray items;
  items.reserve(v.size());
  for (auto& s : v) items.push_back(gguf_string(std::move(s)));
  return {std::move(items), kArray};
}
GgufValue gguf_i32_array(const std::vector<std::int32_t>& v) {
  GgufArray items;
  items.reserve(v.size());
  for (const auto x : v) items.push_back(gguf_i32(x));
  return {std::move(items), kArray};
}

namespace {
class Writer {
 public:
  explicit Writer(std::ofstream& out) : out_(out) {}
  template <class T>
  void put(T v) {
    out_.write(reinterpret_cast<const char*>(&v), sizeof(T));
    pos_ += sizeof(T);
  }
  void string(const std::string& s) {
    put<std::uint64_t>(s.size());
    out_.write(s.data(), static_cast<std::streamsize>(s.size()));
    pos_ += s.size();
  }
  void scalar(const GgufValue& v) {
    switch (v.type) {
      case kU8: put(static_cast<std::uint8_t>(std::get<std::uint64_t>(v.value))); break;
      case kU16: put(static_cast<std::uint16_t>(std::get<std::uint64_t>(v.value))); break;
      case kU32: put(static_cast<std::uint32_t>(std::get<std::uint64_t>(v.value))); break;
      case kU64: put(std::get<std::uint64_t>(v.value)); break;
      case kI8: put(static_cast<std::int8_t>(std::get<std::int64_t>(v.value))); break;
      case kI16: put(static_cast<std::int16_t>(std::get<std::int64_t>(v.value))); break;
      case kI32: put(static_cast<std::int32_t>(std::get<std::int64_t>(v.value))); break;
      case kI64: put(std::get<std::int64_t>(v.value)); break;
      case kF32: put(static_cast<float>(std::get<double>(v.value))); break;
      case kF64: put(std::get<double>(v.value)); break;
      case kBool: put(static_cast<std::uint8_t>(std::get<bool>(v.value) ? 1 : 0)); break;
      case kString: string(std::get<std::string>(v.value)); break;
      default: break;
    }
  }
  void value(const GgufValue& v) {
    if (v.type != kArray) return scalar(v);
    const auto& items = std::get<GgufArray>(v.value);
    put<std::uint32_t>(items.empty() ? kI32 : items[0].type);
    put<std::uint64_t>(items.size());
    for (const auto& item : items) scalar(item);
  }
  void pad(std::size_t alignment) {
    while (pos_ % alignment != 0) put<std::uint8_t>(0);
  }
  std::size_t pos() const { return pos_; }
  void bytes(std::span<const std::byte> data) {
    out_.write(reinterpret_cast<const char*>(data.data()),
               static_cast<std::streamsize>(data.size()));
    pos_ += data.size();
  }

 private:
  std::ofstream& out_;
  std::size_t pos_ = 0;
};
}  // namespace

Status write_gguf(const std::filesystem::path& path, std::span<const GgufKv> kv,
                  std::span<const TensorToWrite> tensors) {
  constexpr std::size_t kAlign = 32;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(ErrorCode::kIo, "cannot write " + path.string());
  Writer w(out);
  w.put<std::uint32_t>(kMagic);
  w.put<std::uint32_t>(3);
  w.put<std::uint64_t>(tensors.size());
  w.put<std::uint64_t>(kv.size());
  for (const auto& pair : kv) {
    w.string(pair.key);
    w.put<std::uint32_t>(pair.value.type);
    w.value(pair.value);
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    w.string(t.name);
    w.put<std::uint32_t>(static_cast<std::uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
      w.put<std::uint64_t>(static_cast<std::uint64_t>(*it));
    }
    w.put<std::uint32_t>(ggml_type(t.dtype));
    w.put<std::uint64_t>(offset);
    offset += align_up(t.data.size(), kAlign);
  }
  w.pad(kAlign);
  for (const auto& t : tensors) {
    w.bytes(t.data);
    w.pad(kAlign);
  }
  if (!out) return make_error(ErrorCode::kIo, "write failed: " + path.string());
  return ok_status();
}

}  // namespace omni::model
