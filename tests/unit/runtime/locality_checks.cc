#include "tests/unit/runtime/locality_checks.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "framework/runtime/locality_plan.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::testing {

TwoTableApp::TwoTableApp(std::int64_t users, std::int64_t items, std::int64_t samples, std::uint64_t seed)
    : users_(users), items_(items) {
  std::uint64_t state = seed;
  for (std::int64_t s = 0; s < samples; ++s) {
    const auto u = static_cast<std::int64_t>(runtime::SplitMix64(state) % static_cast<std::uint64_t>(users));
    const auto i = static_cast<std::int64_t>(runtime::SplitMix64(state) % static_cast<std::uint64_t>(items));
    pairs_.emplace_back(u, i);
  }
}

std::vector<runtime::TableSpec> TwoTableApp::Tables() const {
  return {{"user", runtime::ElementType::kFloat32, users_, 21}, {"item", runtime::ElementType::kFloat32, items_, 21}};
}

void TwoTableApp::RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const {
  const auto& [u, i] = pairs_[static_cast<std::size_t>(sample)];
  rows.push_back({runtime::TableId{0}, runtime::RowId{u}});
  rows.push_back({runtime::TableId{1}, runtime::RowId{i}});
}

void CheckPlannedSubBatchesFitTheScratchpad(std::int64_t samples_per_clock, std::int64_t scratchpad_bytes) {
  const std::int64_t kScratchpad = scratchpad_bytes;
  const TwoTableApp app(3000, 8000, 60000, 5);
  std::vector<std::int64_t> all(static_cast<std::size_t>(app.TrainingSamples()));
  std::iota(all.begin(), all.end(), 0);
  const runtime::LocalityPlan plan = runtime::LocalityPlan::Make(app, all, kScratchpad, samples_per_clock);
  ASSERT_TRUE(plan.planned()) << plan.stats().reason;
  std::vector<std::int64_t> order;
  std::vector<runtime::RowRef> rows;
  for (int epoch = 0; epoch < 2; ++epoch) {
    plan.EpochOrderInto(epoch, 11, order);
    ASSERT_EQ(order.size(), all.size());
    std::int64_t worst = 0;
    std::unordered_set<std::int64_t> run_rows;  // table << 40 | row
    std::int64_t run_cell = -1;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::int64_t cell = plan.CellOf(app, order[i]);
      if (cell != run_cell || static_cast<std::int64_t>(i) % samples_per_clock == 0) {
        run_rows.clear();
        run_cell = cell;
      }
      rows.clear();
      app.RowsOf(order[i], rows);
      for (const runtime::RowRef& r : rows) run_rows.insert((std::int64_t{r.table.value} << 40) | r.row.value);
      // Every row of this app is 84 bytes.
      worst = std::max(worst, static_cast<std::int64_t>(run_rows.size()) * 84);
    }
    EXPECT_LE(worst, kScratchpad) << kSubBatchOverflowMessage << " in epoch " << epoch << ": " << worst << " B > "
                                  << kScratchpad << " B (" << plan.stats().reason << ")";
  }
}

