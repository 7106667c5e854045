// Loads from CSV and JSON, format detection, and the whole-file helpers.
#include <boost/json/parse.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include "omni/placement/io.hpp"

namespace omni::placement {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<double> parse_number(std::string_view field) {
  double value = 0;
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || end != field.data() + field.size() || field.empty()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(
        trim(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::string where(std::size_t line, std::size_t column) {
  return "csv: line " + std::to_string(line) + ", column " + std::to_string(column);
}

// Appends one row's values; a field that is not a number, or a negative or non-finite one, is an
// error naming its line and column.
Status parse_csv_row(const std::vector<std::string_view>& fields, std::size_t line_no,
                     std::vector<double>& values) {
  for (std::size_t c = 0; c < fields.size(); ++c) {
    auto value = parse_number(fields[c]);
    if (!value) {
      return invalid(where(line_no, c + 1) + ": '" + std::string(fields[c].substr(0, 40)) +
                     "' is not a number");
    }
    if (!std::isfinite(*value)) return invalid(where(line_no, c + 1) + ": not a finite number");
    if (*value < 0)
      return invalid(where(line_no, c + 1) + ": negative load " + std::string(fields[c]));
    values.push_back(*value);
  }
  return ok_status();
}

// A header names its columns: no field is a number and every one starts like a name. A first
// row such as "1,,3" or "[[1" is data, and gets an error naming the bad field.
bool is_header(const std::vector<std::string_view>& fields) {
  for (std::string_view f : fields) {
    if (f.empty() || parse_number(f)) return false;
    const char c = f.front();
    const bool name_like =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '"' || c == '\'';
    if (!name_like) return false;
  }
  return true;
}

Result<double> json_number(const boost::json::value& v, std::size_t layer, std::size_t expert) {
  const std::string at =
      "json: layer " + std::to_string(layer) + ", expert " + std::to_string(expert);
  if (!v.is_number()) return invalid(at + ": not a number");
  const double value = v.to_number<double>();
  if (!std::isfinite(value)) return invalid(at + ": not a finite number");
  if (value < 0) return invalid(at + ": negative load");
  return value;
}

Status append_json_layer(const boost::json::array& row, std::size_t layer, std::size_t& experts,
                         std::vector<double>& values) {
  if (layer == 0) experts = row.size();
  if (row.size() != experts) {
    return invalid("json: layer " + std::to_string(layer) + " has " + std::to_string(row.size()) +
                   " values, layer 0 has " + std::to_string(experts));
  }
  for (std::size_t e = 0; e < row.size(); ++e) {
    auto value = json_number(row[e], layer, e);
    if (!value) return value.error();
    values.push_back(*value);
  }
  return ok_status();
}

std::string_view extension(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  const std::size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
  return std::string_view(path).substr(dot);
}

}  // namespace

Result<LoadMatrix> loads_from_npy(std::span<const std::uint8_t> bytes) {
  auto array = parse_npy(bytes);
  if (!array) return array.error();
  if (array->shape.size() == 1)
    return LoadMatrix::make(1, array->shape[0], std::move(array->values));
  if (array->shape.size() == 2) {
    return LoadMatrix::make(array->shape[0], array->shape[1], std::move(array->values));
  }
  return invalid("npy: loads must be 2-D [layers, experts] or 1-D [experts], got " +
                 std::to_string(array->shape.size()) + " dimensions");
}

Result<LoadMatrix> loads_from_csv(std::string_view text) {
  std::vector<double> values;
  std::size_t experts = 0;
  std::size_t layers = 0;
  std::size_t first_line = 0;
  std::size_t line_no = 0;
  bool seen_first_row = false;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t nl = text.find('\n', start);
    const std::string_view line =
        trim(text.substr(start, nl == text.npos ? text.npos : nl - start));
    start = nl == text.npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const auto fields = split_fields(line);
    if (!seen_first_row) {
      seen_first_row = true;
      if (is_header(fields)) continue;
    }
    if (layers == 0) {
      experts = fields.size();
      first_line = line_no;
    } else if (fields.size() != experts) {
      return invalid("csv: line " + std::to_string(line_no) + " has " +
                     std::to_string(fields.size()) + " values, line " + std::to_string(first_line) +
                     " has " + std::to_string(experts));
    }
    if (Status s = parse_csv_row(fields, line_no, values); !s) return s.error();
    ++layers;
  }
  if (layers == 0) return invalid("csv: no data rows");
  return LoadMatrix::make(layers, experts, std::move(values));
}

Result<LoadMatrix> loads_from_json(std::string_view text) {
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text, ec);
  if (ec) return invalid("json: " + ec.message());
  if (!doc.is_array()) return invalid("json: expected an array of per-layer arrays, or one array");
  const boost::json::array& rows = doc.get_array();
  if (rows.empty()) return invalid("json: empty array");
  std::vector<double> values;
  std::size_t experts = 0;
  if (!rows.front().is_array()) {  // one layer
    if (Status s = append_json_layer(rows, 0, experts, values); !s) return s.error();
    return LoadMatrix::make(1, experts, std::move(values));
  }
  for (std::size_t l = 0; l < rows.size(); ++l) {
    if (!rows[l].is_array())
      return invalid("json: layer " + std::to_string(l) + " is not an array");
    if (Status s = append_json_layer(rows[l].get_array(), l, experts, values); !s) return s.error();
  }
  if (experts == 0) return invalid("json: layers have no values");
  return LoadMatrix::make(rows.size(), experts, std::move(values));
}

Result<LoadMatrix> parse_loads(std::string_view bytes, LoadFormat format) {
  if (format == LoadFormat::kAuto) {
    const std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (bytes.substr(0, 6) == "\x93NUMPY") {
      format = LoadFormat::kNpy;
    } else if (first != std::string_view::npos && bytes[first] == '[') {
      format = LoadFormat::kJson;
    } else {
      format = LoadFormat::kCsv;
    }
  }
  switch (format) {
    case LoadFormat::kNpy:
      return loads_from_npy({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()});
    case LoadFormat::kJson: return loads_from_json(bytes);
    default: return loads_from_csv(bytes);
  }
}

Result<LoadMatrix> read_loads_file(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.error();
  const std::string_view ext = extension(path);
  LoadFormat format = LoadFormat::kAuto;
  if (ext == ".npy") format = LoadFormat::kNpy;
  if (ext == ".csv") format = LoadFormat::kCsv;
  if (ext == ".json") format = LoadFormat::kJson;
  auto loads = parse_loads(*bytes, format);
  if (!loads) return make_error(loads.error().code, path + ": " + loads.error().message);
  return loads;
}

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, path + ": cannot open: " + std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    bytes.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > max_bytes) {
      return make_error(ErrorCode::kTooLarge,
                        path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  if (in.bad()) return make_error(ErrorCode::kIo, path + ": read error");
  return bytes;
}

Status write_file(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return make_error(ErrorCode::kIo, path + ": cannot open for writing: " + std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return make_error(ErrorCode::kIo, path + ": write failed");
  return ok_status();
}

}  // namespace omni::placement
