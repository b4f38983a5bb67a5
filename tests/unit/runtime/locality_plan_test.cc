// The locality planner (framework/runtime/locality_plan.h): sub-batches fit
// the scratchpad, an epoch is a seeded permutation of the rank's samples,
// planned clocks name fewer distinct rows than the shuffle, and models that
// fit (or apps without two keyed tables) keep the shuffle.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include <tbb/task_arena.h>

#include "framework/core/config_loader.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/sample_schedule.h"
#include "tests/unit/runtime/locality_checks.h"

namespace stalelearn::testing {
namespace {

std::vector<std::int64_t> AllSamples(const runtime::App& app) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(app.TrainingSamples()));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// Distinct rows per clock of `order`, averaged over its clocks.
double DistinctRowsPerClock(const runtime::App& app, const std::vector<std::int64_t>& order, std::int64_t per_clock) {
  std::unordered_set<std::int64_t> distinct;
  std::vector<runtime::RowRef> rows;
  std::int64_t total = 0;
  std::int64_t clocks = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (static_cast<std::int64_t>(i) % per_clock == 0) {
      total += static_cast<std::int64_t>(distinct.size());
      distinct.clear();
      ++clocks;
    }
    rows.clear();
    app.RowsOf(order[i], rows);
    for (const runtime::RowRef& r : rows) distinct.insert((std::int64_t{r.table.value} << 40) | r.row.value);
  }
  total += static_cast<std::int64_t>(distinct.size());
  return static_cast<double>(total) / static_cast<double>(clocks);
}

TEST(LocalityPlan, EverySubBatchFitsTheScratchpad) { CheckPlannedSubBatchesFitTheScratchpad(); }

TEST(LocalityPlan, StratifiedRanksNeverWriteTheSameRowInAClock) { CheckStratifiedRanksWriteDisjointRows(); }
// 128-sample clocks fit the 64 KiB scratchpad whatever the blocks: they grow,
// and the stripes still keep each item to one writer per clock.
TEST(LocalityPlan, StratifiedRanksWithGrownBlocksNeverWriteTheSameRowInAClock) {
  const TwoTableApp app(3000, 8000, 60000, 9);  // the check's app and deal
  const runtime::SampleSchedule schedule(app, 4, 0, 128, 3, 4);
  const runtime::LocalityPlan plan =
      runtime::LocalityPlan::Make(app, schedule.samples(), 64 << 10, 128, runtime::Strata{4, 0});
  ASSERT_GT(plan.stats().block_bytes, 64 << 10) << plan.stats().reason;
  CheckStratifiedRanksWriteDisjointRows(128);
}

TEST(LocalityPlan, StratifiedClocksPerEpochAreAMultipleOfTheStripes) {
  const TwoTableApp app(300, 500, 5000, 5);
  const runtime::SampleSchedule plain(app, 3, 0, 1000, 1);
  const runtime::SampleSchedule stratified(app, 3, 0, 1000, 1, 3);
  EXPECT_EQ(plain.clocks_per_epoch(), 2);  // ceil(1667 / 1000)
  EXPECT_EQ(stratified.clocks_per_epoch(), 3 * runtime::kStripesPerRank);  // a clock per sub-epoch at least
}

TEST(LocalityPlan, AnEpochIsASeededPermutationThatChangesPerEpoch) {
  const TwoTableApp app(3000, 8000, 60000, 5);
  const std::vector<std::int64_t> all = AllSamples(app);
  // A rank's share, dealt in shuffled order: the plan is a function of the set.
  std::vector<std::int64_t> share(all.begin(), all.begin() + 40000);
  std::uint64_t state = 3;
  for (std::size_t i = share.size(); i > 1; --i) std::swap(share[i - 1], share[runtime::SplitMix64(state) % i]);
  const runtime::LocalityPlan plan = runtime::LocalityPlan::Make(app, share, 64 << 10, 1024);
  ASSERT_TRUE(plan.planned());
  std::vector<std::int64_t> e0, e0_again, e1;
  plan.EpochOrderInto(0, 7, e0);
  plan.EpochOrderInto(0, 7, e0_again);
  plan.EpochOrderInto(1, 7, e1);
  EXPECT_EQ(e0, e0_again);
  EXPECT_NE(e0, e1);
  std::vector<std::int64_t> sorted = e1;
  std::ranges::sort(sorted);
  std::vector<std::int64_t> expected(share);
  std::ranges::sort(expected);
  EXPECT_EQ(sorted, expected) << "an epoch must visit each of the rank's samples exactly once";
  // The cost model's cell count is the number of cells the samples fall in.
  std::unordered_set<std::int64_t> cells;
  for (std::int64_t s : share) cells.insert(plan.CellOf(app, s));
  EXPECT_EQ(plan.stats().cells, static_cast<std::int64_t>(cells.size()));
}

