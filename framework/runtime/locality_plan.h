// The locality planner: orders a compute rank's samples so that every run of
// consecutive samples in one grid cell (a sub-batch) touches a working set
// that fits the scratchpad (`training.scratchpad_bytes`, default: the L2
// cache the machine reports). The replica is the "DRAM", the cache the
// scratchpad, samples the iteration space and App::RowsOf the access function.
//
// The plan, app-agnostic: the two largest *keyed* tables (sparse tables of
// which every sample names exactly one row, e.g. a ratings app's users and
// items) are cut into blocks of the rows this rank touches, sized so one
// block of each fits the scratchpad together (a table that fits half of it
// stays one block). A sample's cell is (block in A, block in B). An epoch
// visits the A blocks in a seeded order and, for each, its B blocks in a
// seeded order: the A block stays in cache while B blocks pass through.
// Within a cell samples run in increasing row of the more reused of the two
// tables (more samples per touched row; ties in the data set's order), so
// consecutive samples share that row and both blocks stay in cache. Apps
// with fewer than two keyed tables (one keyed table and dense ones, or
// samples naming many rows), and models whose touched keyed rows fit
// kPlanAboveScratchpads scratchpads, are not planned: the schedule's seeded
// shuffle stands (so small runs keep their published orders and checksums
// on machines whose L2 sizes differ).
//
// The cost model (rows named, distinct rows and bytes per clock and per
// sub-batch, over the plan's first 64 clocks) is in stats() and in the report.
//
// Make runs its passes on all cores (oneTBB; App::RowsOf is called
// concurrently, as the app contract allows); the plan does not depend on
// the thread count. Immutable after Make; thread-safe. Holds a copy of the
// rank's samples in cell order (8 bytes a sample).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

// Stratified scheduling (training.locality = "stratified"): table B's
// global rows are cut into S = count x spacing equal stripes (`spacing` per
// compute rank); an epoch is S sub-epochs of equal clock ranges, and in
// sub-epoch t compute rank `index` works only on its samples in stripe
// (index x spacing + t) mod S. In any clock no two ranks write the same row
// of B (DSGD's strata, Gemulla et al. 2011); the grid plan orders each
// sub-epoch's samples. With spacing 2 (the runtime's, kStripesPerRank) half
// the stripes rest in each sub-epoch, and the stripe a rank takes next was
// last written a whole sub-epoch before: its writer's last push is merged
// while the rank still works on its current stripe, so the hand-over need
// not wait for it (LocalityPlan::Focus::settled_before).
class SampleSchedule;

struct Strata {
  int count = 1;    // compute ranks
  int index = 0;    // this one
  int spacing = 1;  // stripes per compute rank
  int stripes() const { return count * spacing; }
};
// The spacing the runtime plans with (clock_loop.cc, sample_schedule.cc),
// where there are strata: one rank (count 1) is not stratified.
inline constexpr int kStripesPerRank = 2;
inline Strata RunStrata(int count, int index) { return {count, index, count > 1 ? kStripesPerRank : 1}; }
// training.locality = "auto" resolved for `app` on `compute_ranks` ranks:
// "stratified" when there are several compute ranks and the app's two
// largest keyed tables (found from its first samples) take more than
// kStratifyAboveScratchpads scratchpads whole, else "grid"; any other value
// as it is. Measured: on a 96 MB two-table model strata cut a 3:1 run's
// gets 2.3x and keep 64 compute ranks summing deltas convergent (one writer
// per row and clock); on a model under 1 MB (about one scratchpad) they
// cost test error (0.885 against 0.876 at 3:1).
inline constexpr std::int64_t kStratifyAboveScratchpads = 16;
// Plans only where a rank's touched keyed rows take more than this many
// scratchpads. Below, a grid has a handful of blocks, its reuse gains
// little (the rows stay in the next cache level), and its order costs test
// error: a model of 829 KB touched a rank, planned as 1 x 2 blocks for a
// 512 KB L2, scored worse than shuffled, as machines with a 1 MB L2 ran it
// (docs/measurements.md), and a plan that depends on the L2 size makes
// results differ between machines.
inline constexpr std::int64_t kPlanAboveScratchpads = 4;
std::string ResolvedLocality(const App& app, const proto::Config& config, int compute_ranks);

// The stripe of global row `row` of a table of `rows` rows.
int StripeOf(std::int64_t row, std::int64_t rows, int strata);

struct LocalityPlanStats {
  bool planned = false;
  std::string reason;           // why this plan (or none)
  std::int64_t scratchpad_bytes = 0;
  // What the blocks are sized for: the scratchpad, or more where a clock's
  // rows fit the scratchpad whatever the blocks, or (one stripe) where
  // window_bound_bytes does (LocalityPlan::Make).
  std::int64_t block_bytes = 0;
  // Where blocks outgrow the scratchpad though a clock's samples may name
  // more than it: a bound on the bytes of any run of a clock's samples in
  // one cell (their rows outside R, and the most rows of R in one), which
  // must fit the scratchpad (0: not bounded so).
  std::int64_t window_bound_bytes = 0;
  int table_a = -1;             // the block held across cells
  int table_b = -1;             // the block streamed within a cell
  std::int64_t blocks_a = 1;
  std::int64_t blocks_b = 1;
  std::int64_t rows_per_block_a = 0;
  std::int64_t rows_per_block_b = 0;
  std::int64_t cells = 0;       // non-empty cells
  // Over the plan's first 64 clocks (samples_per_clock each): the rows the samples
  // name, the distinct rows among them, their bytes; and the largest
  // sub-batch's (one cell's run within a clock) distinct-row bytes.
  double rows_named_per_clock = 0;
  double distinct_rows_per_clock = 0;
  double bytes_per_clock = 0;
  std::int64_t largest_subbatch_bytes = 0;
};

