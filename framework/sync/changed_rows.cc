#include "framework/sync/changed_rows.h"

namespace stalelearn::sync {

ChangedRows::ChangedRows(const model::ModelLayout& layout, model::MemoryIndex shard) {
  for (std::size_t t = 0; t < layout.tables().size(); ++t) {
    const auto rows = layout.partition(model::TableId{static_cast<std::uint32_t>(t)}).ShardRows(shard);
    writer_.emplace_back(static_cast<std::size_t>(rows), kNoWriter);
    rows_.emplace_back();
  }
}

void ChangedRows::Clear() {
  for (std::size_t t = 0; t < rows_.size(); ++t) {
    for (std::int64_t local : rows_[t]) writer_[t][static_cast<std::size_t>(local)] = kNoWriter;
    rows_[t].clear();
  }
  all_ = false;
}

}  // namespace stalelearn::sync
