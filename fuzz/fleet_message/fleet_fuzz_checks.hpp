// The properties fuzz_fleet_message checks on each input, shared with the unit test that replays
// the corpus: decode never crashes; what decodes round-trips through encode; applying it to a
// FleetView never crashes and never yields a negative count.
#pragma once

#include <string>
#include <string_view>

#include "omni/fleet/fleet_view.hpp"

namespace omni::fleet::fuzz {

inline std::string check_message(std::string_view input) {
  auto message = decode(input);
  if (!message.ok()) return "";
  auto again = decode(encode(*message));
  if (!again.ok()) return "an encoded message does not decode: " + again.error().message;
  if (!(*again == *message)) return "a message does not round-trip";
  FleetView view(message->fleet, "self", message->config, std::chrono::seconds(1));
  (void)view.apply(*message, TimePoint{});
  for (const auto& [node, load] : view.totals()) {
    if (node.empty()) return "a load for an unnamed engine";
  }
  return "";
}

}  // namespace omni::fleet::fuzz
