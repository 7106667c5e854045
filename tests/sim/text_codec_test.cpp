#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/text_codec.hpp"
#include "sim/token_gen.hpp"

namespace omni::sim {
namespace {

TEST(BuiltinCodec, RoundTripsAnyText) {
  auto codec = make_builtin_codec();
  for (const std::string& text :
       std::vector<std::string>{"", "The cache of the model", " the river",
                                "héllo, wörld  two  spaces", std::string("nul\0byte", 8)}) {
    EXPECT_EQ(codec->decode(codec->encode(text)), text) << text;
  }
}

TEST(BuiltinCodec, KnownWordsAreOneTokenUnknownOnesAreBytes) {
  auto codec = make_builtin_codec();
  EXPECT_EQ(codec->encode(" the model").size(), 2u);
  EXPECT_EQ(codec->encode("xyz").size(), 3u);
  EXPECT_EQ(codec->encode("The").size(), 3u);  // no leading space: not the word " the"
}

TEST(TokenGenerator, DependsOnlyOnSeedIdAndPosition) {
  auto codec = make_builtin_codec();
  TokenGenerator a(7, "req-1", *codec), b(7, "req-1", *codec), c(8, "req-1", *codec),
      d(7, "req-2", *codec);
  EXPECT_EQ(a.range(0, 32), b.range(0, 32));
  EXPECT_NE(a.range(0, 32), c.range(0, 32));
  EXPECT_NE(a.range(0, 32), d.range(0, 32));
  EXPECT_EQ(a.range(5, 9), (std::vector<std::uint32_t>{a.at(5), a.at(6), a.at(7), a.at(8)}));
  for (std::uint32_t t : a.range(0, 64)) EXPECT_FALSE(codec->token_text(t).empty());
}

}  // namespace
}  // namespace omni::sim
