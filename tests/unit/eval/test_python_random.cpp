// PythonRandom against CPython 3.11's random.Random(seed).sample(range(n), k), values printed by
// CPython itself: both of sample's paths (a pool for small populations, a set for large ones),
// seeds of one and two 32-bit words, and a generator advanced across calls as the harness does.
#include <gtest/gtest.h>

#include "eval/python_random.h"

namespace st {
namespace {

using Indices = std::vector<size_t>;

TEST(PythonRandom, SuccessiveSamplesFromOneGenerator) {
  PythonRandom random(1234);
  EXPECT_EQ(random.sample(10, 3), (Indices{7, 1, 0}));
  EXPECT_EQ(random.sample(10, 3), (Indices{1, 0, 9}));
  EXPECT_EQ(random.sample(10, 3), (Indices{1, 5, 3}));
}

TEST(PythonRandom, SetPathForLargePopulations) {
  EXPECT_EQ(PythonRandom(0).sample(100, 7), (Indices{49, 97, 53, 5, 33, 65, 62}));
  EXPECT_EQ(PythonRandom(42).sample(1000, 30),
            (Indices{654, 114, 25, 759, 281, 250, 228, 142, 754, 104, 692, 758, 913, 558, 89,
                     604, 432, 32,  30,  95,  223, 238, 517, 616, 27,  574, 203, 733, 665, 718}));
}

TEST(PythonRandom, TwoWordSeedAndPoolPath) {
  EXPECT_EQ(PythonRandom((uint64_t{1} << 40) + 5).sample(30, 25),
            (Indices{16, 29, 8, 21, 0, 28, 1, 5, 2, 4, 7, 20, 19, 12, 3, 24, 27, 15, 17, 25, 23, 6, 10, 26, 14}));
}

}  // namespace
}  // namespace st
