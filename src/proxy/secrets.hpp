// The proxy's secrets — client API keys, the admin token, the key it sends to engines — from
// where an operator keeps them out of `ps` and shell history: files (one key per line) and
// environment variables, besides the config file and flags (which still work, with a warning).
//
//   api_keys       api_keys (YAML/flags)  + api_keys_file          + $OMNI_API_KEYS
//   (comma-separated) admin_token    admin_token            | admin_token_file       |
//   $OMNI_ADMIN_TOKEN engine_api_key engine_api_key         | engine_api_key_file    |
//   $OMNI_ENGINE_API_KEY
//
// Keys add up; a single token takes the first source set in that order. Files are read at start
// and again on every reload (SIGHUP, /admin/reload): rotating a key is editing its file and
// reloading. A file that cannot be read, or holds no key, is an error — never "no keys", which
// would open the routes it guards.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/proxy/config.hpp"

namespace omni::proxy {

struct Secrets {
  std::vector<std::string> api_keys;
  std::optional<std::string> admin_token;
  std::optional<std::string> engine_api_key;
};

// Reads an environment variable; injected so tests need not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup process_environment();

// The keys of a key file: one per line, surrounding blanks trimmed, empty lines and lines
// starting with '#' skipped. kNotFound/kIo naming the path; kInvalidArgument when no key is in it.
Result<std::vector<std::string>> read_key_file(const std::string& path);

Result<Secrets> load_secrets(const ProxyConfig& config, const EnvLookup& env);

}  // namespace omni::proxy
