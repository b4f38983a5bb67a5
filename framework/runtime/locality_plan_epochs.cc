// LocalityPlan's epochs (locality_plan.h): the seeded visiting order of an
// epoch's cells, each clock's samples cut from it, and the stratified
// sub-epochs (which stripe of B a clock works on). The plan itself is made
// in locality_plan.cc.
#include <algorithm>
#include <numeric>
#include <utility>

#include "framework/core/planted_defect.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {

void LocalityPlan::EpochCellsInto(int epoch, std::uint64_t seed, EpochCells& epoch_cells) const {
  epoch_cells.cell.clear();
  epoch_cells.start.assign(1, 0);
  std::uint64_t state = seed ^ (0xA0761D6478BD642Full * static_cast<std::uint64_t>(epoch + 1));
  std::vector<std::int64_t> a_order(static_cast<std::size_t>(stats_.blocks_a));
  std::iota(a_order.begin(), a_order.end(), 0);
  Shuffle(a_order, SplitMix64(state));
  std::vector<std::int64_t> b_order;
  // Stratified: sub-epoch t visits only stripe VisitedStripe(t) of B.
  for (int t = 0; t < strata_.stripes(); ++t) {
    const int stripe = VisitedStripe(t);
    for (std::int64_t ba : a_order) {
      b_order.clear();
      for (std::int64_t bb = 0; bb < stats_.blocks_b; ++bb) {
        if (stripe_of_block_b_[static_cast<std::size_t>(bb)] == stripe) b_order.push_back(bb);
      }
      Shuffle(b_order, SplitMix64(state));
      for (std::int64_t bb : b_order) {
        const auto cell = static_cast<std::size_t>(ba * stats_.blocks_b + bb);
        epoch_cells.cell.push_back(static_cast<std::int64_t>(cell));
        epoch_cells.start.push_back(epoch_cells.start.back() + cell_start_[cell + 1] - cell_start_[cell]);
      }
    }
  }
}

namespace {

// Samples [first, last) of the order `epoch_cells` describes, from the
// plan's cell-major samples, into `out`.
void CopyOrderRange(const LocalityPlan::EpochCells& epoch_cells, std::span<const std::int64_t> by_cell,
                    std::span<const std::int64_t> cell_start, std::int64_t first, std::int64_t last,
                    std::vector<std::int64_t>& out) {
  out.clear();
  if (first >= last) return;
  // The visited cell holding `first`: the last start at or before it.
  auto k = static_cast<std::size_t>(std::ranges::upper_bound(epoch_cells.start, first) - epoch_cells.start.begin()) - 1;
  for (std::int64_t at = first; at < last; ++k) {
    const auto cell = static_cast<std::size_t>(epoch_cells.cell[k]);
    const std::int64_t from = cell_start[cell] + (at - epoch_cells.start[k]);
    const std::int64_t n = std::min(last, epoch_cells.start[k + 1]) - at;
    out.insert(out.end(), by_cell.begin() + from, by_cell.begin() + from + n);
    at += n;
  }
}

}  // namespace

void LocalityPlan::EpochOrderInto(int epoch, std::uint64_t seed, std::vector<std::int64_t>& order) const {
  EpochCells epoch_cells;
  EpochCellsInto(epoch, seed, epoch_cells);
  order.reserve(by_cell_.size());
  CopyOrderRange(epoch_cells, by_cell_, cell_start_, 0, epoch_cells.start.back(), order);
}

std::span<const std::int64_t> LocalityPlan::ClockSamplesInto(const EpochCells& epoch_cells,
                                                             std::int64_t clock_in_epoch,
                                                             const SampleSchedule& schedule,
                                                             std::vector<std::int64_t>& buffer) const {
  const auto [first, last] = stratified() ? StratifiedClockRange(clock_in_epoch, schedule.clocks_per_epoch())
                                          : schedule.ClockRange(epoch_cells.start.back(), clock_in_epoch);
  CopyOrderRange(epoch_cells, by_cell_, cell_start_, first, last, buffer);
  return buffer;
}

std::pair<int, std::int64_t> LocalityPlan::SubEpochOf(std::int64_t clock_in_epoch,
                                                      std::int64_t clocks_per_epoch) const {
  // Sub-epoch t is clocks [t K, (t + 1) K), K = clocks_per_epoch / stripes.
  const std::int64_t k = std::max<std::int64_t>(1, clocks_per_epoch / strata_.stripes());
  return {static_cast<int>(std::min<std::int64_t>(clock_in_epoch / k, strata_.stripes() - 1)), k};
}

std::pair<std::int64_t, std::int64_t> LocalityPlan::StratifiedClockRange(std::int64_t clock_in_epoch,
                                                                         std::int64_t clocks_per_epoch) const {
  // Sub-epoch t's samples are cut evenly over its K clocks (a clock may hold
  // more or fewer than samples_per_clock: the stripes' sizes differ).
  const auto [t, k] = SubEpochOf(clock_in_epoch, clocks_per_epoch);
  const std::int64_t j = clock_in_epoch - t * k;
  std::int64_t begin = 0;
  for (int u = 0; u < t; ++u) begin += stripe_samples_[static_cast<std::size_t>(VisitedStripe(u))];
  const std::int64_t n = stripe_samples_[static_cast<std::size_t>(VisitedStripe(t))];
  const std::int64_t first = begin + n * j / k;
  const std::int64_t last = j >= k ? first : begin + n * (j + 1) / k;
  return {first, std::max(first, last)};
}

std::span<const std::int64_t> LocalityPlan::ClockSamples(std::span<const std::int64_t> order, std::int64_t clock_in_epoch,
                                                         std::int64_t clocks_per_epoch) const {
  const auto [first, last] = StratifiedClockRange(clock_in_epoch, clocks_per_epoch);
  return order.subspan(static_cast<std::size_t>(first), static_cast<std::size_t>(last - first));
}

LocalityPlan::Focus LocalityPlan::FocusOf(std::int64_t clock_in_epoch, std::int64_t clocks_per_epoch) const {
  const auto [t, k] = SubEpochOf(clock_in_epoch, clocks_per_epoch);
  const std::int64_t stripe = VisitedStripe(t);
  const std::int64_t c = strata_.stripes();
  // Row r is in stripe s iff s <= r c / rows < s + 1 (StripeOf). The last
  // sub-epoch takes the clocks K leaves over (SubEpochOf). The stripe's
  // writer before had it in sub-epoch t - spacing (rank index + 1's stripe
  // there is (index + 1) spacing + t - spacing), which ended where sub-epoch
  // t - spacing + 1 begins (clocks_per_epoch is a multiple of the stripes
  // at run time, so sub-epochs of the epoch before are K long too).
  return {stats_.table_b,
          (stripe * rows_b_ + c - 1) / c,
          ((stripe + 1) * rows_b_ + c - 1) / c,
          t + 1 == c ? clocks_per_epoch : (t + 1) * k,
          static_cast<int>((strata_.index + 1) % strata_.count),
          (t - strata_.spacing + 1) * k};
}

int LocalityPlan::VisitedStripe(int t) const {
  if (DefectPlanted(PlantedDefect::kStratumNotRotated)) return t;  // every rank on the same stripe
  return (strata_.index * strata_.spacing + t) % strata_.stripes();
}

}  // namespace stalelearn::runtime
