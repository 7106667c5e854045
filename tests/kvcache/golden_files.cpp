#include "golden_files.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace omni::kvcache::testing {

std::filesystem::path protocol_dir() {
  if (const char* env = std::getenv("OMNI_SHARED_DIR"); env != nullptr && *env != '\0') {
    return std::filesystem::path(env) / "protocol";
  }
  return OMNI_KVCACHE_SHARED_PROTOCOL_DIR;
}

namespace {
std::optional<std::string> read_file(const std::filesystem::path& path, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "golden file " + path.string() + " not found (set OMNI_SHARED_DIR to the shared folder)";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}
}  // namespace

std::optional<boost::json::value> load_vectors(std::string& why) {
  auto text = read_file(protocol_dir() / "vllm_vectors.json", why);
  if (!text) return std::nullopt;
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(*text, ec);
  if (ec) {
    why = "vllm_vectors.json does not parse: " + ec.message();
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> load_batch_hex(std::string& why) {
  auto text = read_file(protocol_dir() / "vllm_kv_event_batch.hex", why);
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] != '#') return line;
  }
  why = "vllm_kv_event_batch.hex has no payload line";
  return std::nullopt;
}

std::vector<std::uint8_t> from_hex(std::string_view hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(
        static_cast<std::uint8_t>(std::stoul(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::string to_hex(const std::vector<std::uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0f]);
  }
  return out;
}

}  // namespace omni::kvcache::testing
