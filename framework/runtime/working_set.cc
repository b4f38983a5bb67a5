#include "framework/runtime/working_set.h"

#include <atomic>
#include <cstdint>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {

model::WorkingSet FindWorkingSet(const App& app, std::span<const std::int64_t> samples, bool full_replicas) {
  const std::vector<TableSpec> tables = app.Tables();
  model::WorkingSet set(tables.size());
  if (full_replicas) return set;
  std::vector<std::vector<std::uint8_t>> named(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (!tables[t].dense) named[t].assign(static_cast<std::size_t>(tables[t].rows), 0);
  }
  // On all cores; a mark is a byte set by whichever thread sees the row first
  // (read first: most rows are named again, and a read leaves the line shared).
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, samples.size(), 1 << 16),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      std::vector<RowRef> rows;
                      for (std::size_t i = range.begin(); i < range.end(); ++i) {
                        rows.clear();
                        app.RowsOf(samples[i], rows);
                        for (const RowRef& r : rows) {
                          std::vector<std::uint8_t>& marks = named[r.table.value];
                          if (marks.empty()) continue;
                          std::atomic_ref<std::uint8_t> mark(marks[static_cast<std::size_t>(r.row.value)]);
                          if (mark.load(std::memory_order_relaxed) == 0) mark.store(1, std::memory_order_relaxed);
                        }
                      }
                    });
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (tables[t].dense) continue;
    std::vector<std::int64_t>& held = set[t].emplace();
    for (std::size_t r = 0; r < named[t].size(); ++r) {
      if (named[t][r] != 0) held.push_back(static_cast<std::int64_t>(r));
    }
  }
  return set;
}

model::WorkingSet WorkingSetOf(const RankEnv& env, const SampleSchedule& schedule) {
  return FindWorkingSet(env.app, schedule.ascending(), env.config.training().full_replicas());
}

}  // namespace stalelearn::runtime
