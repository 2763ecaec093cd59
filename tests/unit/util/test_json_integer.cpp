// Integers from untrusted JSON: floats, out-of-range values and negatives for unsigned types are
// refused instead of cast (a fuzz finding: 4.3e23 as a checkpoint's numel was undefined behaviour).
#include <gtest/gtest.h>

#include "util/json_integer.h"

namespace st {
namespace {

using nlohmann::json;

TEST(JsonInteger, OnlyIntegersThatFit) {
  EXPECT_EQ(json_integer<int64_t>(json::parse("42")), 42);
  EXPECT_EQ(json_integer<int64_t>(json::parse("-7")), -7);
  EXPECT_EQ(json_integer<uint64_t>(json::parse("18446744073709551615")), UINT64_MAX);
  EXPECT_FALSE(json_integer<int64_t>(json::parse("18446744073709551615")));  // past int64
  EXPECT_FALSE(json_integer<int64_t>(json::parse("4.3e23")));
  EXPECT_FALSE(json_integer<int64_t>(json::parse("2.0")));                   // a float, even a whole one
  EXPECT_FALSE(json_integer<uint64_t>(json::parse("-1")));
  EXPECT_FALSE(json_integer<int>(json::parse("4294967296")));
  EXPECT_EQ(json_integer<int>(json::parse("-2147483648")), INT32_MIN);
  EXPECT_FALSE(json_integer<int64_t>(json::parse("true")));
  EXPECT_FALSE(json_integer<int64_t>(json::parse("\"5\"")));
}

}  // namespace
}  // namespace st
