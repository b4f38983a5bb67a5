#include "framework/runtime/app.h"

#include <algorithm>

namespace stalelearn::runtime {

void App::InitFloatRow(TableId, RowId, std::span<float> values) const { std::ranges::fill(values, 0.0f); }
void App::InitIntRow(TableId, RowId, std::span<std::int32_t> values) const { std::ranges::fill(values, 0); }

void InitializeTables(const App& app, TableSet& tables) {
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableId id{static_cast<std::uint32_t>(t)};
    model::RowBlock& block = tables[t];
    for (std::int64_t r = 0; r < block.rows(); ++r) {
      if (block.type() == ElementType::kFloat32) {
        app.InitFloatRow(id, RowId{r}, block.FloatRow(r));
      } else {
        app.InitIntRow(id, RowId{r}, block.IntRow(r));
      }
    }
  }
}

void InitializeShard(const App& app, const model::ModelLayout& layout, model::MemoryIndex shard, TableSet& rows) {
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const TableId id{static_cast<std::uint32_t>(t)};
    const model::RowPartition& partition = layout.partition(id);
    model::RowBlock& block = rows[t];
    for (std::int64_t local = 0; local < block.rows(); ++local) {
      const RowId row = partition.GlobalRow(shard, local);
      if (block.type() == ElementType::kFloat32) {
        app.InitFloatRow(id, row, block.FloatRow(local));
      } else {
        app.InitIntRow(id, row, block.IntRow(local));
      }
    }
  }
}

}  // namespace stalelearn::runtime
