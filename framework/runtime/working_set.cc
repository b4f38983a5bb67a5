#include "framework/runtime/working_set.h"

#include <cstdint>
#include <vector>

#include "framework/model/row_marks.h"
#include "framework/runtime/sample_parts.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {
using model::RowMarks;

model::WorkingSet FindWorkingSet(const App& app, std::span<const std::int64_t> samples, bool full_replicas) {
  const std::vector<TableSpec> tables = app.Tables();
  model::WorkingSet set(tables.size());
  if (full_replicas) return set;
  // On all cores, each part marking the rows its samples name in marks of
  // its own; the parts' marks are or-ed.
  const int parts = SampleParts();
  std::vector<std::vector<RowMarks>> named_in_part(static_cast<std::size_t>(parts));
  ForEachSamplePart(parts, samples.size(), [&](int part, std::size_t begin, std::size_t end) {
    std::vector<RowMarks>& marks = named_in_part[static_cast<std::size_t>(part)];
    marks.resize(tables.size());
    for (std::size_t t = 0; t < tables.size(); ++t) {
      if (!tables[t].dense) marks[t] = RowMarks(tables[t].rows);
    }
    std::vector<RowRef> rows;
    for (std::size_t i = begin; i < end; ++i) {
      rows.clear();
      app.RowsOf(samples[i], rows);
      for (const RowRef& r : rows) {
        RowMarks& table = marks[r.table.value];
        if (!table.empty()) table.Mark(r.row.value);
      }
    }
  });
  std::vector<RowMarks> named = std::move(named_in_part[0]);
  for (std::size_t p = 1; p < named_in_part.size(); ++p) {
    for (std::size_t t = 0; t < tables.size(); ++t) named[t].OrWith(named_in_part[p][t]);
  }
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (tables[t].dense) continue;
    std::vector<std::int64_t>& held = set[t].emplace();
    held.reserve(static_cast<std::size_t>(named[t].count()));
    named[t].ForEachMarked([&](std::int64_t row) { held.push_back(row); });
  }
  return set;
}

model::WorkingSet WorkingSetOf(const RankEnv& env, const SampleSchedule& schedule) {
  return FindWorkingSet(env.app, schedule.ascending(), env.config.training().full_replicas());
}

}  // namespace stalelearn::runtime
