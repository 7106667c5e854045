// Mid-stream migration's pure half: which requests may continue elsewhere, the continuation's
// body, and the splice that makes two engines' streams one.
#include "omni/proxy/migration.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "migration_fuzz_checks.hpp"
#include "support/corpus.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

std::vector<JsonMember> members(const std::string& body) {
  auto scanned = scan_object(body);
  EXPECT_TRUE(scanned.ok()) << body;
  return scanned.ok() ? *scanned : std::vector<JsonMember>{};
}

std::string blocker(const std::string& body, Api api = Api::kCompletions) {
  return migration_blocker(members(body), api);
}

TEST(MigrationBlocker, PlainRequestsMayContinue) {
  EXPECT_EQ(blocker(R"({"prompt":"hi","max_tokens":8,"stream":true,"n":1,"logprobs":null})"), "");
  EXPECT_EQ(blocker(R"({"prompt":[1,2,3],"echo":false,"best_of":1})"), "");
  EXPECT_EQ(blocker(R"({"prompt":["one prompt"],"suffix":null})"), "");
  EXPECT_EQ(blocker(R"({"messages":[],"logprobs":false,"top_logprobs":0,"tools":[],)"
                    R"("response_format":{"type":"text"}})",
                    Api::kChatCompletions),
            "");
}

TEST(MigrationBlocker, ContinuationsThatWouldChangeTheAnswerAreRefused) {
  EXPECT_EQ(blocker(R"({"prompt":"hi","n":2})"), "n > 1");
  EXPECT_EQ(blocker(R"({"prompt":"hi","best_of":3})"), "best_of > 1");
  EXPECT_EQ(blocker(R"({"prompt":"hi","logprobs":0})"), "logprobs");
  EXPECT_EQ(blocker(R"({"prompt":"hi","prompt_logprobs":1})"), "prompt_logprobs");
  EXPECT_EQ(blocker(R"({"prompt":"hi","echo":true})"), "echo");
  EXPECT_EQ(blocker(R"({"prompt":"hi","suffix":"end"})"), "suffix");
  EXPECT_EQ(blocker(R"({"prompt":"hi","guided_json":{"type":"object"}})"), "guided_json");
  EXPECT_EQ(blocker(R"({"prompt":"hi","structured_outputs":{"regex":"a+"}})"),
            "structured_outputs");
  EXPECT_EQ(blocker(R"({"prompt":["a","b"]})"), "a batch of prompts");
  EXPECT_EQ(blocker(R"({"prompt":[[1],[2]]})"), "a batch of prompts");
  EXPECT_EQ(blocker(R"({"messages":[],"logprobs":true})", Api::kChatCompletions), "logprobs");
  EXPECT_EQ(blocker(R"({"messages":[],"top_logprobs":2})", Api::kChatCompletions), "top_logprobs");
  EXPECT_EQ(
      blocker(R"({"messages":[],"response_format":{"type":"json_object"}})", Api::kChatCompletions),
      "response_format");
  EXPECT_EQ(blocker(R"({"messages":[],"tools":[{"type":"function"}]})", Api::kChatCompletions),
            "tools");
  EXPECT_EQ(blocker(R"({"messages":[],"continue_final_message":true})", Api::kChatCompletions),
            "continue_final_message");
}

json::object continued(const std::string& body, Api api, const SentSoFar& sent) {
  const auto m = members(body);
  auto out = continuation_body(m, api, sent);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? json::parse(*out).as_object() : json::object{};
}

TEST(ContinuationBody, ATextPromptGetsTheSentTextAndTheRestOfItsBudget) {
  SentSoFar sent{" Paris is", 3, std::nullopt};
  const json::object body =
      continued(R"({"model":"m","prompt":"The capital of France:","max_tokens":10,"min_tokens":5,)"
                R"("stream":true,"temperature":0.5})",
                Api::kCompletions, sent);
  EXPECT_EQ(body.at("prompt").as_string(), "The capital of France: Paris is");
  EXPECT_EQ(body.at("max_tokens").as_int64(), 7);
  EXPECT_EQ(body.at("min_tokens").as_int64(), 2);
  EXPECT_EQ(body.at("temperature").as_double(), 0.5) << "every other member kept";
  EXPECT_EQ(body.at("model").as_string(), "m");
  EXPECT_FALSE(body.contains("continue_final_message"));
}

