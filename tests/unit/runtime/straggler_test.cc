// Straggler patterns (framework/runtime/straggler.h): which clocks the
// transient pattern delays, by how much, and that a seed fixes them.
#include "framework/runtime/straggler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace stalelearn::runtime {
namespace {

proto::StragglerConfig Transient(double p, double delay, std::uint64_t seed) {
  proto::StragglerConfig c;
  c.set_transient_probability(p);
  c.set_transient_delay(delay);
  c.set_seed(seed);
  return c;
}

std::set<std::int64_t> DelayedClocks(const Straggler& s, std::int64_t clocks) {
  std::set<std::int64_t> delayed;
  for (std::int64_t t = 0; t < clocks; ++t) {
    if (s.ComputeScale(t) > 1) delayed.insert(t);
  }
  return delayed;
}

TEST(TransientStraggler, ASeedDelaysTheSameClocksWhateverTheOrderOfTheQuestions) {
  const Straggler a(Transient(0.2, 3, 11), /*compute_rank=*/1, /*default_seed=*/42);
  const Straggler b(Transient(0.2, 3, 11), 1, 99);  // an explicit seed wins over Config.seed
  const std::set<std::int64_t> delayed = DelayedClocks(a, 2000);
  for (std::int64_t t = 1999; t >= 0; --t) EXPECT_EQ(b.ComputeScale(t), a.ComputeScale(t)) << t;
  EXPECT_EQ(DelayedClocks(b, 2000), delayed);
  // Another seed, or another rank, draws other clocks.
  EXPECT_NE(DelayedClocks(Straggler(Transient(0.2, 3, 12), 1, 42), 2000), delayed);
  EXPECT_NE(DelayedClocks(Straggler(Transient(0.2, 3, 11), 2, 42), 2000), delayed);
  // Seed 0 takes Config.seed.
  EXPECT_EQ(DelayedClocks(Straggler(Transient(0.2, 3, 0), 1, 11), 2000), delayed);
}

TEST(TransientStraggler, DelaysAboutAFractionPOfClocksByAboutTheMeanDelay) {
  for (const double p : {0.05, 0.3, 0.9}) {
    const Straggler s(Transient(p, 2.5, 5), 0, 0);
    const int n = 20000;
    int delayed = 0;
    double extra = 0;
    for (int t = 0; t < n; ++t) {
      const double x = s.TransientExtra(t);
      EXPECT_GE(x, 0);
      EXPECT_DOUBLE_EQ(s.ComputeScale(t), 1 + x);
      if (x > 0) ++delayed, extra += x;
    }
    // 5 standard deviations of the binomial count; the mean of ~1000+ exponentials within 15%.
    EXPECT_NEAR(delayed, p * n, 5 * std::sqrt(n * p * (1 - p))) << "p " << p;
    EXPECT_NEAR(extra / delayed, 2.5, 0.15 * 2.5) << "p " << p;
  }
  EXPECT_TRUE(DelayedClocks(Straggler(Transient(0, 3, 5), 0, 0), 1000).empty());
  EXPECT_EQ(DelayedClocks(Straggler(Transient(1, 3, 5), 0, 0), 1000).size(), 1000u);
  EXPECT_FALSE(Straggler(proto::StragglerConfig(), 0, 1).active());
}

TEST(TransientStraggler, ZeroDelayMeansTheDefaultMeanOfFour) {
  const Straggler s(Transient(1, 0, 5), 0, 0);
  double extra = 0;
  for (int t = 0; t < 20000; ++t) extra += s.TransientExtra(t);
  EXPECT_NEAR(extra / 20000, 4.0, 0.2);
}

TEST(PersistentStraggler, SlowsOnlyItsRankAndAddsToTransientDelays) {
  proto::StragglerConfig c = Transient(0.5, 1, 3);
  c.set_rank(1);
  c.set_slowdown(4);
  const Straggler slowed(c, 1, 0), other(c, 0, 0);
  proto::StragglerConfig persistent_only;
  persistent_only.set_rank(1);
  persistent_only.set_slowdown(4);
  EXPECT_DOUBLE_EQ(Straggler(persistent_only, 1, 0).ComputeScale(17), 4.0);
  EXPECT_DOUBLE_EQ(Straggler(persistent_only, 0, 0).ComputeScale(17), 1.0);
  const Straggler transient_only(Transient(0.5, 1, 3), 1, 0);
  for (int t = 0; t < 100; ++t) EXPECT_DOUBLE_EQ(slowed.ComputeScale(t), 3 + transient_only.ComputeScale(t));
  EXPECT_GT(DelayedClocks(other, 100).size(), 20u);
}

}  // namespace
}  // namespace stalelearn::runtime
