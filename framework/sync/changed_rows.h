// The rows of a memory rank's shard changed since the last snapshot: the
// ring poller marks every row a merged batch names (a merge policy changes
// only the rows its batches name), the snapshot publisher writes exactly
// these rows (and their change records) and then clears the set. So a
// publish, and a refresh that reads the change records, cost what changed,
// not what the shard holds.
//
//   ChangedRows changed(layout, shard);
//   changed.Mark(TableId{0}, /*local_row=*/5);   // idempotent
//   for (std::int64_t local : changed.rows(TableId{0})) ...;
//   changed.Clear();
//
// Not thread-safe (the memory rank's poll thread). Memory: one byte per shard
// row plus the listed rows; Clear costs the listed rows only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/model/shard_layout.h"

namespace stalelearn::sync {

class ChangedRows {
 public:
  ChangedRows(const model::ModelLayout& layout, model::MemoryIndex shard);

  void Mark(model::TableId table, std::int64_t local_row) {
    std::vector<std::uint8_t>& flag = marked_[table.value];
    if (all_ || flag[static_cast<std::size_t>(local_row)] != 0) return;
    flag[static_cast<std::size_t>(local_row)] = 1;
    rows_[table.value].push_back(local_row);
  }
  // Every row changed (the initial publish; tests that rewrite the master).
  void MarkAll() { all_ = true; }
  bool all() const { return all_; }
  // Local rows of `table` marked since the last Clear (unordered); meaningless
  // when all().
  std::span<const std::int64_t> rows(model::TableId table) const { return rows_[table.value]; }
  std::size_t tables() const { return rows_.size(); }
  void Clear();

 private:
  std::vector<std::vector<std::uint8_t>> marked_;  // [table][local row]
  std::vector<std::vector<std::int64_t>> rows_;    // [table]
  bool all_ = false;
};

}  // namespace stalelearn::sync
