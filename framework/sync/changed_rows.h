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
// Each marked row also keeps who changed it: one compute rank, or several.
// A snapshot publishes that with the row's record, so a reader can skip a
// row that only it changed, when the merge added its delta as it is (sum):
// its replica holds that value already.
//
// Not thread-safe (the memory rank's poll thread). Memory: two bytes per
// shard row plus the listed rows; Clear costs the listed rows only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/model/shard_layout.h"

namespace stalelearn::sync {

// Who changed a row since the last publish: compute rank c as WriterOf(c),
// or kManyWriters (several ranks, one whose merge is not a plain sum, a
// whole-shard publish, or a rank too high to name).
inline constexpr std::uint16_t kNoWriter = 0;
inline constexpr std::uint16_t kManyWriters = 0xFFFF;
inline std::uint16_t WriterOf(model::ComputeIndex c) {
  return c.value >= 0 && c.value + 1 < kManyWriters ? static_cast<std::uint16_t>(c.value + 1) : kManyWriters;
}

class ChangedRows {
 public:
  ChangedRows(const model::ModelLayout& layout, model::MemoryIndex shard);

  // `writer` changed the row (WriterOf, or kManyWriters if unknown).
  void Mark(model::TableId table, std::int64_t local_row, std::uint16_t writer = kManyWriters) {
    std::uint16_t& who = writer_[table.value][static_cast<std::size_t>(local_row)];
    if (all_) return;
    if (who == kNoWriter) {
      who = writer;
      rows_[table.value].push_back(local_row);
    } else if (who != writer) {
      who = kManyWriters;
    }
  }
  // Who changed a marked row (kManyWriters after MarkAll).
  std::uint16_t writer(model::TableId table, std::int64_t local_row) const {
    return all_ ? kManyWriters : writer_[table.value][static_cast<std::size_t>(local_row)];
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
  std::vector<std::vector<std::uint16_t>> writer_;  // [table][local row]: kNoWriter = unmarked
  std::vector<std::vector<std::int64_t>> rows_;    // [table]
  bool all_ = false;
};

}  // namespace stalelearn::sync
