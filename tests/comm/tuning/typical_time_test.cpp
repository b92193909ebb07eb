// How init reads a run of timed calls: the typical time that ranks the
// algorithms, the mean without stalls that a run of calls costs, and the
// factor of the slow draws between the two that every prediction carries.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "src/comm/tuning/typical_time.h"

namespace tutti {

namespace {

// Ranks sharing cores draw slow calls now and then, and a run of calls
// pays for them: 14 calls of 100 us and 6 of 250 cost 145 a call.
TEST(TypicalTime, ARunOfCallsCostsItsMeanWithoutStalls) {
  std::vector<double> took(14, 100.0);
  took.insert(took.begin() + 3, 6, 250.0);
  EXPECT_DOUBLE_EQ(meanWithoutStallsUs(took), 145.0);
  EXPECT_DOUBLE_EQ(typicalUs(took), 100.0);  // the fastest two thirds
  EXPECT_DOUBLE_EQ(meanWithoutStallsUs({80, 120}), 100.0);
  EXPECT_DOUBLE_EQ(meanWithoutStallsUs({42}), 42.0);
  EXPECT_DOUBLE_EQ(meanWithoutStallsUs({}), 0.0);
  // A call past 4x the median stalled (a late peer, a rank off its core for
  // a scheduler's slice): it says nothing of the algorithm.
  EXPECT_DOUBLE_EQ(meanWithoutStallsUs({100, 110, 5000, 90, 100, 120000, 100, 400}),
                   (100 + 110 + 90 + 100 + 100 + 400) / 6.0);
}

// The factor is the median run's: one run's bad draw does not set it, runs
// that timed nothing (0) do not count, and it never takes a call below its
// typical time.
TEST(TypicalTime, SlowDrawsAreTheMedianRunsMeanOverTypical) {
  EXPECT_DOUBLE_EQ(slowDrawFactor({{100, 130}, {10, 12}, {50, 400}, {0, 0}, {20, 26}}), 1.3);
  EXPECT_DOUBLE_EQ(slowDrawFactor({{100, 90}}), 1.0);
  EXPECT_DOUBLE_EQ(slowDrawFactor({}), 1.0);
  EXPECT_DOUBLE_EQ(slowDrawFactor({{0, 0}, {0, 5}}), 1.0);
}

}  // namespace
}  // namespace tutti
