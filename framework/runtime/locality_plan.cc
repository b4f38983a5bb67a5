#include "framework/runtime/locality_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "framework/core/planted_defect.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {
namespace {

void ShuffleSmall(std::vector<std::int64_t>& v, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[SplitMix64(state) % i]);
}

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
// increasing order into blocks of `rows_per_block`. Returns the block count.
std::int64_t CutBlocks(const std::vector<std::uint8_t>& touched, std::int64_t rows_per_block,
                       std::vector<std::int32_t>& block_of_row) {
  block_of_row.assign(touched.size(), -1);
  std::int64_t seen = 0;
  for (std::size_t r = 0; r < touched.size(); ++r) {
    if (touched[r] != 0) block_of_row[r] = static_cast<std::int32_t>(seen++ / rows_per_block);
  }
  return std::max<std::int64_t>(1, (seen + rows_per_block - 1) / rows_per_block);
}

}  // namespace

LocalityPlan LocalityPlan::Make(const App& app, std::span<const std::int64_t> dealt, std::int64_t scratchpad_bytes,
                                std::int64_t samples_per_clock) {
  // Every pass reads the app's samples in address order (the plan is a
  // function of the set of samples, not of the deal's order).
  const std::vector<std::int64_t> ascending = AscendingSamples(dealt);
  const std::span<const std::int64_t> samples(ascending);
  LocalityPlan plan;
  LocalityPlanStats& st = plan.stats_;
  st.scratchpad_bytes = scratchpad_bytes;
  const std::vector<TableSpec> tables = app.Tables();
  const auto n = tables.size();
  // Pass 1: which sparse tables every sample names exactly once, and the rows touched.
  std::vector<char> keyed(n, 0);
  std::vector<std::vector<std::uint8_t>> touched(n);
  for (std::size_t t = 0; t < n; ++t) {
    if (!tables[t].dense && tables[t].rows > 1) {
      keyed[t] = 1;
      touched[t].assign(static_cast<std::size_t>(tables[t].rows), 0);
    }
  }
  std::vector<RowRef> rows;
  std::vector<int> named(n, 0);
  for (std::int64_t s : samples) {
    rows.clear();
    app.RowsOf(s, rows);
    std::ranges::fill(named, 0);
    for (const RowRef& r : rows) {
      const auto t = static_cast<std::size_t>(r.table.value);
      if (keyed[t] == 0) continue;
      ++named[t];
      touched[t][static_cast<std::size_t>(r.row.value)] = 1;
    }
    for (std::size_t t = 0; t < n; ++t) {
      if (keyed[t] != 0 && named[t] != 1) keyed[t] = 0;
    }
  }
  // The two keyed tables of most touched bytes; A is the smaller of them.
  std::vector<std::pair<std::int64_t, int>> candidates;  // (touched bytes, table)
  std::vector<std::int64_t> touched_rows(n, 0);
  for (std::size_t t = 0; t < n; ++t) {
    if (keyed[t] == 0) continue;
    touched_rows[t] = std::count(touched[t].begin(), touched[t].end(), std::uint8_t{1});
    candidates.emplace_back(touched_rows[t] * static_cast<std::int64_t>(tables[t].row_bytes()), static_cast<int>(t));
  }
  std::ranges::sort(candidates, std::greater<>());
  if (candidates.size() < 2) {
    st.reason = "fewer than two keyed tables (sparse tables every sample names one row of)";
    return plan;
  }
  const auto [bytes_b, b] = candidates[0];
  const auto [bytes_a, a] = candidates[1];
  st.table_a = a;
  st.table_b = b;
  if (bytes_a + bytes_b <= scratchpad_bytes) {
    st.reason = fmt::format("tables '{}' and '{}' ({} B touched) fit the scratchpad ({} B)", tables[a].name,
                            tables[b].name, bytes_a + bytes_b, scratchpad_bytes);
    return plan;
  }
  // Budgets: a table that fits half the scratchpad takes what it needs, the other the rest.
  const std::int64_t half = scratchpad_bytes / 2;
  std::int64_t budget_a = half;
  std::int64_t budget_b = scratchpad_bytes - half;
  if (bytes_a <= half) {
    budget_a = bytes_a;
    budget_b = scratchpad_bytes - bytes_a;
  }
  if (DefectPlanted(PlantedDefect::kPlannerIgnoresScratchpad)) {
    budget_a *= 4;
    budget_b *= 4;
  }
  const auto row_a = static_cast<std::int64_t>(tables[a].row_bytes());
  const auto row_b = static_cast<std::int64_t>(tables[b].row_bytes());
  st.rows_per_block_a = std::max<std::int64_t>(1, budget_a / row_a);
  st.rows_per_block_b = std::max<std::int64_t>(1, budget_b / row_b);
  std::vector<std::int32_t> block_a;
  std::vector<std::int32_t> block_b;
  st.blocks_a = CutBlocks(touched[a], st.rows_per_block_a, block_a);
  st.blocks_b = CutBlocks(touched[b], st.rows_per_block_b, block_b);
  touched.clear();
  // Pass 2 (address order): each sample's cell and its key within the cell
  // (B row, then A row); then a counting sort by cell, and a sort by key
  // within each cell (ties by sample: a pure function of the data).
  const std::int64_t cells = st.blocks_a * st.blocks_b;
  std::vector<std::uint32_t> cell_of(samples.size());
  std::vector<std::uint64_t> key_of(samples.size());
  plan.cell_start_.assign(static_cast<std::size_t>(cells + 1), 0);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto [ra, rb] = KeyRows(app, samples[i], a, b, rows);
    const std::int64_t cell = std::int64_t{block_a[static_cast<std::size_t>(ra)]} * st.blocks_b +
                              block_b[static_cast<std::size_t>(rb)];
    cell_of[i] = static_cast<std::uint32_t>(cell);
    key_of[i] = (static_cast<std::uint64_t>(rb) << 32) | static_cast<std::uint64_t>(ra);
    ++plan.cell_start_[static_cast<std::size_t>(cell + 1)];
  }
  std::partial_sum(plan.cell_start_.begin(), plan.cell_start_.end(), plan.cell_start_.begin());
  std::vector<std::pair<std::uint64_t, std::int64_t>> keyed_samples(samples.size());
  {
    std::vector<std::int64_t> next(plan.cell_start_.begin(), plan.cell_start_.end() - 1);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      keyed_samples[static_cast<std::size_t>(next[cell_of[i]]++)] = {key_of[i], samples[i]};
    }
  }
  cell_of = {};
  key_of = {};
  plan.by_cell_.resize(samples.size());
  for (std::int64_t c = 0; c < cells; ++c) {
    const auto begin = keyed_samples.begin() + plan.cell_start_[static_cast<std::size_t>(c)];
    const auto end = keyed_samples.begin() + plan.cell_start_[static_cast<std::size_t>(c + 1)];
    if (begin == end) continue;
    ++st.cells;
    std::sort(begin, end);
  }
  for (std::size_t i = 0; i < keyed_samples.size(); ++i) plan.by_cell_[i] = keyed_samples[i].second;
  keyed_samples = {};
  st.planned = true;
  st.reason = fmt::format("grid of {} x {} blocks of '{}' ({} rows) x '{}' ({} rows) for a {} B scratchpad",
                          st.blocks_a, st.blocks_b, tables[a].name, st.rows_per_block_a, tables[b].name,
                          st.rows_per_block_b, scratchpad_bytes);
  plan.MeasureCost(app, tables, block_a, block_b, samples_per_clock);
  return plan;
}

