#include "omni/engine/u64_map.hpp"

#include <gtest/gtest.h>

#include <unordered_map>

#include "omni/common/random.hpp"

namespace omni::engine {
namespace {

TEST(U64Map, InsertFindErase) {
  U64Map m;
  EXPECT_EQ(m.find(1), U64Map::kNone);
  EXPECT_FALSE(m.erase(1));
  EXPECT_TRUE(m.insert(1, 10));
  EXPECT_FALSE(m.insert(1, 11));  // present: unchanged
  EXPECT_EQ(m.find(1), 10u);
  EXPECT_TRUE(m.insert(0, 0));  // key 0 and value 0 are ordinary
  EXPECT_EQ(m.find(0), 0u);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_TRUE(m.erase(1));
  EXPECT_EQ(m.find(1), U64Map::kNone);
  EXPECT_EQ(m.size(), 1u);
  m.clear();
  EXPECT_EQ(m.find(0), U64Map::kNone);
}

// Random inserts and erases over a small key space (long probe runs, many backward shifts)
// agree with std::unordered_map at every step.
TEST(U64Map, MatchesAReferenceMapUnderRandomOperations) {
  for (const std::uint64_t key_space : {64ull, 5000ull, ~0ull}) {
    SeededRandom rng(key_space);
    U64Map m;
    std::unordered_map<std::uint64_t, std::uint32_t> ref;
    for (int op = 0; op < 200000; ++op) {
      const std::uint64_t key =
          key_space == ~0ull ? rng.next_u64() % 3000 * 0x100000000ull : rng.next_u64() % key_space;
      if (rng.bernoulli(0.55)) {
        const auto value = static_cast<std::uint32_t>(op);
        EXPECT_EQ(m.insert(key, value), ref.emplace(key, value).second);
      } else {
        EXPECT_EQ(m.erase(key), ref.erase(key) == 1);
      }
      ASSERT_EQ(m.size(), ref.size());
    }
    for (std::uint64_t k = 0; k < 6000; ++k) {
      const std::uint64_t key = key_space == ~0ull ? k * 0x100000000ull : k;
      const auto it = ref.find(key);
      EXPECT_EQ(m.find(key), it == ref.end() ? U64Map::kNone : it->second);
    }
  }
}

}  // namespace
}  // namespace omni::engine
