#include "omni/cluster/traffic_class.hpp"

#include <charconv>
#include <cmath>
#include <map>

namespace omni::cluster {
namespace {

// splitmix64's finaliser: every bit of the input reaches every bit of the output.
std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(separator, start), text.size());
    std::string_view part = text.substr(start, end - start);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

Error bad(std::string_view flag, std::string_view item, const std::string& why) {
  return Error{ErrorCode::kInvalidArgument,
               std::string(flag) + ": '" + std::string(item) + "': " + why};
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// "key=value" split; a part without '=' has an empty value and has_value false.
struct KeyValue {
  std::string_view key;
  std::string_view value;
  bool has_value = false;
};
KeyValue key_value(std::string_view part) {
  const std::size_t eq = part.find('=');
  if (eq == std::string_view::npos) return {part, {}, false};
  return {part.substr(0, eq), part.substr(eq + 1), true};
}

constexpr std::string_view kBandsFlag = "--traffic-bands";
constexpr std::string_view kClassesFlag = "--traffic-classes";

}  // namespace

std::size_t class_of_request(const std::vector<TrafficClass>& classes, std::uint64_t seed,
                             std::uint64_t id) noexcept {
  if (classes.size() <= 1) return 0;
  double total = 0.0;
  for (const TrafficClass& c : classes) total += c.share;
  // 53 random bits as a double in [0, 1).
  const double u =
      static_cast<double>(mix(mix(seed ^ 0x7261666669637ULL) ^ id) >> 11) * 0x1.0p-53 * total;
  double cumulative = 0.0;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    cumulative += classes[i].share;
    if (u < cumulative) return i;
  }
  return classes.size() - 1;
}

Result<std::vector<proxy::BandSpec>> parse_traffic_bands(std::string_view text) {
  std::vector<proxy::BandSpec> bands;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const std::vector<std::string_view> parts = split(item, ':');
    if (parts.size() < 2 || parts[0].empty()) {
      return bad(kBandsFlag, item, "expected name:max_priority[:options]");
    }
    proxy::BandSpec band;
    band.name = std::string(parts[0]);
    if (!parse_number(parts[1], band.max_priority)) {
      return bad(kBandsFlag, item, "max_priority must be an integer");
    }
    for (std::size_t i = 2; i < parts.size(); ++i) {
      const KeyValue kv = key_value(parts[i]);
      if (kv.key == "sheddable" && !kv.has_value) {
        band.sheddable = true;
      } else if (kv.key == "weight" && kv.has_value) {
        if (!parse_number(kv.value, band.weight) || !(band.weight > 0) ||
            !std::isfinite(band.weight)) {
          return bad(kBandsFlag, item, "weight must be a positive number");
        }
      } else if (kv.key == "timeout" && kv.has_value) {
        double seconds = 0.0;
        if (!parse_number(kv.value, seconds) || !(seconds >= 0) || !std::isfinite(seconds)) {
          return bad(kBandsFlag, item, "timeout must be seconds >= 0");
        }
        band.queue_timeout =
            std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
      } else if (kv.key == "max-waiting" && kv.has_value) {
        if (!parse_number(kv.value, band.max_waiting)) {
          return bad(kBandsFlag, item, "max-waiting must be a count");
        }
      } else if (kv.key == "share" && kv.has_value) {
        if (!parse_number(kv.value, band.node_share) || !(band.node_share > 0) ||
            band.node_share > 1) {
          return bad(kBandsFlag, item, "share must be a number in (0, 1]");
        }
      } else {
        return bad(kBandsFlag, item,
                   "unknown option '" + std::string(parts[i]) +
                       "' (known: sheddable, weight=W, timeout=S, max-waiting=N, share=F)");
      }
    }
    bands.push_back(std::move(band));
  }
  // The gateway core's own check, as omni-proxy's configuration runs it.
  if (Status valid = proxy::valid_bands(bands); !valid) {
    return Error{ErrorCode::kInvalidArgument,
                 std::string(kBandsFlag) + ": " + valid.error().message};
  }
  return bands;
}

Result<std::vector<TrafficClass>> parse_traffic_classes(std::string_view text,
                                                        const std::vector<proxy::BandSpec>& bands) {
  std::vector<TrafficClass> classes;
  std::map<std::string, std::uint32_t, std::less<>> tenant_ids;
  std::map<std::uint32_t, double> tenant_weights;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const std::vector<std::string_view> parts = split(item, ':');
    if (parts.size() < 2 || parts[0].empty()) {
      return bad(kClassesFlag, item, "expected name:share[:band=B][:tenant=T][:weight=W]");
    }
    TrafficClass c;
    c.name = std::string(parts[0]);
    if (!parse_number(parts[1], c.share) || !(c.share > 0) || !std::isfinite(c.share)) {
      return bad(kClassesFlag, item, "share must be a positive number");
    }
    c.band = proxy::band_of_priority(bands, 0);
    bool weighted = false;
    for (std::size_t i = 2; i < parts.size(); ++i) {
      const KeyValue kv = key_value(parts[i]);
      if (!kv.has_value || kv.value.empty()) {
        return bad(kClassesFlag, item, "option '" + std::string(parts[i]) + "' needs a value");
      }
      if (kv.key == "band") {
        std::size_t found = bands.size();
        for (std::size_t b = 0; b < bands.size(); ++b) {
          if (bands[b].name == kv.value) found = b;
        }
        if (found == bands.size()) {
          std::string known;
          for (const proxy::BandSpec& b : bands) known += (known.empty() ? "" : ", ") + b.name;
          return bad(kClassesFlag, item,
                     "no band named '" + std::string(kv.value) +
                         "' (--traffic-bands gives: " + (known.empty() ? "none" : known) + ")");
        }
        c.band = static_cast<std::uint8_t>(found);
      } else if (kv.key == "tenant") {
        auto it = tenant_ids.find(kv.value);
        if (it == tenant_ids.end()) {
          const auto id = static_cast<std::uint32_t>(tenant_ids.size() + 1);
          it = tenant_ids.emplace(std::string(kv.value), id).first;
        }
        c.tenant = it->second;
      } else if (kv.key == "weight") {
        if (!parse_number(kv.value, c.tenant_weight) || !(c.tenant_weight > 0) ||
            !std::isfinite(c.tenant_weight)) {
          return bad(kClassesFlag, item, "weight must be a positive number");
        }
        weighted = true;
      } else if (kv.key == "share") {
        if (!parse_number(kv.value, c.tenant_node_share) || !(c.tenant_node_share > 0) ||
            c.tenant_node_share > 1) {
          return bad(kClassesFlag, item, "share must be a number in (0, 1]");
        }
        weighted = true;
      } else {
        return bad(kClassesFlag, item,
                   "unknown option '" + std::string(kv.key) +
                       "' (known: band=B, tenant=T, weight=W, share=F)");
      }
    }
    if (weighted && c.tenant == 0) {
      return bad(kClassesFlag, item, "weight= and share= are a tenant's: give tenant= too");
    }
    if (c.tenant != 0) {
      const auto [it, inserted] = tenant_weights.emplace(c.tenant, c.tenant_weight);
      if (!inserted && it->second != c.tenant_weight) {
        return bad(kClassesFlag, item, "another class gives this tenant another weight");
      }
    }
    for (const TrafficClass& before : classes) {
      if (before.name == c.name) return bad(kClassesFlag, item, "class named twice");
    }
    classes.push_back(std::move(c));
  }
  return classes;
}

}  // namespace omni::cluster
