#include "bpe.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <queue>

#include "byte_level.hpp"
#include "utf8.hpp"

namespace omni::tokenizer {
namespace {

constexpr std::uint32_t kNoRank = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kShortWord = 96;

std::string byte_fallback_spelling(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

}  // namespace

std::optional<std::string> BpeModel::build(
    const BpeConfig& config, const std::vector<std::string>& tokens,
    const std::vector<std::pair<std::string, std::string>>& merges) {
  config_ = config;
  raw_to_id_.reserve(tokens.size());
  const auto raw = [&](const std::string& spelling) -> std::optional<std::string> {
    if (!config_.byte_level) return spelling;
    return byte_level::to_bytes(spelling);
  };
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty()) continue;  // a hole in the id space
    auto r = raw(tokens[id]);
    if (r) raw_to_id_.insert(*r, static_cast<TokenId>(id));
  }
  for (unsigned b = 0; b < 256; ++b) {
    byte_ids_[b] = -1;
    const std::string key = config_.byte_level
                                ? std::string(1, static_cast<char>(b))
                                : byte_fallback_spelling(static_cast<unsigned char>(b));
    if (const TokenId* id = raw_to_id_.find(key)) byte_ids_[b] = *id;
  }
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const auto ra = raw(a);
    const auto rb = raw(b);
    if (!ra || !rb) return a + " " + b;
    const TokenId* ia = raw_to_id_.find(*ra);
    const TokenId* ib = raw_to_id_.find(*rb);
    const TokenId* im = raw_to_id_.find(*ra + *rb);
    if (ia == nullptr || ib == nullptr || im == nullptr) return a + " " + b;
    merges_.insert(PairMap::key(*ia, *ib), {static_cast<std::uint32_t>(rank), *im});
  }
  return std::nullopt;
}

std::optional<TokenId> BpeModel::find(std::string_view raw) const noexcept {
  if (const TokenId* id = raw_to_id_.find(raw)) return *id;
  return std::nullopt;
}

std::uint32_t BpeModel::rank_of(TokenId left, TokenId right, TokenId& merged) const noexcept {
  const PairMap::Value* v = merges_.find(PairMap::key(left, right));
  if (v == nullptr) return kNoRank;
  merged = v->merged;
  return v->rank;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<TokenId>& symbols) const {
  if (config_.byte_level) {
    for (char c : word) {
      const std::int64_t id = byte_ids_[static_cast<unsigned char>(c)];
      if (id >= 0)
        symbols.push_back(static_cast<TokenId>(id));  // a vocabulary without the byte drops it
    }
    return;
  }
  bool previous_unknown = false;
  std::size_t i = 0;
  while (i < word.size()) {
    char32_t cp = 0;
    const std::size_t n = utf8::decode_valid(word, i, cp);
    const std::string_view ch = word.substr(i, n);
    i += n;
    if (const TokenId* id = raw_to_id_.find(ch)) {
      symbols.push_back(*id);
      previous_unknown = false;
      continue;
    }
    if (config_.byte_fallback) {
      bool all = true;
      for (char c : ch) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : ch)
          symbols.push_back(static_cast<TokenId>(byte_ids_[static_cast<unsigned char>(c)]));
        previous_unknown = false;
        continue;
      }
    }
    if (config_.unk_id && !(config_.fuse_unk && previous_unknown))
      symbols.push_back(*config_.unk_id);
    previous_unknown = true;
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (config_.ignore_merges) {
    if (const TokenId* id = raw_to_id_.find(word)) {
      out.push_back(*id);
      return;
    }
  }
  const std::size_t first = out.size();
  initial_symbols(word, out);
  const std::size_t count = out.size() - first;
  if (count <= kShortWord) {
    out.resize(first + merge_short(out.data() + first, count));
    return;
  }
  std::vector<TokenId> symbols(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  merge_long(symbols);
  out.resize(first);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

// Flat scan: ranks[i] is the rank of the pair (symbols[i], symbols[i+1]); after a merge only the
// two neighbouring pairs change.
std::size_t BpeModel::merge_short(TokenId* symbols, std::size_t n) const {
  if (n < 2) return n;
  std::uint32_t ranks[kShortWord];
  TokenId merged[kShortWord];
  for (std::size_t i = 0; i + 1 < n; ++i) ranks[i] = rank_of(symbols[i], symbols[i + 1], merged[i]);
  while (n > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < n; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNoRank) break;
    symbols[best] = merged[best];
    for (std::size_t i = best + 1; i + 1 < n; ++i) {
      symbols[i] = symbols[i + 1];
      if (i + 2 < n) {
        ranks[i] = ranks[i + 1];
        merged[i] = merged[i + 1];
      }
    }
    --n;
    if (best > 0) ranks[best - 1] = rank_of(symbols[best - 1], symbols[best], merged[best - 1]);
    if (best + 1 < n) ranks[best] = rank_of(symbols[best], symbols[best + 1], merged[best]);
  }
  return n;
}

// Heap over a doubly linked list of symbols; stale heap entries are detected and skipped.
// 32-bit links and 16-byte candidates keep a 10 MB word within a few hundred MB.
void BpeModel::merge_long(std::vector<TokenId>& symbols) const {
  constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  const auto n = static_cast<std::uint32_t>(symbols.size());
  std::vector<std::uint32_t> prev(n);
  std::vector<std::uint32_t> next(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    prev[i] = i == 0 ? kNone : i - 1;
    next[i] = i + 1 < n ? i + 1 : kNone;
  }
  struct Candidate {
    std::uint32_t rank;
    std::uint32_t pos;
    TokenId left;
    TokenId right;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push = [&](std::uint32_t pos) {
    if (next[pos] == kNone) return;
    TokenId m = 0;
    const std::uint32_t r = rank_of(symbols[pos], symbols[next[pos]], m);
    if (r != kNoRank) heap.push({r, pos, symbols[pos], symbols[next[pos]]});
  };
  for (std::uint32_t i = 0; i + 1 < n; ++i) push(i);
  constexpr TokenId kDead = std::numeric_limits<TokenId>::max();
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    // Stale: the left symbol merged since (its id changed) or its right neighbour did.
    if (symbols[c.pos] != c.left || next[c.pos] == kNone || symbols[next[c.pos]] != c.right)
      continue;
    const std::uint32_t right = next[c.pos];
    TokenId m = 0;
    rank_of(c.left, c.right, m);
    symbols[c.pos] = m;
    symbols[right] = kDead;
    next[c.pos] = next[right];
    if (next[right] != kNone) prev[next[right]] = c.pos;
    if (prev[c.pos] != kNone) push(prev[c.pos]);
    push(c.pos);
  }
  std::size_t w = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (symbols[i] != kDead) symbols[w++] = symbols[i];
  }
  symbols.resize(w);
}

}  // namespace omni::tokenizer
