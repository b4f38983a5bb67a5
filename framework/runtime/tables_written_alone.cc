#include "framework/runtime/tables_written_alone.h"

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "framework/runtime/sample_parts.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::runtime {
namespace {

RowNamers NameRows(const App& app, int compute_ranks, std::uint64_t seed) {
  const std::vector<TableSpec> tables = app.Tables();
  RowNamers namers;
  namers.by_table.resize(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (!tables[t].dense) namers.by_table[t].assign(static_cast<std::size_t>(tables[t].rows), RowNamers::kNamedByNone);
  }
  const std::vector<std::uint16_t> rank_of = DealtRanks(app, compute_ranks, seed);
  // Each row's namer moves only none -> rank -> several, so the parts agree
  // whatever order their samples come in.
  ForEachSamplePart(SampleParts(), rank_of.size(), [&](int, std::size_t begin, std::size_t end) {
    std::vector<RowRef> rows;
    for (std::size_t s = begin; s < end; ++s) {
      rows.clear();
      app.RowsOf(static_cast<std::int64_t>(s), rows);
      const std::int32_t rank = rank_of[s];
      for (const RowRef& r : rows) {
        std::vector<std::int32_t>& table = namers.by_table[r.table.value];
        if (table.empty()) continue;
        std::atomic_ref<std::int32_t> namer(table[static_cast<std::size_t>(r.row.value)]);
        std::int32_t seen = namer.load(std::memory_order_relaxed);
        while (seen != rank && seen != RowNamers::kNamedBySeveral) {
          const std::int32_t next = seen == RowNamers::kNamedByNone ? rank : RowNamers::kNamedBySeveral;
          if (namer.compare_exchange_weak(seen, next, std::memory_order_relaxed)) break;
        }
      }
    }
  });
  return namers;
}

}  // namespace

WrittenAloneHandle FindRowNamers(const App& app, int compute_ranks, std::uint64_t seed) {
  // Shared by the ranks of one run while one of them holds it (header).
  using Key = std::tuple<const App*, std::int64_t, int, std::uint64_t>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const RowNamers>> live;
  std::lock_guard lock(mutex);
  std::erase_if(live, [](const auto& entry) { return entry.second.expired(); });
  const Key key{&app, app.TrainingSamples(), compute_ranks, seed};
  if (auto it = live.find(key); it != live.end()) {
    if (WrittenAloneHandle shared = it->second.lock()) return shared;
  }
  auto namers = std::make_shared<const RowNamers>(NameRows(app, compute_ranks, seed));
  live[key] = namers;
  return namers;
}

std::vector<bool> TablesWrittenAlone(const RowNamers& namers, int compute_ranks, model::ComputeIndex me,
                                     const model::Replica& replica) {
  const std::size_t tables = replica.tables().size();
  std::vector<bool> alone(tables, compute_ranks == 1);
  if (compute_ranks == 1) return alone;
  for (std::size_t t = 0; t < tables && t < namers.by_table.size(); ++t) {
    const model::TableId table{static_cast<std::uint32_t>(t)};
    const std::vector<std::int32_t>& namer = namers.by_table[t];
    if (namer.empty() || replica.whole(table)) continue;  // dense, or every row held
    bool mine = true;
    const std::int64_t held = replica.tables()[t].rows();
    for (std::int64_t slot = 0; slot < held && mine; ++slot) {
      mine = namer[static_cast<std::size_t>(replica.RowOfSlot(table, slot))] == me.value;
    }
    alone[t] = mine;
  }
  return alone;
}

}  // namespace stalelearn::runtime