class LocalityPlan {
 public:
  // Plans `samples` (one rank's, in any order). `samples_per_clock` sizes
  // the cost model's clocks, and decides whether blocks may outgrow the
  // scratchpad (where a clock's rows fit it whatever the blocks, or, with
  // one stripe, where the bound on its runs in a cell does).
  static LocalityPlan Make(const App& app, std::span<const std::int64_t> samples, std::int64_t scratchpad_bytes,
                           std::int64_t samples_per_clock, Strata strata = {});
  LocalityPlan() = default;

  bool planned() const { return stats_.planned; }
  const LocalityPlanStats& stats() const { return stats_; }
  // Epoch `epoch`'s visiting order (a permutation of the samples), into
  // `order` (its capacity reused). Only when planned().
  void EpochOrderInto(int epoch, std::uint64_t seed, std::vector<std::int64_t>& order) const;
  // The same order as its cells in visiting order, each with where it
  // starts in the order: a clock copies its samples from them
  // (ClockSamplesInto), so an epoch never writes the whole order (a
  // 20 M-sample rank's 160 MB of fresh pages at its first epoch).
  struct EpochCells {
    std::vector<std::int64_t> cell;   // visiting order
    std::vector<std::int64_t> start;  // cell.size() + 1 offsets into the epoch's order
  };
  void EpochCellsInto(int epoch, std::uint64_t seed, EpochCells& epoch_cells) const;
  // Clock `clock_in_epoch`'s samples: a grid plan's clock as `schedule`
  // cuts an order (SampleSchedule::ClockRange), a stratified one's as
  // ClockSamples cuts it; copied into `buffer` (its capacity reused).
  std::span<const std::int64_t> ClockSamplesInto(const EpochCells& epoch_cells, std::int64_t clock_in_epoch,
                                                 const SampleSchedule& schedule,
                                                 std::vector<std::int64_t>& buffer) const;
  // The grid cell of `sample` (0 when not planned). A clock's sub-batches
  // are its runs of consecutive samples in one cell.
  std::int64_t CellOf(const App& app, std::int64_t sample) const;
  bool stratified() const { return strata_.stripes() > 1; }
  // Stratified: the rows of B the samples of clock `clock_in_epoch` name
  // lie in [first, last) (its sub-epoch's stripe); the sub-epoch ends
  // before clock `until` of the epoch. `writer_before`: the compute rank
  // that had the stripe last (index + 1 mod count, `spacing` sub-epochs
  // before, in the epoch before for the first ones), whose sub-epoch with it
  // ended before clock `settled_before` of this epoch (negative: of the one
  // before, counted back from this epoch's first clock); with spacing 1
  // that is this sub-epoch's first clock.
  struct Focus {
    int table = -1;
    std::int64_t first = 0;
    std::int64_t last = 0;
    std::int64_t until = 0;
    int writer_before = -1;
    std::int64_t settled_before = 0;
    bool operator==(const Focus&) const = default;
  };
  Focus FocusOf(std::int64_t clock_in_epoch, std::int64_t clocks_per_epoch) const;
  // Stratified: the samples of clock `clock_in_epoch` within `order`
  // (clocks_per_epoch: a multiple of the strata, SampleSchedule's).
  std::span<const std::int64_t> ClockSamples(std::span<const std::int64_t> order, std::int64_t clock_in_epoch,
                                             std::int64_t clocks_per_epoch) const;

 private:
  int VisitedStripe(int sub_epoch) const;
  // The sub-epoch `clock_in_epoch` lies in, and the clocks of a sub-epoch.
  std::pair<int, std::int64_t> SubEpochOf(std::int64_t clock_in_epoch, std::int64_t clocks_per_epoch) const;
  // A stratified clock's [first, last) in its epoch's order.
  std::pair<std::int64_t, std::int64_t> StratifiedClockRange(std::int64_t clock_in_epoch,
                                                             std::int64_t clocks_per_epoch) const;
  // CellOf with the caller's scratch; leaves the sample's rows in `rows`.
  std::int64_t CellOf(const App& app, std::int64_t sample, std::vector<RowRef>& rows) const;
  void MeasureCost(const App& app, const std::vector<TableSpec>& tables, std::int64_t samples_per_clock);

  std::vector<std::int64_t> by_cell_;      // samples, cell-major (a * blocks_b + b), sorted within a cell
  std::vector<std::int64_t> cell_start_;   // blocks_a * blocks_b + 1 offsets into by_cell_
  std::vector<std::int64_t> first_row_a_;  // each A block's first global row (blocks_a)
  std::vector<std::int64_t> first_row_b_;
  std::vector<std::int32_t> stripe_of_block_b_;  // blocks_b
  std::vector<std::int64_t> stripe_samples_;     // samples per stripe of B (strata_.stripes())
  Strata strata_;
  std::int64_t rows_b_ = 0;  // table B's rows (all of them, not only the touched)
  LocalityPlanStats stats_;
};

}  // namespace stalelearn::runtime
