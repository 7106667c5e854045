#include "secrets.hpp"

#include <cstdlib>

#include "omni/config/detail/node.hpp"

namespace omni::proxy {
namespace {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kBlank = " \t\r\n";
  const auto first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlank) - first + 1);
}

std::vector<std::string> split_keys(std::string_view text, char separator) {
  std::vector<std::string> keys;
  while (!text.empty()) {
    const auto end = text.find(separator);
    const std::string_view key = trim(text.substr(0, end));
    if (!key.empty() && key.front() != '#') keys.emplace_back(key);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return keys;
}

// One token from a file (its only key), an environment variable, or the config, in that order.
Result<std::optional<std::string>> one_token(const std::optional<std::string>& file,
                                             std::string_view variable,
                                             const std::optional<std::string>& configured,
                                             const EnvLookup& env) {
  if (file) {
    auto keys = read_key_file(*file);
    if (!keys) return std::move(keys).error();
    if (keys->size() > 1) {
      return make_error(ErrorCode::kInvalidArgument, *file + ": holds " +
                                                         std::to_string(keys->size()) +
                                                         " lines, but this secret is one token");
    }
    return std::optional<std::string>(std::move(keys->front()));
  }
  if (auto value = env(variable)) {
    const std::string_view token = trim(*value);
    if (token.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "$" + std::string(variable) + " is empty");
    }
    return std::optional<std::string>(std::string(token));
  }
  return configured;
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Result<std::vector<std::string>> read_key_file(const std::string& path) {
  auto text = config::detail::read_text_file(path);
  if (!text) return std::move(text).error();
  auto keys = split_keys(*text, '\n');
  if (keys.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      path + ": no key in it (an empty key file would leave its routes open)");
  }
  return keys;
}

Result<Secrets> load_secrets(const ProxyConfig& config, const EnvLookup& env) {
  Secrets secrets;
  secrets.api_keys = config.api_keys;
  if (config.api_keys_file) {
    auto keys = read_key_file(*config.api_keys_file);
    if (!keys) return std::move(keys).error();
    secrets.api_keys.insert(secrets.api_keys.end(), keys->begin(), keys->end());
  }
  if (auto value = env("OMNI_API_KEYS")) {
    auto keys = split_keys(*value, ',');
    if (keys.empty()) return make_error(ErrorCode::kInvalidArgument, "$OMNI_API_KEYS has no key");
    secrets.api_keys.insert(secrets.api_keys.end(), keys.begin(), keys.end());
  }
  auto admin = one_token(config.admin_token_file, "OMNI_ADMIN_TOKEN", config.admin_token, env);
  if (!admin) return std::move(admin).error();
  secrets.admin_token = std::move(*admin);
  auto engine =
      one_token(config.engine_api_key_file, "OMNI_ENGINE_API_KEY", config.engine_api_key, env);
  if (!engine) return std::move(engine).error();
  secrets.engine_api_key = std::move(*engine);
  return secrets;
}

}  // namespace omni::proxy
