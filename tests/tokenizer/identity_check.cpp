// identity_check TOKENIZER CORPUS.jsonl EXPECTED.jsonl: compares our ids and decoded text with the
// reference's (tests/tokenizer/reference/encode.mjs) for every document, every id. A mismatch
// prints the document, the first differing position and the text span around it. Exit 1 on any
// mismatch. Each document is also encoded through the prefix cache, one document extending the
// previous one's text, which must give the same ids as a full encode.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <boost/json.hpp>

#include "omni/tokenizer/tokenizer.hpp"

namespace {

using omni::tokenizer::TokenId;

std::vector<TokenId> ids_of(const boost::json::value& v) {
  std::vector<TokenId> ids;
  for (const auto& x : v.as_array())
    ids.push_back(static_cast<TokenId>(x.to_number<std::uint64_t>()));
  return ids;
}

std::string printable(std::string_view s) {
  return boost::json::serialize(boost::json::value(boost::json::string(s)));
}

void report(const omni::tokenizer::Tokenizer& tok, std::size_t doc,
            const std::vector<TokenId>& want, const std::vector<TokenId>& got) {
  const auto diff = static_cast<std::size_t>(
      std::mismatch(want.begin(), want.end(), got.begin(), got.end()).first - want.begin());
  const std::size_t from = diff > 3 ? diff - 3 : 0;
  const auto span = [&](const std::vector<TokenId>& ids) {
    const std::size_t to = std::min(ids.size(), diff + 4);
    std::string out;
    for (std::size_t i = from; i < to; ++i) out += std::to_string(ids[i]) + (i + 1 < to ? "," : "");
    const std::vector<TokenId> part(
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(from, ids.size())),
        ids.begin() + static_cast<std::ptrdiff_t>(to));
    return "[" + out + "] " + printable(tok.decode(part));
  };
  std::cerr << "document " << doc << ": first difference at id " << diff << " (reference "
            << want.size() << " ids, ours " << got.size() << ")\n  reference: " << span(want)
            << "\n  ours:      " << span(got) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: identity_check TOKENIZER CORPUS.jsonl EXPECTED.jsonl\n";
    return 2;
  }
  auto loaded = omni::tokenizer::Tokenizer::load(argv[1]);
  if (!loaded.ok()) {
    std::cerr << loaded.error().to_string() << "\n";
    return 2;
  }
  const auto& tok = **loaded;
  omni::tokenizer::Encoder encoder(*loaded);
  omni::tokenizer::Encoder incremental(*loaded);
  std::ifstream corpus(argv[2]);
  std::ifstream expected(argv[3]);
  std::string text_line;
  std::string expected_line;
  std::size_t docs = 0, ids_compared = 0, id_mismatches = 0, decode_mismatches = 0,
              prefix_mismatches = 0;
  std::string conversation;
  while (std::getline(corpus, text_line)) {
    if (text_line.empty()) continue;
    if (!std::getline(expected, expected_line)) {
      std::cerr << "expected file ends early at document " << docs << "\n";
      return 1;
    }
    const auto text = boost::json::parse(text_line).at("text").as_string();
    const auto want_obj = boost::json::parse(expected_line).as_object();
    const auto want = ids_of(want_obj.at("ids"));
    auto got = encoder.encode(text);
    if (!got.ok()) {
      std::cerr << "document " << docs << ": " << got.error().to_string() << "\n";
      return 1;
    }
    ids_compared += want.size();
    if (*got != want) {
      if (++id_mismatches <= 20) report(tok, docs, want, *got);
    }
    const std::string decoded = tok.decode(want);
    if (decoded != want_obj.at("decoded").as_string()) {
      if (++decode_mismatches <= 5) std::cerr << "document " << docs << ": decode differs\n";
    }
    // Multi-turn: the conversation grows by this document; every tenth document starts anew.
    conversation = docs % 10 == 0 ? std::string(text) : conversation + std::string(text);
    auto inc = incremental.encode_incremental(conversation);
    auto full = encoder.encode(conversation);
    if (!inc.ok() || !full.ok() || *inc != *full) {
      if (++prefix_mismatches <= 5)
        std::cerr << "document " << docs << ": prefix-cached encode differs from a full encode\n";
    }
    ++docs;
  }
  const auto& st = incremental.stats();
  std::cout << argv[1] << ": " << docs << " documents, " << ids_compared << " ids compared, "
            << id_mismatches << " documents with different ids, " << decode_mismatches
            << " with a different decode, " << prefix_mismatches << " prefix-cache differences ("
            << st.prefix_reuses << " reuses, " << st.reused_bytes << " bytes reused)\n";
  return id_mismatches == 0 && decode_mismatches == 0 && prefix_mismatches == 0 ? 0 : 1;
}
