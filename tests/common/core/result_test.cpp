#include "omni/common/result.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <memory>
#include <set>
#include <string>

namespace omni {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return make_error(ErrorCode::kInvalidArgument, "must be positive");
  return x;
}

TEST(Result, HoldsValue) {
  auto r = parse_positive(7);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(r.value_or(1), 7);
}

TEST(Result, HoldsError) {
  auto r = parse_positive(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message, "must be positive");
  EXPECT_EQ(r.error().to_string(), "invalid_argument: must be positive");
  EXPECT_EQ(r.value_or(1), 1);
}

TEST(Result, MovesOnlyTypes) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(3);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 3);
}

TEST(Result, VoidStatus) {
  Status good = ok_status();
  EXPECT_TRUE(good.ok());
  Status bad = make_error(ErrorCode::kTimeout, "read");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kTimeout);
}

TEST(Result, EveryCodeHasADistinctName) {
  const ErrorCode all[] = {ErrorCode::kInvalidArgument,   ErrorCode::kNotFound,
                           ErrorCode::kUnsupported,       ErrorCode::kTooLarge,
                           ErrorCode::kResourceExhausted, ErrorCode::kTimeout,
                           ErrorCode::kUnavailable,       ErrorCode::kCancelled,
                           ErrorCode::kProtocol,          ErrorCode::kIo,
                           ErrorCode::kInternal};
  std::set<std::string_view> names;
  for (ErrorCode c : all) names.insert(error_code_name(c));
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(error_code_name(ErrorCode::kResourceExhausted), "resource_exhausted");
}

}  // namespace
}  // namespace omni