void CheckStratifiedRanksWriteDisjointRows(std::int64_t samples_per_clock) {
  constexpr int kRanks = 4;
  const std::int64_t kSamplesPerClock = samples_per_clock;
  const TwoTableApp app(3000, 8000, 60000, 9);
  std::vector<runtime::SampleSchedule> schedules;
  std::vector<runtime::LocalityPlan> plans;
  bool grown = false;
  for (int c = 0; c < kRanks; ++c) {
    schedules.emplace_back(app, kRanks, c, kSamplesPerClock, 3, kRanks);
    plans.push_back(runtime::LocalityPlan::Make(app, schedules.back().samples(), 64 << 10, kSamplesPerClock,
                                                runtime::RunStrata(kRanks, c)));
    ASSERT_TRUE(plans.back().planned() && plans.back().stratified()) << plans.back().stats().reason;
    grown = grown || plans.back().stats().block_bytes > (64 << 10);
    ASSERT_EQ(schedules.back().clocks_per_epoch(), schedules.front().clocks_per_epoch());
  }
  const std::int64_t clocks = schedules.front().clocks_per_epoch();
  ASSERT_EQ(clocks % runtime::RunStrata(kRanks, 0).stripes(), 0) << "sub-epochs must line up";
  std::vector<runtime::RowRef> rows;
  std::int64_t shared = 0;
  // Every stripe's last visitor and the clock it left at (-1: still on it),
  // to check every hand-over: a rank taking a stripe may rely only on the
  // stripe's visitor before (Focus::writer_before) having left it by clock
  // settled_before (the hand-over waits for nothing else; that visitor
  // waited in turn for the one before it). Every write must lie in its
  // writer's focus, so visitors are the only writers.
  struct Visit {
    int rank = -1;
    std::int64_t left_at = -1;
  };
  std::map<std::int64_t, Visit> visit_of_stripe;  // by the stripe's first row
  std::int64_t bad_hand_overs = 0, writes_outside_focus = 0;
  std::vector<runtime::LocalityPlan::Focus> focus(kRanks);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<std::int64_t>> orders(kRanks);
    for (int c = 0; c < kRanks; ++c) plans[static_cast<std::size_t>(c)].EpochOrderInto(epoch, 17 + c, orders[static_cast<std::size_t>(c)]);
    std::vector<std::int64_t> covered(kRanks, 0);
    for (std::int64_t k = 0; k < clocks; ++k) {
      const std::int64_t clock = epoch * clocks + k;
      std::vector<int> moving;
      for (int c = 0; c < kRanks; ++c) {  // every rank that moves leaves its stripe first
        if (plans[static_cast<std::size_t>(c)].FocusOf(k, clocks) == focus[static_cast<std::size_t>(c)]) continue;
        moving.push_back(c);
        if (focus[static_cast<std::size_t>(c)].table >= 0) visit_of_stripe[focus[static_cast<std::size_t>(c)].first].left_at = clock;
      }
      for (int c : moving) {
        const runtime::LocalityPlan::Focus now = plans[static_cast<std::size_t>(c)].FocusOf(k, clocks);
        focus[static_cast<std::size_t>(c)] = now;
        Visit& visit = visit_of_stripe[now.first];
        const std::int64_t settled = clock + now.settled_before - k;
        if (visit.rank >= 0 && visit.rank != c &&
            (visit.rank != now.writer_before || visit.left_at < 0 || visit.left_at > settled)) {
          ++bad_hand_overs;
        }
        visit = {c, -1};
      }
      std::unordered_map<std::int64_t, int> writer_of_item;
      for (int c = 0; c < kRanks; ++c) {
        const auto samples = plans[static_cast<std::size_t>(c)].ClockSamples(orders[static_cast<std::size_t>(c)], k, clocks);
        covered[static_cast<std::size_t>(c)] += static_cast<std::int64_t>(samples.size());
        for (std::int64_t s : samples) {
          rows.clear();
          app.RowsOf(s, rows);
          const std::int64_t item = rows[1].row.value;
          const auto [it, inserted] = writer_of_item.emplace(item, c);
          if (!inserted && it->second != c) ++shared;
          const runtime::LocalityPlan::Focus& mine = focus[static_cast<std::size_t>(c)];
          if (item < mine.first || item >= mine.last) ++writes_outside_focus;
        }
      }
    }
    for (int c = 0; c < kRanks; ++c) {
      EXPECT_EQ(covered[static_cast<std::size_t>(c)], schedules[static_cast<std::size_t>(c)].share())
          << "rank " << c << "'s clocks must cover its share once";
    }
  }
  EXPECT_EQ(shared, 0) << kSharedStripeMessage << " (" << shared << " times over two epochs"
                       << (grown ? ", blocks grown past the scratchpad)" : ")");
  EXPECT_EQ(writes_outside_focus, 0) << "a rank wrote a row outside its stripe";
  EXPECT_EQ(bad_hand_overs, 0) << kUnsettledHandOverMessage << " (" << bad_hand_overs << " hand-overs in two epochs)";
}

}  // namespace stalelearn::testing