TEST(LocalityPlan, ThePlanDoesNotDependOnTheThreadCount) {
  // Make's passes run one part of the samples per thread: the parts' results
  // must combine into the same plan on 1, 2 or 5 threads.
  const TwoTableApp app(3000, 8000, 60000, 5);
  const std::vector<std::int64_t> all = AllSamples(app);
  std::vector<std::vector<std::int64_t>> orders;
  for (const int threads : {1, 2, 5}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      const runtime::LocalityPlan plan = runtime::LocalityPlan::Make(app, all, 64 << 10, 1024);
      ASSERT_TRUE(plan.planned());
      plan.EpochOrderInto(2, 11, orders.emplace_back());
    });
  }
  EXPECT_EQ(orders[0], orders[1]);
  EXPECT_EQ(orders[0], orders[2]);
}

TEST(LocalityPlan, PlannedClocksNameFewerDistinctRowsThanTheShuffle) {
  const TwoTableApp app(3000, 8000, 60000, 5);
  const std::vector<std::int64_t> all = AllSamples(app);
  const runtime::LocalityPlan plan = runtime::LocalityPlan::Make(app, all, 64 << 10, 1024);
  ASSERT_TRUE(plan.planned());
  std::vector<std::int64_t> planned;
  plan.EpochOrderInto(0, 7, planned);
  const runtime::SampleSchedule schedule(app.TrainingSamples(), 1, 0, 1024, 7);
  const double shuffled_rows = DistinctRowsPerClock(app, schedule.EpochOrder(0), 1024);
  const double planned_rows = DistinctRowsPerClock(app, planned, 1024);
  EXPECT_LT(planned_rows, 0.6 * shuffled_rows) << "planned " << planned_rows << " vs shuffled " << shuffled_rows;
  // The reported cost model measures the same thing.
  EXPECT_NEAR(plan.stats().distinct_rows_per_clock, planned_rows, 0.1 * planned_rows);
  EXPECT_GT(plan.stats().largest_subbatch_bytes, 0);
  EXPECT_LE(plan.stats().largest_subbatch_bytes, 64 << 10);
}

// A 256-sample clock names at most 256 * 2 * 84 B = 43 KB, within the 64 KiB
// scratchpad whatever the blocks: they grow until each user (20 samples)
// has 4 in a cell, and a clock's samples share more rows than with blocks
// sized to the scratchpad. A 1024-sample clock may not fit, nor does the
// bound on its runs in a cell (below): blocks stay.
TEST(LocalityPlan, BlocksOutgrowTheScratchpadWhereAClockFitsIt) {
  const TwoTableApp app(3000, 8000, 60000, 5);
  const std::vector<std::int64_t> all = AllSamples(app);
  const runtime::LocalityPlan grown = runtime::LocalityPlan::Make(app, all, 64 << 10, 256);
  const runtime::LocalityPlan fitted = runtime::LocalityPlan::Make(app, all, 64 << 10, 1024);
  ASSERT_TRUE(grown.planned() && fitted.planned());
  EXPECT_EQ(fitted.stats().block_bytes, 64 << 10);
  EXPECT_GT(grown.stats().block_bytes, 64 << 10) << grown.stats().reason;
  EXPECT_GE(60000.0 / (3000.0 * static_cast<double>(grown.stats().blocks_b)), 4.0) << grown.stats().reason;
  std::vector<std::int64_t> grown_order;
  std::vector<std::int64_t> fitted_order;
  grown.EpochOrderInto(0, 7, grown_order);
  fitted.EpochOrderInto(0, 7, fitted_order);
  const double grown_rows = DistinctRowsPerClock(app, grown_order, 256);
  const double fitted_rows = DistinctRowsPerClock(app, fitted_order, 256);
  EXPECT_LT(grown_rows, 0.9 * fitted_rows) << "grown blocks " << grown_rows << " vs fitted " << fitted_rows;
  EXPECT_LE(grown.stats().largest_subbatch_bytes, 64 << 10);
  CheckPlannedSubBatchesFitTheScratchpad(256);
}