TEST(ContinuationBody, BudgetsNeverFallBelowTheirFloor) {
  SentSoFar sent{"abc", 12, std::nullopt};
  const json::object body =
      continued(R"({"prompt":["x"],"max_tokens":10,"min_tokens":4})", Api::kCompletions, sent);
  EXPECT_EQ(body.at("prompt").as_string(), "xabc") << "a batch of one is its prompt";
  EXPECT_EQ(body.at("max_tokens").as_int64(), 1);
  EXPECT_EQ(body.at("min_tokens").as_int64(), 0);
  // No bound stays no bound.
  const json::object open =
      continued(R"({"prompt":"x","max_tokens":null})", Api::kCompletions, sent);
  EXPECT_TRUE(open.at("max_tokens").is_null());
}

TEST(ContinuationBody, ATokenIdPromptContinuesOnTheSentTextsIds) {
  SentSoFar sent{"ab", 2, std::vector<std::uint32_t>{7, 8}};
  const json::object body =
      continued(R"({"prompt":[1,2,3],"max_tokens":4})", Api::kCompletions, sent);
  EXPECT_EQ(json::serialize(body.at("prompt")), "[1,2,3,7,8]");
  EXPECT_EQ(body.at("max_tokens").as_int64(), 2);
  sent.ids.reset();
  auto refused = continuation_body(members(R"({"prompt":[1,2,3]})"), Api::kCompletions, sent);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("token-id prompt"), std::string::npos);
}

TEST(ContinuationBody, AChatRequestContinuesItsFinalAssistantMessage) {
  SentSoFar sent{"Hello, wor", 4, std::nullopt};
  const json::object body =
      continued(R"({"messages":[{"role":"user","content":"greet"}],"max_completion_tokens":9,)"
                R"("max_tokens":20})",
                Api::kChatCompletions, sent);
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].at("role").as_string(), "assistant");
  EXPECT_EQ(messages[1].at("content").as_string(), "Hello, wor");
  EXPECT_TRUE(body.at("continue_final_message").as_bool());
  EXPECT_FALSE(body.at("add_generation_prompt").as_bool());
  EXPECT_EQ(body.at("max_completion_tokens").as_int64(), 5);
  EXPECT_EQ(body.at("max_tokens").as_int64(), 16);
}

std::string chunk(const std::string& id, const std::string& text,
                  const std::string& finish = "null") {
  return "data: {\"id\":\"" + id + "\",\"object\":\"text_completion\",\"choices\":[{\"index\":0," +
         "\"text\":\"" + text + "\",\"finish_reason\":" + finish + "}],\"usage\":null}\n\n";
}

TEST(StreamSplice, RelaysWholeEventsAndRemembersTheText) {
  StreamSplice splice;
  const std::string a = chunk("cmpl-1", "Hel");
  const std::string b = chunk("cmpl-1", "lo");
  // An event split across pieces is relayed once it is whole.
  auto fed = splice.feed(a + b.substr(0, 10));
  EXPECT_EQ(fed.out, a);
  EXPECT_FALSE(fed.engine_error);
  fed = splice.feed(b.substr(10));
  EXPECT_EQ(fed.out, b);
  EXPECT_EQ(splice.text(), "Hello");
  EXPECT_EQ(splice.tokens(), 2u) << "one token per event without usage";
  EXPECT_FALSE(splice.finished());
  // Comments and CRLF framing pass through.
  fed = splice.feed(": keep-alive\r\n\r\n");
  EXPECT_EQ(fed.out, ": keep-alive\n\n");
}

