// Where a generation stops, as vLLM's stop checker decides: EOS from the output-length model,
// min_tokens, ignore_eos, stop token ids, stop strings (order, include_stop_str_in_output), and
// the streamed text cut to match.
#include <gtest/gtest.h>

#include "sim/output_plan.hpp"

namespace omni::sim {
namespace {

class OutputPlanTest : public ::testing::Test {
 protected:
  std::unique_ptr<TextCodec> codec_ = make_builtin_codec();
  TokenGenerator gen_{7, "req-1", *codec_};
  std::string text(std::uint32_t from, std::uint32_t to) const {
    return codec_->decode(gen_.range(from, to));
  }
};

TEST_F(OutputPlanTest, EosEndsAtTheDrawnLengthAndIsNotShown) {
  const OutputPlan p = plan_output(gen_, *codec_, 100, 12, {});
  EXPECT_TRUE(p.stops);
  EXPECT_EQ(p.tokens, 12u);
  EXPECT_EQ(p.text_tokens, 11u);
  EXPECT_EQ(p.stop_reason, "null");
  // Past max_tokens, the limit wins: "length".
  const OutputPlan l = plan_output(gen_, *codec_, 10, 12, {});
  EXPECT_FALSE(l.stops);
  EXPECT_EQ(l.tokens, 10u);
  // ignore_eos: always the limit.
  StopConditions ignore;
  ignore.ignore_eos = true;
  EXPECT_FALSE(plan_output(gen_, *codec_, 100, 12, ignore).stops);
}

TEST_F(OutputPlanTest, MinTokensMasksEosAndStops) {
  StopConditions c;
  c.min_tokens = 20;
  const OutputPlan p = plan_output(gen_, *codec_, 100, 12, c);
  EXPECT_TRUE(p.stops);
  EXPECT_EQ(p.tokens, 21u);         // the first position where EOS may come
  c.stop_token_ids = {gen_.at(3)};  // token 4 would stop, but min_tokens masks it
  const OutputPlan q = plan_output(gen_, *codec_, 100, 50, c);
  EXPECT_GT(q.tokens, 20u);
}

TEST_F(OutputPlanTest, StopTokenIdStopsAndKeepsItsText) {
  StopConditions c;
  c.ignore_eos = true;
  c.stop_token_ids = {gen_.at(5)};
  const OutputPlan p = plan_output(gen_, *codec_, 100, 1, c);
  std::uint32_t first = 0;
  while (gen_.at(first) != gen_.at(5)) ++first;
  EXPECT_TRUE(p.stops);
  EXPECT_EQ(p.tokens, first + 1);
  EXPECT_EQ(p.text_tokens, first + 1);
  EXPECT_EQ(p.stop_reason, std::to_string(gen_.at(5)));
}

TEST_F(OutputPlanTest, StopStringCutsTheTextInRequestOrder) {
  const std::string full = text(0, 40);
  // A stop string that starts inside token 6's text and ends in token 7's.
  const std::size_t at = text(0, 6).size() - 1;
  const std::string s = full.substr(at, 3);
  ASSERT_GT(full.size(), at + 3);
  StopConditions c;
  c.ignore_eos = true;
  c.stop = {"zzzz-never", s};
  const OutputPlan p = plan_output(gen_, *codec_, 40, 1, c);
  ASSERT_TRUE(p.stops);
  EXPECT_EQ(p.stop_reason, "\"" + s + "\"");
  EXPECT_EQ(p.text_bytes, full.find(s));
  EXPECT_LE(text(0, p.tokens).find(s) + s.size(), text(0, p.tokens).size());
  c.include_stop_str_in_output = true;
  EXPECT_EQ(plan_output(gen_, *codec_, 40, 1, c).text_bytes, full.find(s) + s.size());
}

TEST_F(OutputPlanTest, ShownTextNeverStreamsPastTheCut) {
  StopConditions c;
  c.ignore_eos = true;
  const std::string full = text(0, 40);
  const std::string s = full.substr(text(0, 10).size(), 4);
  c.stop = {s};
  const OutputPlan p = plan_output(gen_, *codec_, 40, 1, c);
  ASSERT_TRUE(p.stops);
  ShownText shown(&p);
  std::string streamed;
  for (std::uint32_t k = 0; k < p.tokens; ++k) streamed += shown.feed(k, k + 1, *codec_, gen_);
  EXPECT_EQ(streamed, full.substr(0, full.find(s)));
  // EOS: the last token's text is not shown.
  const OutputPlan eos = plan_output(gen_, *codec_, 40, 5, {});
  ShownText whole(&eos);
  EXPECT_EQ(whole.feed(0, 5, *codec_, gen_), text(0, 4));
}

}  // namespace
}  // namespace omni::sim
