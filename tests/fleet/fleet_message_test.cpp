// The fleet message codec: a round trip, and every malformed shape refused with a reason.
#include "omni/fleet/fleet_message.hpp"

#include <gtest/gtest.h>

#include "fleet_fuzz_checks.hpp"
#include "support/corpus.hpp"

namespace omni::fleet {
namespace {

FleetMessage sample(MessageKind kind = MessageKind::kDelta) {
  FleetMessage m;
  m.fleet = "prod";
  m.replica = "gw-1:8000";
  m.epoch = "9f3c0a6e12b4d871";
  m.config = "5be1";
  m.seq = 42;
  m.kind = kind;
  m.loads = {{"10.0.0.3:8000", 4096, 3000, 1}, {"10.0.0.4:8000", -512, -500, -1}};
  if (kind == MessageKind::kSnapshot) m.loads = {{"10.0.0.3:8000", 4096, 3000, 1}};
  if (kind == MessageKind::kBye) m.loads.clear();
  if (kind == MessageKind::kPrefix) {
    m.loads.clear();
    m.prefix_node = "10.0.0.1:8000";
    m.blocks = {0, 1, 18446744073709551615ull, 42};
  }
  return m;
}

TEST(FleetMessage, EveryKindRoundTrips) {
  for (const MessageKind kind :
       {MessageKind::kDelta, MessageKind::kSnapshot, MessageKind::kBye, MessageKind::kPrefix}) {
    const FleetMessage m = sample(kind);
    auto back = decode(encode(m));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, m);
  }
}

std::string refusal(std::string_view text) {
  auto m = decode(text);
  EXPECT_FALSE(m.ok()) << text;
  return m.ok() ? "" : m.error().message;
}

TEST(FleetMessage, MalformedMessagesAreRefusedWithTheReason) {
  const std::string head = R"({"v":1,"fleet":"f","replica":"r","epoch":"e","config":"c","seq":1,)";
  EXPECT_NE(refusal("not json").find("not JSON"), std::string::npos);
  EXPECT_NE(refusal("[1]").find("not an object"), std::string::npos);
  EXPECT_NE(refusal(R"({"v":2})").find("unknown version"), std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"gossip","loads":[]})").find("unknown kind"),
            std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"delta"})").find("loads is missing"), std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"delta","loads":{}})").find("must be a list"),
            std::string::npos);
  EXPECT_NE(refusal(head +
                    R"("kind":"delta","loads":[{"node":"a","tokens":"1","prompt":0,"running":0}]})")
                .find("tokens must be an integer"),
            std::string::npos);
  EXPECT_NE(
      refusal(head +
              R"("kind":"snapshot","loads":[{"node":"a","tokens":-1,"prompt":0,"running":0}]})")
          .find("negative"),
      std::string::npos);
  EXPECT_NE(
      refusal(head + R"("kind":"delta","loads":[{"node":"","tokens":1,"prompt":0,"running":0}]})")
          .find("node is empty"),
      std::string::npos);
  EXPECT_NE(
      refusal(head +
              R"("kind":"delta","loads":[{"node":"a","tokens":1e30,"prompt":0,"running":0}]})")
          .find("tokens"),
      std::string::npos);
  EXPECT_NE(refusal(R"({"v":1,"fleet":"f","replica":"r\u0001","epoch":"e","config":"c","seq":1,)"
                    R"("kind":"bye"})")
                .find("control byte"),
            std::string::npos);
  EXPECT_NE(refusal(std::string(kMaxMessageBytes + 1, ' ')).find("too large"), std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"prefix","node":"a"})").find("blocks must be a list"),
            std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"prefix","node":"a","blocks":[]})").find("blocks is empty"),
            std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"prefix","node":"a","blocks":[-1]})").find("unsigned"),
            std::string::npos);
  EXPECT_NE(refusal(head + R"("kind":"prefix","blocks":[1]})").find("node must be a string"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"v":1,"a":[[[[[[[[[[1]]]]]]]]]]})").find("not JSON"), std::string::npos);
}

// The fuzz target's corpus (fuzz/fleet_message), through the same properties.
TEST(FleetMessageCorpus, EveryInputDecodesCleanlyOrIsRefused) {
  std::size_t files = 0;
  for (const auto& [path, input] : omni::test_support::read_corpus(OMNI_FLEET_CORPUS_DIR)) {
    ++files;
    const std::string failure = fuzz::check_message(input);
    EXPECT_TRUE(failure.empty()) << path << ": " << failure;
  }
  EXPECT_GE(files, 6u);
}

}  // namespace
}  // namespace omni::fleet
