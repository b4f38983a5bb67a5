#include "framework/runtime/locality_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

#include <tbb/blocked_range.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include "framework/core/planted_defect.h"
#include "framework/model/row_marks.h"
#include "framework/runtime/sample_parts.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {
using model::RowMarks;
namespace {

// Where blocks may outgrow the scratchpad: the samples each row of the more
// reused table should have in a cell (LocalityPlan::Make).
constexpr double kSamplesPerRowPerCell = 4;

// The most distinct rows any `window` consecutive keys of `cell` name (keys
// sorted: (row << 32) | index).
std::int64_t MostRowsInAWindow(std::span<const std::uint64_t> cell, std::int64_t window) {
  const auto n = static_cast<std::int64_t>(cell.size());
  const auto starts_row = [&](std::int64_t i) { return i > 0 && (cell[i] >> 32) != (cell[i - 1] >> 32) ? 1 : 0; };
  std::int64_t most = n > 0 ? 1 : 0;
  std::int64_t starts = 0;  // rows started within (i - window + 1, i]
  for (std::int64_t i = 1; i < n; ++i) {
    starts += starts_row(i);
    if (i - window + 1 > 0) starts -= starts_row(i - window + 1);
    most = std::max(most, starts + 1);
  }
  return most;
}

// Keyed tables: sparse tables of more than one row of which every sample
// names exactly one row. Note each sample's rows, then keyed() (1: keyed).
// A sample costs only the tables it names (a pass over every table per
// sample was the planner's hot spot): a table named twice by a sample drops
// out there, one some sample does not name at all at the end (fewer samples
// named it once than were noted). One thread.
class KeyedVerdicts {
 public:
  explicit KeyedVerdicts(const std::vector<TableSpec>& tables)
      : verdict_(tables.size()), named_(tables.size(), 0), named_once_(tables.size(), 0), row_bytes_(tables.size()) {
    for (std::size_t t = 0; t < tables.size(); ++t) {
      verdict_[t] = !tables[t].dense && tables[t].rows > 1 ? 1 : 0;
      row_bytes_[t] = static_cast<std::int64_t>(tables[t].row_bytes());
    }
  }
  void Note(std::span<const RowRef> rows) {
    std::int64_t bytes = 0;
    for (const RowRef& r : rows) {
      ++named_[r.table.value];
      bytes += row_bytes_[r.table.value];
    }
    max_bytes_named_ = std::max(max_bytes_named_, bytes);
    for (const RowRef& r : rows) {
      int& named = named_[r.table.value];
      if (named == 0) continue;  // a later row of a table named twice
      if (named == 1) {
        ++named_once_[r.table.value];
      } else {
        verdict_[r.table.value] = 0;
      }
      named = 0;
    }
    ++samples_;
  }
  // Not yet ruled out by a sample naming table `t` twice.
  bool may_be_keyed(std::size_t t) const { return verdict_[t] != 0; }
  // The most bytes of rows one sample named (a row named twice counts twice).
  std::int64_t max_bytes_named() const { return max_bytes_named_; }
  std::vector<char> keyed() const {
    std::vector<char> keyed(verdict_.size());
    for (std::size_t t = 0; t < keyed.size(); ++t) keyed[t] = verdict_[t] != 0 && named_once_[t] == samples_ ? 1 : 0;
    return keyed;
  }