void LocalityPlan::MeasureCost(const App& app, const std::vector<TableSpec>& tables,
                               const std::vector<std::int32_t>& block_a, const std::vector<std::int32_t>& block_b,
                               std::int64_t samples_per_clock) {
  LocalityPlanStats& st = stats_;
  std::vector<std::int64_t> order;
  EpochOrderInto(0, 0, order);
  // Stamps per table row: the last clock / sub-batch that counted the row.
  std::vector<std::vector<std::int64_t>> clock_stamp(tables.size());
  std::vector<std::vector<std::int64_t>> run_stamp(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (tables[t].dense) continue;
    clock_stamp[t].assign(static_cast<std::size_t>(tables[t].rows), -1);
    run_stamp[t].assign(static_cast<std::size_t>(tables[t].rows), -1);
  }
  std::vector<RowRef> rows;
  std::int64_t clocks = 0;
  std::int64_t named = 0;
  std::int64_t distinct = 0;
  double bytes = 0;
  std::int64_t run = -1;
  std::int64_t run_bytes = 0;
  std::int64_t previous_cell = -1;
  // The first kCostClocks clocks: a sample of the plan, not a second pass over the epoch.
  constexpr std::int64_t kCostClocks = 256;
  const auto measured = std::min<std::size_t>(order.size(), static_cast<std::size_t>(kCostClocks * samples_per_clock));
  for (std::size_t i = 0; i < measured; ++i) {
    const auto clock = static_cast<std::int64_t>(i) / samples_per_clock;
    if (clock + 1 > clocks) clocks = clock + 1;
    const auto [ra, rb] = KeyRows(app, order[i], st.table_a, st.table_b, rows);
    const std::int64_t cell =
        std::int64_t{block_a[static_cast<std::size_t>(ra)]} * st.blocks_b + block_b[static_cast<std::size_t>(rb)];
    if (cell != previous_cell || static_cast<std::int64_t>(i) % samples_per_clock == 0) {
      ++run;
      run_bytes = 0;
      previous_cell = cell;
    }
    for (const RowRef& r : rows) {
      const auto t = static_cast<std::size_t>(r.table.value);
      if (tables[t].dense) continue;
      ++named;
      const auto row = static_cast<std::size_t>(r.row.value);
      const auto row_bytes = static_cast<std::int64_t>(tables[t].row_bytes());
      if (clock_stamp[t][row] != clock) {
        clock_stamp[t][row] = clock;
        ++distinct;
        bytes += static_cast<double>(row_bytes);
      }
      if (run_stamp[t][row] != run) {
        run_stamp[t][row] = run;
        run_bytes += row_bytes;
        st.largest_subbatch_bytes = std::max(st.largest_subbatch_bytes, run_bytes);
      }
    }
  }
  const double c = static_cast<double>(std::max<std::int64_t>(1, clocks));
  st.rows_named_per_clock = static_cast<double>(named) / c;
  st.distinct_rows_per_clock = static_cast<double>(distinct) / c;
  st.bytes_per_clock = bytes / c;
}

void LocalityPlan::EpochOrderInto(int epoch, std::uint64_t seed, std::vector<std::int64_t>& order) const {
  order.clear();
  order.reserve(by_cell_.size());
  std::uint64_t state = seed ^ (0xA0761D6478BD642Full * static_cast<std::uint64_t>(epoch + 1));
  std::vector<std::int64_t> a_order(static_cast<std::size_t>(stats_.blocks_a));
  std::iota(a_order.begin(), a_order.end(), 0);
  ShuffleSmall(a_order, SplitMix64(state));
  std::vector<std::int64_t> b_order(static_cast<std::size_t>(stats_.blocks_b));
  for (std::int64_t ba : a_order) {
    std::iota(b_order.begin(), b_order.end(), 0);
    ShuffleSmall(b_order, SplitMix64(state));
    for (std::int64_t bb : b_order) {
      const auto cell = static_cast<std::size_t>(ba * stats_.blocks_b + bb);
      order.insert(order.end(), by_cell_.begin() + cell_start_[cell], by_cell_.begin() + cell_start_[cell + 1]);
    }
  }
}

}  // namespace stalelearn::runtime