// A 1024-sample clock names up to 172 KB, more than a 128 KiB scratchpad:
// blocks grow all the same where the bound on a clock's run in one cell
// (its 1024 item rows, 86 KB, and the most users 1024 consecutive samples of
// a cell name) fits, and every sub-batch of two epochs does. For 100 KiB the
// bound does not fit: the plan is made again with blocks sized to it.
TEST(LocalityPlan, BlocksOutgrowAScratchpadAClockExceedsOnlyWhereTheBoundOnItsRunsFits) {
  const TwoTableApp app(3000, 8000, 60000, 5);
  const std::vector<std::int64_t> all = AllSamples(app);
  const runtime::LocalityPlan grown = runtime::LocalityPlan::Make(app, all, 128 << 10, 1024);
  const runtime::LocalityPlan fitted = runtime::LocalityPlan::Make(app, all, 100 << 10, 1024);
  ASSERT_TRUE(grown.planned() && fitted.planned());
  EXPECT_GT(grown.stats().block_bytes, 128 << 10) << grown.stats().reason;
  EXPECT_GT(grown.stats().window_bound_bytes, 1024 * 84) << "the bound counts every item row of a clock";
  EXPECT_LE(grown.stats().window_bound_bytes, 128 << 10);
  EXPECT_NE(grown.stats().reason.find("checked"), std::string::npos) << grown.stats().reason;
  EXPECT_EQ(fitted.stats().block_bytes, 100 << 10) << fitted.stats().reason;
  EXPECT_EQ(fitted.stats().window_bound_bytes, 0) << "a plan made again with fitted blocks needs no bound";
  EXPECT_LE(grown.stats().largest_subbatch_bytes, grown.stats().window_bound_bytes);
  CheckPlannedSubBatchesFitTheScratchpad(1024, 128 << 10);
  CheckPlannedSubBatchesFitTheScratchpad(1024, 100 << 10);
}

// The clock loop copies each clock's samples from the epoch's cells
// (ClockSamplesInto) instead of writing the whole order: the clocks must be
// the whole order's, cut as a grid or a stratified plan cuts it, clocks that
// cross cells and a short last clock included.
TEST(LocalityPlan, ClocksCopiedFromTheCellsAreTheEpochOrdersClocks) {
  const TwoTableApp app(3000, 8000, 60000, 5);
  const runtime::LocalityPlan grid = runtime::LocalityPlan::Make(app, AllSamples(app), 64 << 10, 1000);
  const runtime::SampleSchedule whole(app.TrainingSamples(), 1, 0, 1000, 7);  // 1000-sample clocks
  constexpr int kRanks = 3;
  const runtime::SampleSchedule schedule(app, kRanks, 1, 700, 3, kRanks);
  const runtime::LocalityPlan stratified =
      runtime::LocalityPlan::Make(app, schedule.samples(), 64 << 10, 700, runtime::Strata{kRanks, 1});
  ASSERT_TRUE(grid.planned() && !grid.stratified());
  ASSERT_TRUE(stratified.planned() && stratified.stratified());
  std::vector<std::int64_t> order;
  std::vector<std::int64_t> buffer;
  runtime::LocalityPlan::EpochCells cells;
  for (int epoch = 0; epoch < 2; ++epoch) {
    grid.EpochOrderInto(epoch, 7, order);
    grid.EpochCellsInto(epoch, 7, cells);
    const std::int64_t clocks = (60000 + 999) / 1000;
    for (std::int64_t k = 0; k < clocks; ++k) {
      const auto want = std::span(order).subspan(static_cast<std::size_t>(k * 1000),
                                                 static_cast<std::size_t>(std::min<std::int64_t>(1000, 60000 - k * 1000)));
      const std::span<const std::int64_t> got = grid.ClockSamplesInto(cells, k, whole, buffer);
      ASSERT_TRUE(std::ranges::equal(got, want)) << "grid, epoch " << epoch << ", clock " << k;
    }
    stratified.EpochOrderInto(epoch, 9, order);
    stratified.EpochCellsInto(epoch, 9, cells);
    std::int64_t covered = 0;
    for (std::int64_t k = 0; k < schedule.clocks_per_epoch(); ++k) {
      const std::span<const std::int64_t> want = stratified.ClockSamples(order, k, schedule.clocks_per_epoch());
      const std::span<const std::int64_t> got =
          stratified.ClockSamplesInto(cells, k, schedule, buffer);
      ASSERT_TRUE(std::ranges::equal(got, want)) << "stratified, epoch " << epoch << ", clock " << k;
      covered += std::ssize(got);
    }
    EXPECT_EQ(covered, schedule.share());
  }
}