TEST(StreamSplice, TheEnginesErrorEventAndWhatFollowsAreWithheld) {
  StreamSplice splice;
  auto fed = splice.feed(chunk("cmpl-1", "a") +
                         "data: {\"error\": {\"message\": \"engine died\", \"code\": 500}}\n\n" +
                         "data: [DONE]\n\n");
  EXPECT_TRUE(fed.engine_error);
  EXPECT_EQ(fed.out, chunk("cmpl-1", "a"));
  EXPECT_EQ(splice.engine_error(), "engine died");
  EXPECT_FALSE(splice.done_seen());
  // The continuation's events flow again.
  splice.continue_elsewhere(1, 3);
  fed = splice.feed(chunk("cmpl-2", "b") + "data: [DONE]\n\n");
  EXPECT_FALSE(fed.engine_error);
  EXPECT_NE(fed.out.find("\"text\":\"b\""), std::string::npos) << fed.out;
  EXPECT_TRUE(splice.done_seen());
}

TEST(StreamSplice, AContinuationReadsAsTheFirstStreamWithTheWholeUsage) {
  StreamSplice splice;
  (void)splice.feed(chunk("cmpl-first", "a") + chunk("cmpl-first", "b"));
  splice.continue_elsewhere(2, 10);
  auto fed = splice.feed(chunk("cmpl-second", "c", "\"length\""));
  const json::object event = json::parse(fed.out.substr(6)).as_object();
  EXPECT_EQ(event.at("id").as_string(), "cmpl-first");
  EXPECT_EQ(event.at("choices").as_array()[0].at("text").as_string(), "c");
  EXPECT_TRUE(splice.finished());
  EXPECT_EQ(splice.text(), "abc");
  EXPECT_EQ(splice.tokens(), 3u);
  // The continuation's usage counts its longer prompt and only its own tokens.
  fed = splice.feed(
      "data: {\"id\":\"cmpl-second\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,"
      "\"completion_tokens\":1,\"total_tokens\":13}}\n\ndata: [DONE]\n\n");
  const std::string usage_event = fed.out.substr(0, fed.out.find("\n\n"));
  const json::object usage = json::parse(usage_event.substr(6)).at("usage").as_object();
  EXPECT_EQ(usage.at("prompt_tokens").as_int64(), 10);
  EXPECT_EQ(usage.at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(usage.at("total_tokens").as_int64(), 13);
  EXPECT_TRUE(splice.done_seen());
}

TEST(StreamSplice, WithoutTheExactPromptSizeTheContinuationsLessTheSentTokensIsReported) {
  StreamSplice splice;
  (void)splice.feed(chunk("x", "a"));
  splice.continue_elsewhere(1, std::nullopt);
  auto fed = splice.feed(
      "data: {\"id\":\"y\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,"
      "\"completion_tokens\":2,\"total_tokens\":10}}\n\n");
  const json::object usage = json::parse(fed.out.substr(6)).at("usage").as_object();
  EXPECT_EQ(usage.at("prompt_tokens").as_int64(), 7);
  EXPECT_EQ(usage.at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(usage.at("total_tokens").as_int64(), 10);
}

TEST(StreamSplice, AChatContinuationDropsItsRoleChunk) {
  StreamSplice splice;
  (void)splice.feed(
      "data: {\"id\":\"chat-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
      "\"content\":\"\"},\"finish_reason\":null}]}\n\n"
      "data: {\"id\":\"chat-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},"
      "\"finish_reason\":null}]}\n\n");
  EXPECT_EQ(splice.text(), "Hi");
  splice.continue_elsewhere(1, 5);
  auto fed = splice.feed(
      "data: {\"id\":\"chat-2\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
      "\"content\":\"\"},\"finish_reason\":null}]}\n\n"
      "data: {\"id\":\"chat-2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},"
      "\"finish_reason\":\"stop\"}]}\n\n");
  EXPECT_EQ(fed.out.find("role"), std::string::npos) << fed.out;
  EXPECT_NE(fed.out.find("\"id\":\"chat-1\""), std::string::npos) << fed.out;
  EXPECT_EQ(splice.text(), "Hi there");
  EXPECT_TRUE(splice.finished());
}

TEST(StreamSplice, AnAnswerLongerThanTheBoundIsNoLongerFollowed) {
  StreamSplice splice(4);
  auto fed = splice.feed(chunk("x", "abc"));
  EXPECT_TRUE(splice.can_continue());
  const std::string rest = chunk("x", "de") + "data: {\"partial";
  fed = splice.feed(rest);
  EXPECT_FALSE(splice.can_continue()) << "5 bytes of text over a bound of 4";
  EXPECT_TRUE(splice.text().empty()) << "the text is dropped";
  EXPECT_EQ(fed.out, rest) << "from there on the bytes pass as they come, partial event included";
  fed = splice.feed(" event");
  EXPECT_EQ(fed.out, " event");
}

std::string id_chunk(const std::string& text, const std::string& ids) {
  return "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\"" + text +
         "\",\"token_ids\":" + ids + ",\"prompt_token_ids\":null}]}\n\n";
}

TEST(StreamSplice, TrackedTokenIdsAreKeptAndHiddenFromAClientThatDidNotAsk) {
  StreamSplice splice;
  splice.track_token_ids(true);
  auto fed = splice.feed(id_chunk("ab", "[5,6]") + id_chunk("c", "[7]"));
  EXPECT_EQ(fed.out.find("[5,6]"), std::string::npos) << fed.out;
  EXPECT_NE(fed.out.find("\"token_ids\":null"), std::string::npos) << fed.out;
  ASSERT_TRUE(splice.token_ids().has_value());
  EXPECT_EQ(*splice.token_ids(), (std::vector<std::uint32_t>{5, 6, 7}));
  // The continuation's ids follow.
  splice.continue_elsewhere(3, 4);
  (void)splice.feed(id_chunk("d", "[8]"));
  EXPECT_EQ(*splice.token_ids(), (std::vector<std::uint32_t>{5, 6, 7, 8}));
  // An event with text and no ids: no exact continuation any more.
  (void)splice.feed(chunk("x", "e"));
  EXPECT_FALSE(splice.token_ids().has_value());
}

TEST(StreamSplice, TokenIdsTheClientAskedForAreRelayedAsTheyCame) {
  StreamSplice splice;
  splice.track_token_ids(false);
  const std::string event = id_chunk("ab", "[5,6]");
  EXPECT_EQ(splice.feed(event).out, event);
  EXPECT_EQ(*splice.token_ids(), (std::vector<std::uint32_t>{5, 6}));
}

TEST(MigrationPrompt, TokenIdPromptsAreToldApart) {
  EXPECT_TRUE(prompt_is_token_ids(members(R"({"prompt":[1,2]})")));
  EXPECT_TRUE(prompt_is_token_ids(members(R"({"prompt":[[1,2]]})")));
  EXPECT_FALSE(prompt_is_token_ids(members(R"({"prompt":"text"})")));
  EXPECT_FALSE(prompt_is_token_ids(members(R"({"prompt":["text"]})")));
  EXPECT_FALSE(prompt_is_token_ids(members(R"({"messages":[]})")));
}

TEST(StreamSplice, TheEnginesOwnCountWinsWhenItsEventsCarryUsage) {
  StreamSplice splice;
  (void)splice.feed(
      "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\"abc\"}],"
      "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\n");
  EXPECT_TRUE(splice.usage_counted());
  EXPECT_EQ(splice.tokens(), 3u) << "three tokens in one event";
}

// The fuzz target's corpus (fuzz/proxy_migration), through the same properties.
TEST(MigrationCorpus, EveryInputKeepsTheSplicesProperties) {
  std::size_t files = 0;
  for (const auto& [path, input] :
       omni::test_support::read_corpus(OMNI_PROXY_MIGRATION_CORPUS_DIR)) {
    ++files;
    const std::string failure = fuzz::check_migration(input);
    EXPECT_TRUE(failure.empty()) << path << ": " << failure;
  }
  EXPECT_GE(files, 7u);
}

}  // namespace
}  // namespace omni::proxy
