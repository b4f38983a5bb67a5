#include "framework/runtime/working_set.h"

#include <cstdint>
#include <vector>

#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {

model::WorkingSet FindWorkingSet(const App& app, std::span<const std::int64_t> samples, bool full_replicas) {
  const std::vector<TableSpec> tables = app.Tables();
  model::WorkingSet set(tables.size());
  if (full_replicas) return set;
  std::vector<std::vector<bool>> named(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (!tables[t].dense) named[t].assign(static_cast<std::size_t>(tables[t].rows), false);
  }
  std::vector<RowRef> rows;
  for (std::int64_t s : AscendingSamples(samples)) {
    rows.clear();
    app.RowsOf(s, rows);
    for (const RowRef& r : rows) {
      if (!named[r.table.value].empty()) named[r.table.value][static_cast<std::size_t>(r.row.value)] = true;
    }
  }
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (tables[t].dense) continue;
    std::vector<std::int64_t>& held = set[t].emplace();
    for (std::size_t r = 0; r < named[t].size(); ++r) {
      if (named[t][r]) held.push_back(static_cast<std::int64_t>(r));
    }
  }
  return set;
}

model::WorkingSet WorkingSetOfRank(const RankEnv& env, model::ComputeIndex me) {
  const proto::Config& config = env.config;
  const SampleSchedule schedule = ScheduleOf(env.app, config, env.roles.compute_ranks(), me.value);
  return FindWorkingSet(env.app, schedule.samples(), config.training().full_replicas());
}

}  // namespace stalelearn::runtime