 private:
  std::vector<char> verdict_;
  std::vector<int> named_;                // scratch of Note, zero between samples
  std::vector<std::int64_t> named_once_;  // samples that named the table once
  std::vector<std::int64_t> row_bytes_;   // [table]
  std::int64_t samples_ = 0;
  std::int64_t max_bytes_named_ = 0;
};

// The row sample `s` names in tables a and b (keyed: exactly one each).
std::pair<std::int64_t, std::int64_t> KeyRows(const App& app, std::int64_t s, int a, int b,
                                              std::vector<RowRef>& rows) {
  rows.clear();
  app.RowsOf(s, rows);
  std::int64_t ra = -1;
  std::int64_t rb = -1;
  for (const RowRef& r : rows) {
    if (static_cast<int>(r.table.value) == a) ra = r.row.value;
    if (static_cast<int>(r.table.value) == b) rb = r.row.value;
  }
  return {ra, rb};
}

// Global row -> block (-1: not touched), cutting the touched rows in
// increasing order into blocks of `rows_per_block`, a new block at each
// stripe's first row (stripes: `strata` equal ranges of global rows);
// `first_rows` gets each block's first global row, `stripe_of_block` its
// stripe. Returns the block count.
std::int64_t CutBlocks(const RowMarks& touched, std::int64_t rows_per_block, int strata,
                       std::vector<std::int32_t>& block_of_row, std::vector<std::int64_t>& first_rows,
                       std::vector<std::int32_t>& stripe_of_block) {
  block_of_row.assign(static_cast<std::size_t>(touched.rows()), -1);
  first_rows.clear();
  stripe_of_block.clear();
  const std::int64_t rows = touched.rows();
  std::int64_t in_block = 0;
  int stripe = -1;
  touched.ForEachMarked([&](std::int64_t r) {
    const int stripe_of_row = StripeOf(r, rows, strata);
    if (stripe_of_row != stripe || in_block == rows_per_block) {
      first_rows.push_back(r);
      stripe_of_block.push_back(stripe_of_row);
      stripe = stripe_of_row;
      in_block = 0;
    }
    block_of_row[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(first_rows.size() - 1);
    ++in_block;
  });
  if (first_rows.empty()) {
    first_rows.push_back(0);
    stripe_of_block.push_back(0);
  }
  return static_cast<std::int64_t>(first_rows.size());
}

}  // namespace

std::string ResolvedLocality(const App& app, const proto::Config& config, int compute_ranks) {
  const std::string& locality = config.training().locality();
  if (locality != "auto") return locality;
  if (compute_ranks <= 1) return "grid";
  const std::vector<TableSpec> tables = app.Tables();
  // Keyed: named exactly once by each of the first samples.
  KeyedVerdicts verdicts(tables);
  std::vector<RowRef> rows;
  const std::int64_t first = std::min<std::int64_t>(app.TrainingSamples(), 4096);
  for (std::int64_t s = 0; s < first; ++s) {
    rows.clear();
    app.RowsOf(s, rows);
    verdicts.Note(rows);
  }
  const std::vector<char> keyed = verdicts.keyed();
  std::vector<std::int64_t> bytes;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (keyed[t] != 0) bytes.push_back(tables[t].rows * static_cast<std::int64_t>(tables[t].row_bytes()));
  }
  if (bytes.size() < 2) return "grid";
  std::ranges::sort(bytes, std::greater<>());
  const bool large = bytes[0] + bytes[1] > kStratifyAboveScratchpads * config.training().scratchpad_bytes();
  return large ? "stratified" : "grid";
}

int StripeOf(std::int64_t row, std::int64_t rows, int strata) {
  return static_cast<int>(row * strata / std::max<std::int64_t>(1, rows));
}

