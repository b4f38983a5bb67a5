// Stripes gathered on the memory side (sync/row_gather.h): with 3000 items a
// rank's replica holds about 40% of each stripe, so its stripe loads are row
// requests the memory ranks answer with those rows alone, instead of reads
// of the whole range. The counting app's checks then cover the rows the
// replies installed: every read in clock t holds every rank's increments of
// clocks <= t - s - 1 (I1) and all of the rank's own (I2), and the final
// model each increment once (I4).
#include <gtest/gtest.h>

#include "framework/runtime/locality_plan.h"
#include "tests/integration/item_counting_app.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr std::int64_t kSparseItems = 3000;

void CheckGatheredStripesAreFreshAndExact(bool timing, bool straggler) {
  constexpr int kEpochs = 3;
  ItemCountingApp app(/*deal_by_user=*/true, kSparseItems);
  proto::Config config = StratifiedConfig(kEpochs);
  if (straggler) AddStraggler(config);
  if (timing) UseStaleLearnTiming(config);
  const proto::Report report = RunLocal(config, app, /*world_size=*/5).report();
  EXPECT_EQ(report.final().value(), static_cast<double>(kSamples * kEpochs)) << "item increments lost or doubled";
  EXPECT_EQ(report.final().metrics().at("users"), static_cast<double>(kSamples * kEpochs));
  EXPECT_EQ(app.stale_reads(), 0) << "an item row was read staler than the bound allows";
  EXPECT_EQ(app.stale_user_reads(), 0);
  EXPECT_EQ(app.lost_own(), 0) << "a row was read without this rank's own increments";
  std::int64_t gathered = 0;
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() == "memory") gathered += r.rows_gathered();
  }
  // Each rank's loads gathered the rows it holds of its stripes: about 40%
  // of the items an epoch, 4 ranks, 3 epochs (a load read whole, where the
  // held rows would not pay for a request, gathers none).
  EXPECT_GT(gathered, kEpochs * kSparseItems) << "stripes were read whole";
  EXPECT_LT(gathered, kEpochs * 4 * kSparseItems / 2) << "more rows than the replicas hold";
}

TEST(StratifiedGather, SparseStripesAreGatheredAndReadsStayFreshAndExact) {
  CheckGatheredStripesAreFreshAndExact(/*timing=*/false, /*straggler=*/false);
}

TEST(StratifiedGather, TheSameUnderDeterministicTiming) {
  CheckGatheredStripesAreFreshAndExact(/*timing=*/true, /*straggler=*/false);
}

TEST(StratifiedGather, WithAStragglerWhoseStripesAreTakenLate) {
  CheckGatheredStripesAreFreshAndExact(/*timing=*/false, /*straggler=*/true);
  CheckGatheredStripesAreFreshAndExact(/*timing=*/true, /*straggler=*/true);
}

}  // namespace
}  // namespace stalelearn::testing
