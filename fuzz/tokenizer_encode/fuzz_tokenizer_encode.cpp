// libFuzzer target for the encoder: any bytes (invalid UTF-8, NUL, special-token fragments) must
// encode without crashing; the prefix cache must agree with a full encode when the input extends
// the previous one; decode and the streaming detokenizer must agree.
//
// The tokenizer is the real Qwen3 one by default (NFC normalizer, special tokens); set
// OMNI_TOKENIZER_FUZZ_MODEL to a model directory to fuzz another.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "omni/tokenizer/tokenizer.hpp"

namespace {

std::shared_ptr<const omni::tokenizer::Tokenizer> g_tokenizer;
std::string g_previous;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* env = std::getenv("OMNI_TOKENIZER_FUZZ_MODEL");
  const std::string dir = env != nullptr ? env : OMNI_TOKENIZER_FUZZ_DEFAULT_MODEL;
  auto loaded = omni::tokenizer::Tokenizer::load(dir);
  if (!loaded.ok()) std::abort();
  g_tokenizer = *loaded;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace omni::tokenizer;
  const std::string text(reinterpret_cast<const char*>(data), size);
  static Encoder encoder(g_tokenizer);
  static Encoder cached(g_tokenizer);
  auto ids = encoder.encode(text);
  if (!ids.ok()) return 0;
  // The prefix cache, on a text that extends the previous input.
  const std::string extended = g_previous + text;
  auto incremental = cached.encode_incremental(extended);
  auto full = encoder.encode(extended);
  if (!incremental.ok() || !full.ok() || *incremental != *full) std::abort();
  g_previous = extended.size() < 4096 ? extended : text;
  Detokenizer stream(g_tokenizer);
  std::string joined;
  for (TokenId id : *ids) joined += stream.push(id);
  joined += stream.finish();
  if (joined != g_tokenizer->decode(*ids)) std::abort();
  return 0;
}