LocalityPlan LocalityPlan::Make(const App& app, std::span<const std::int64_t> dealt, std::int64_t scratchpad_bytes,
                                std::int64_t samples_per_clock, Strata strata) {
  // Every pass reads the app's samples in address order (the plan is a
  // function of the set of samples, not of the deal's order).
  // (A schedule's samples come sorted: SampleSchedule::ascending.)
  std::vector<std::int64_t> ascending;
  std::span<const std::int64_t> samples = dealt;
  if (std::ranges::adjacent_find(dealt, std::greater_equal<>()) != dealt.end()) {
    ascending = AscendingSamples(dealt);
    samples = ascending;
  }
  LocalityPlan plan;
  LocalityPlanStats& st = plan.stats_;
  st.scratchpad_bytes = scratchpad_bytes;
  plan.strata_ = strata;
  const std::vector<TableSpec> tables = app.Tables();
  const auto n = tables.size();
  // Pass 1: which sparse tables every sample names exactly once, and the
  // rows touched; on all cores, over fixed parts of the samples (each part
  // its own verdicts and row marks, or-ed when the parts are done).
  std::vector<char> keyed = KeyedVerdicts(tables).keyed();  // the candidates
  const int parts = SampleParts();
  std::vector<std::vector<RowMarks>> touched_in_part(static_cast<std::size_t>(parts));
  std::vector<std::vector<char>> keyed_in_part(static_cast<std::size_t>(parts));
  std::vector<std::int64_t> max_bytes_in_part(static_cast<std::size_t>(parts), 0);
  ForEachSamplePart(parts, samples.size(), [&](int part, std::size_t begin, std::size_t end) {
    KeyedVerdicts verdicts(tables);  // the part's own, on its own thread, and its own marks
    std::vector<RowMarks>& touched = touched_in_part[static_cast<std::size_t>(part)];
    touched.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      if (keyed[t] != 0) touched[t] = RowMarks(tables[t].rows);
    }
    std::vector<RowRef> rows;
    for (std::size_t i = begin; i < end; ++i) {
      rows.clear();
      app.RowsOf(samples[i], rows);
      verdicts.Note(rows);
      for (const RowRef& r : rows) {
        const auto t = static_cast<std::size_t>(r.table.value);
        if (verdicts.may_be_keyed(t)) touched[t].Mark(r.row.value);
      }
    }
    keyed_in_part[static_cast<std::size_t>(part)] = verdicts.keyed();
    max_bytes_in_part[static_cast<std::size_t>(part)] = verdicts.max_bytes_named();
  });
  const std::int64_t max_bytes_per_sample = std::ranges::max(max_bytes_in_part);
  for (const std::vector<char>& verdict : keyed_in_part) {
    for (std::size_t t = 0; t < n; ++t) keyed[t] = static_cast<char>(keyed[t] & verdict[t]);
  }
  std::vector<RowMarks> touched = std::move(touched_in_part[0]);
  for (std::size_t p = 1; p < touched_in_part.size(); ++p) {
    for (std::size_t t = 0; t < n; ++t) {
      if (keyed[t] != 0) touched[t].OrWith(touched_in_part[p][t]);
    }
  }
  touched_in_part.clear();
  // The two keyed tables of most touched bytes; A is the smaller of them.
  std::vector<std::pair<std::int64_t, int>> candidates;  // (touched bytes, table)
  std::vector<std::int64_t> touched_rows(n, 0);
  for (std::size_t t = 0; t < n; ++t) {
    if (keyed[t] == 0) continue;
    touched_rows[t] = touched[t].count();
    candidates.emplace_back(touched_rows[t] * static_cast<std::int64_t>(tables[t].row_bytes()), static_cast<int>(t));
  }
  std::ranges::sort(candidates, std::greater<>());
  if (candidates.size() < 2) {
    st.reason = "fewer than two keyed tables (sparse tables every sample names one row of)";
    return plan;
  }
  // Plain variables, not structured bindings: the passes' lambdas capture
  // them (clang before 16 cannot capture a binding).
  const std::int64_t bytes_b = candidates[0].first;
  const int b = candidates[0].second;
  const std::int64_t bytes_a = candidates[1].first;
  const int a = candidates[1].second;
  st.table_a = a;
  st.table_b = b;
  plan.rows_b_ = tables[b].rows;
  if (tables[a].rows > std::int64_t{UINT32_MAX} || tables[b].rows > std::int64_t{UINT32_MAX} ||
      std::ssize(samples) > std::int64_t{UINT32_MAX}) {
    st.reason = fmt::format("table '{}', '{}' or this rank's samples number 2^32 or more", tables[a].name, tables[b].name);
    return plan;
  }
  if (bytes_a + bytes_b <= kPlanAboveScratchpads * scratchpad_bytes && strata.stripes() == 1) {
    st.reason = fmt::format("tables '{}' and '{}' ({} B touched) fit {} scratchpads ({} B each)", tables[a].name,
                            tables[b].name, bytes_a + bytes_b, kPlanAboveScratchpads, scratchpad_bytes);
    return plan;
  }
  // Budgets: a table that fits half the blocks' bytes takes what it needs, the other the rest.
  std::int64_t budget_a = 0;
  std::int64_t budget_b = 0;
  const auto split = [&](std::int64_t block_bytes) {
    const std::int64_t half = block_bytes / 2;
    budget_a = bytes_a <= half ? bytes_a : half;
    budget_b = block_bytes - budget_a;
  };
  // The blocks fit the scratchpad, so any run of samples in one cell does.
  // Where a clock's rows fit it whatever the blocks (a clock's samples name
  // at most samples_per_clock * max_bytes_per_sample), the blocks grow
  // instead until each row of the more reused table R (cells run by its
  // rows) has kSamplesPerRowPerCell samples in a cell on average: a clock's
  // consecutive samples then share R's rows, and every row a clock touches
  // is drained, sent and merged once (measured on the 20 M-rating synthetic
  // set at 1:1: 3311 distinct rows per clock instead of 4322, 10% less
  // training time; blocks 4x larger again gained nothing). Blocks of B still
  // end at stripe boundaries (CutBlocks): strata keep one writer per row.
  // The more reused table (more samples per touched row): R for the blocks' growth, and
  // the row each cell's samples are ordered by.
  const bool by_a = touched_rows[static_cast<std::size_t>(a)] < touched_rows[static_cast<std::size_t>(b)];
  std::int64_t block_bytes = scratchpad_bytes;
  split(block_bytes);
  const bool clock_fits = samples_per_clock * max_bytes_per_sample <= scratchpad_bytes;
  // Where a clock's samples may name more than the scratchpad, blocks grow
  // all the same, and the plan made with them is kept only if a bound on
  // every run of a clock's samples in one cell fits it: the samples' rows
  // outside R, and the most rows of R any samples_per_clock consecutive
  // samples of a cell name (cells run by R's rows, so few); else the plan is
  // made again with blocks sized to the scratchpad. The clock's worst case
  // is far above its distinct rows (a 4096-sample clock of the synthetic
  // set names 655 KB; grown blocks' bound is 494 KB, its largest run 288
  // KiB): on a 512 KiB L2 only the check lets blocks grow. One stripe only: a
  // stratified clock is cut from its stripe's samples, not samples_per_clock
  // of them.
  const bool checked = !clock_fits && strata.stripes() == 1;
  if (clock_fits || checked) {
    const std::int64_t rows_r = std::max<std::int64_t>(1, touched_rows[static_cast<std::size_t>(by_a ? a : b)]);
    const std::int64_t bytes_o = by_a ? bytes_b : bytes_a;
    // R's samples per row in a cell: (samples / rows_r) / (bytes_o / budget_o) >= k.
    const auto reused = [&] {
      const std::int64_t budget_o = by_a ? budget_b : budget_a;
      return static_cast<double>(std::ssize(samples)) * static_cast<double>(budget_o) >=
             kSamplesPerRowPerCell * static_cast<double>(rows_r) * static_cast<double>(bytes_o);
    };
    while (block_bytes < bytes_a + bytes_b && !reused()) split(block_bytes *= 2);
  }
  // The most rows of R that `samples_per_clock` consecutive samples of one
  // cell name (checked growth only).
  std::int64_t most_r_rows = 0;
  // Cuts the blocks for budget_a and budget_b and puts the samples in their cells.
  const auto make_cells = [&] {
    std::int64_t cell_budget_a = budget_a;
    std::int64_t cell_budget_b = budget_b;
    if (DefectPlanted(PlantedDefect::kPlannerIgnoresScratchpad)) {
      cell_budget_a *= 4;
      cell_budget_b *= 4;
    }
    st.cells = 0;
    const auto row_a = static_cast<std::int64_t>(tables[a].row_bytes());
    const auto row_b = static_cast<std::int64_t>(tables[b].row_bytes());
    st.rows_per_block_a = std::max<std::int64_t>(1, cell_budget_a / row_a);
    st.rows_per_block_b = std::max<std::int64_t>(1, cell_budget_b / row_b);
    std::vector<std::int32_t> block_a;
    std::vector<std::int32_t> block_b;
    std::vector<std::int32_t> no_stripes;
    st.blocks_a = CutBlocks(touched[a], st.rows_per_block_a, 1, block_a, plan.first_row_a_, no_stripes);
    st.blocks_b = CutBlocks(touched[b], st.rows_per_block_b, strata.stripes(), block_b, plan.first_row_b_,
                            plan.stripe_of_block_b_);
    // Pass 2 counts each part's samples of each cell; pass 3 puts every sample
    // at its cell's next place (a part after the parts before it: address
    // order within a cell, whatever the thread count) with its row of the
    // more reused table (more samples per touched row: consecutive samples
    // then share it); then each cell is ordered by that row, ties in address
    // order (a pure function of the data). All on all cores.
    const std::int64_t cells = st.blocks_a * st.blocks_b;
    const auto cell_of = [&](std::int64_t ra, std::int64_t rb) {
      return static_cast<std::size_t>(std::int64_t{block_a[static_cast<std::size_t>(ra)]} * st.blocks_b +
                                      block_b[static_cast<std::size_t>(rb)]);
    };
    std::vector<std::vector<std::int64_t>> next(static_cast<std::size_t>(parts), std::vector<std::int64_t>(static_cast<std::size_t>(cells), 0));
    ForEachSamplePart(parts, samples.size(), [&](int part, std::size_t begin, std::size_t end) {
      std::vector<std::int64_t>& count = next[static_cast<std::size_t>(part)];
      std::vector<RowRef> rows;
      for (std::size_t i = begin; i < end; ++i) {
        const auto [ra, rb] = KeyRows(app, samples[i], a, b, rows);
        ++count[cell_of(ra, rb)];
      }
    });
    plan.cell_start_.assign(static_cast<std::size_t>(cells + 1), 0);
    for (std::size_t c = 0; c < static_cast<std::size_t>(cells); ++c) {
      std::int64_t at = plan.cell_start_[c];
      for (std::vector<std::int64_t>& count : next) {  // a part's count becomes its first place
        const std::int64_t k = count[c];
        count[c] = at;
        at += k;
      }
      plan.cell_start_[c + 1] = at;
    }
    // (reused row, index in `samples`) at each place: sorting a cell's keys
    // orders it by that row, ties in address order. Data grouped by that row
    // already (a deal by user) is left as it is. The keys are built in the
    // plan's own array and replaced by their samples in place (one array of a
    // 20 M-sample rank's 160 MB, not two).
    plan.by_cell_.resize(samples.size());
    const std::span<std::uint64_t> keys(reinterpret_cast<std::uint64_t*>(plan.by_cell_.data()), plan.by_cell_.size());
    ForEachSamplePart(parts, samples.size(), [&](int part, std::size_t begin, std::size_t end) {
      std::vector<std::int64_t>& at = next[static_cast<std::size_t>(part)];
      std::vector<RowRef> rows;
      for (std::size_t i = begin; i < end; ++i) {
        const auto [ra, rb] = KeyRows(app, samples[i], a, b, rows);
        const auto row = static_cast<std::uint64_t>(by_a ? ra : rb);
        keys[static_cast<std::size_t>(at[cell_of(ra, rb)]++)] = (row << 32) | i;
      }
    });
    next = {};
    tbb::combinable<std::int64_t> most_r([] { return std::int64_t{0}; });
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, cells), [&](const tbb::blocked_range<std::int64_t>& range) {
      for (std::int64_t c = range.begin(); c < range.end(); ++c) {
        const auto begin = static_cast<std::ptrdiff_t>(plan.cell_start_[static_cast<std::size_t>(c)]);
        const auto end = static_cast<std::ptrdiff_t>(plan.cell_start_[static_cast<std::size_t>(c + 1)]);
        if (!std::is_sorted(keys.begin() + begin, keys.begin() + end)) std::sort(keys.begin() + begin, keys.begin() + end);
        if (checked) {
          std::int64_t& most = most_r.local();
          most = std::max(most, MostRowsInAWindow(keys.subspan(static_cast<std::size_t>(begin),
                                                               static_cast<std::size_t>(end - begin)),
                                                  samples_per_clock));
        }
        for (std::ptrdiff_t i = begin; i < end; ++i) {
          plan.by_cell_[static_cast<std::size_t>(i)] =
              samples[static_cast<std::size_t>(keys[static_cast<std::size_t>(i)] & 0xffffffffu)];
        }
      }
    });
    for (std::int64_t c = 0; c < cells; ++c) {
      if (plan.cell_start_[static_cast<std::size_t>(c + 1)] > plan.cell_start_[static_cast<std::size_t>(c)]) ++st.cells;
    }
    most_r_rows = most_r.combine([](std::int64_t x, std::int64_t y) { return std::max(x, y); });
    st.planned = true;
    // Stratified: the samples of each stripe of B, for slicing sub-epochs into clocks.
    plan.stripe_samples_.assign(static_cast<std::size_t>(strata.stripes()), 0);
    for (std::int64_t c = 0; c < cells; ++c) {
      const auto stripe = static_cast<std::size_t>(plan.stripe_of_block_b_[static_cast<std::size_t>(c % st.blocks_b)]);
      plan.stripe_samples_[stripe] += plan.cell_start_[static_cast<std::size_t>(c + 1)] - plan.cell_start_[static_cast<std::size_t>(c)];
    }
  };
  make_cells();
  // Every run of a clock's samples in one cell names at most its samples'
  // rows of the other tables and the window's rows of R.
  const auto row_r = static_cast<std::int64_t>(tables[static_cast<std::size_t>(by_a ? a : b)].row_bytes());
  if (checked) st.window_bound_bytes = samples_per_clock * (max_bytes_per_sample - row_r) + most_r_rows * row_r;
  if (checked && block_bytes > scratchpad_bytes && st.window_bound_bytes > scratchpad_bytes) {
    split(block_bytes = scratchpad_bytes);
    make_cells();
    st.window_bound_bytes = 0;  // blocks that fit it: any run does
  }
  st.block_bytes = block_bytes;
  touched.clear();
  st.reason = fmt::format("grid of {} x {} blocks of '{}' ({} rows) x '{}' ({} rows) for a {} B scratchpad",
                          st.blocks_a, st.blocks_b, tables[a].name, st.rows_per_block_a, tables[b].name,
                          st.rows_per_block_b, scratchpad_bytes);
  if (block_bytes > scratchpad_bytes) {
    st.reason += fmt::format(" (blocks of {} B: {}; larger ones share rows within a clock)", block_bytes,
                             clock_fits ? "a clock's rows fit it whatever the blocks"
                                        : fmt::format("every run of a clock's samples in one cell names at most "
                                                      "{} B, checked",
                                                      st.window_bound_bytes));
  }
  if (strata.stripes() > 1) {
    st.reason = fmt::format("stratified over {} stripes of '{}' (compute rank {} starts at stripe {}), {}",
                            strata.stripes(), tables[b].name, strata.index, strata.index * strata.spacing,
                            st.reason);
  }
  plan.MeasureCost(app, tables, samples_per_clock);
  return plan;
}

std::int64_t LocalityPlan::CellOf(const App& app, std::int64_t sample) const {
  std::vector<RowRef> rows;
  return CellOf(app, sample, rows);
}

std::int64_t LocalityPlan::CellOf(const App& app, std::int64_t sample, std::vector<RowRef>& rows) const {
  if (!planned()) return 0;
  const auto [ra, rb] = KeyRows(app, sample, stats_.table_a, stats_.table_b, rows);
  const auto block = [](const std::vector<std::int64_t>& first, std::int64_t row) {
    return static_cast<std::int64_t>(std::ranges::upper_bound(first, row) - first.begin()) - 1;
  };
  return block(first_row_a_, ra) * stats_.blocks_b + block(first_row_b_, rb);
}

}  // namespace stalelearn::runtime