TEST(LocalityPlan, TablesThatFitTheScratchpadKeepTheShuffle) {
  const TwoTableApp app(300, 500, 5000, 5);  // 67 KB of rows
  const runtime::LocalityPlan plan = runtime::LocalityPlan::Make(app, AllSamples(app), 1 << 20, 1024);
  EXPECT_FALSE(plan.planned());
  EXPECT_NE(plan.stats().reason.find("fit 4 scratchpads"), std::string::npos) << plan.stats().reason;
}

// A model of a few scratchpads is not planned either (a grid of two or
// three blocks); one of more than kPlanAboveScratchpads is.
TEST(LocalityPlan, TablesOfAFewScratchpadsKeepTheShuffle) {
  const TwoTableApp app(300, 500, 5000, 5);  // 67 KB of rows
  const runtime::LocalityPlan few = runtime::LocalityPlan::Make(app, AllSamples(app), 32 << 10, 1024);
  EXPECT_FALSE(few.planned()) << few.stats().reason;
  const runtime::LocalityPlan many = runtime::LocalityPlan::Make(app, AllSamples(app), 8 << 10, 1024);
  EXPECT_TRUE(many.planned()) << many.stats().reason;
}

// Each sample names two rows of one table: no keyed table.
class PairsInOneTableApp final : public runtime::App {
 public:
  std::string name() const override { return "pairs"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override {
    return {{"w", runtime::ElementType::kFloat32, 100000, 16}, {"v", runtime::ElementType::kFloat32, 100000, 16}};
  }
  std::int64_t TrainingSamples() const override { return 20000; }
  void RowsOf(std::int64_t s, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({runtime::TableId{0}, runtime::RowId{(s * 7) % 100000}});
    rows.push_back({runtime::TableId{0}, runtime::RowId{(s * 13 + 1) % 100000}});
    rows.push_back({runtime::TableId{1}, runtime::RowId{(s * 5) % 100000}});
  }
  // Never trained (layout tests): an empty kernel.
  void UpdateBatch(std::span<const std::int64_t>, runtime::ModelView&, runtime::KernelContext&) const override {}
};

TEST(LocalityPlan, AppsWithoutTwoKeyedTablesKeepTheShuffle) {
  const PairsInOneTableApp app;
  const runtime::LocalityPlan plan = runtime::LocalityPlan::Make(app, AllSamples(app), 64 << 10, 1024);
  EXPECT_FALSE(plan.planned());
  EXPECT_NE(plan.stats().reason.find("fewer than two keyed tables"), std::string::npos) << plan.stats().reason;
}

// "auto" (the default): strata where several compute ranks share keyed
// tables of more than 16 scratchpads; the grid otherwise.
TEST(LocalityPlan, AutoStratifiesLargeKeyedTablesOnSeveralRanks) {
  proto::Config config;
  ASSERT_TRUE(config::ResolveDefaults(config).ok());
  EXPECT_EQ(config.training().locality(), "auto");
  config.mutable_training()->set_scratchpad_bytes(64 << 10);
  const TwoTableApp large(3000, 20000, 5000, 5);  // 23000 rows x 84 B = 1.9 MB > 16 x 64 KiB
  const TwoTableApp small(300, 2000, 5000, 5);    // 194 KB
  EXPECT_EQ(runtime::ResolvedLocality(large, config, 3), "stratified");
  EXPECT_EQ(runtime::ResolvedLocality(large, config, 1), "grid") << "one compute rank has nothing to stripe";
  EXPECT_EQ(runtime::ResolvedLocality(small, config, 3), "grid");
  EXPECT_EQ(runtime::ResolvedLocality(PairsInOneTableApp(), config, 3), "grid") << "no two keyed tables";
  config.mutable_training()->set_locality("none");
  EXPECT_EQ(runtime::ResolvedLocality(large, config, 3), "none") << "an explicit choice stands";
}

TEST(LocalityPlan, ConfigNamesTheBadLocalityOrScratchpad) {
  proto::Config config;
  config.mutable_training()->set_locality("tiles");
  Status status = config::ResolveDefaults(config);
  EXPECT_NE(status.message().find("training.locality"), std::string::npos) << status.message();
  config.mutable_training()->set_locality("grid");
  config.mutable_training()->set_scratchpad_bytes(100);
  status = config::ResolveDefaults(config);
  EXPECT_NE(status.message().find("training.scratchpad_bytes"), std::string::npos) << status.message();
  config.mutable_training()->set_scratchpad_bytes(0);
  ASSERT_TRUE(config::ResolveDefaults(config).ok());
  EXPECT_GE(config.training().scratchpad_bytes(), 4096) << "0 resolves to the machine's L2 size";
}

}  // namespace
}  // namespace stalelearn::testing
