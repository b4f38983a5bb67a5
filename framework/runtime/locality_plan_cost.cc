// LocalityPlan's cost model (locality_plan.h): the rows named, distinct
// rows and bytes of the plan's first clocks, and its largest sub-batch, for
// the report. The plan itself is made in locality_plan.cc.
#include <algorithm>
#include <utility>
#include <vector>

#include "framework/runtime/locality_plan.h"

namespace stalelearn::runtime {

void LocalityPlan::MeasureCost(const App& app, const std::vector<TableSpec>& tables, std::int64_t samples_per_clock) {
  LocalityPlanStats& st = stats_;
  // The first kCostClocks clocks of the cells in stored order (an epoch's
  // order but for the seeded shuffles of blocks): a sample of the plan.
  constexpr std::int64_t kCostClocks = 64;
  const auto measured = std::min<std::size_t>(by_cell_.size(), static_cast<std::size_t>(kCostClocks * samples_per_clock));
  std::vector<RowRef> rows;
  std::vector<std::pair<std::int64_t, std::int64_t>> clock_rows;  // (table << 40 | row, row bytes)
  std::vector<std::int64_t> run_rows;
  const auto distinct = [](auto& v) {
    std::ranges::sort(v);
    return static_cast<std::int64_t>(std::unique(v.begin(), v.end()) - v.begin());
  };
  std::int64_t clocks = 0;
  std::int64_t named = 0;
  std::int64_t distinct_rows = 0;
  double bytes = 0;
  const auto end_run = [&] {
    const std::int64_t n = distinct(run_rows);
    // Keyed tables' rows are the run's working set; every row of one table has one size.
    std::int64_t run_bytes = 0;
    for (std::int64_t i = 0; i < n; ++i) run_bytes += static_cast<std::int64_t>(tables[static_cast<std::size_t>(run_rows[static_cast<std::size_t>(i)] >> 40)].row_bytes());
    st.largest_subbatch_bytes = std::max(st.largest_subbatch_bytes, run_bytes);
    run_rows.clear();
  };
  const auto end_clock = [&] {
    std::ranges::sort(clock_rows);
    const auto last = std::unique(clock_rows.begin(), clock_rows.end());
    distinct_rows += last - clock_rows.begin();
    for (auto it = clock_rows.begin(); it != last; ++it) bytes += static_cast<double>(it->second);
    clock_rows.clear();
    ++clocks;
  };
  std::int64_t run_cell = -1;
  for (std::size_t i = 0; i < measured; ++i) {
    const bool clock_start = static_cast<std::int64_t>(i) % samples_per_clock == 0;
    if (clock_start && i > 0) end_clock();
    const std::int64_t cell = CellOf(app, by_cell_[i], rows);
    if (cell != run_cell || clock_start) {
      if (i > 0) end_run();
      run_cell = cell;
    }
    for (const RowRef& r : rows) {
      const auto t = static_cast<std::size_t>(r.table.value);
      if (tables[t].dense) continue;
      ++named;
      const std::int64_t key = (static_cast<std::int64_t>(t) << 40) | r.row.value;
      clock_rows.emplace_back(key, static_cast<std::int64_t>(tables[t].row_bytes()));
      run_rows.push_back(key);
    }
  }
  if (measured > 0) {
    end_clock();
    end_run();
  }
  const double c = static_cast<double>(std::max<std::int64_t>(1, clocks));
  st.rows_named_per_clock = static_cast<double>(named) / c;
  st.distinct_rows_per_clock = static_cast<double>(distinct_rows) / c;
  st.bytes_per_clock = bytes / c;
}

}  // namespace stalelearn::runtime
