// Which memory rank owns which row of a table, and where the row lives inside
// that rank's shard.
//
//   kRange: contiguous blocks of ceil(rows / M) rows (shard 0 gets the first).
//   kHash:  row r goes to shard r mod M at local index r / M (round-robin; ids
//           in our datasets are dense, so modulo spreads them evenly).
//
// Immutable after construction; thread-safe.
#pragma once

#include <cassert>
#include <cstdint>
#include <vector>

#include "framework/model/rank_index.h"
#include "framework/model/table_spec.h"

namespace stalelearn::model {

enum class PartitionScheme : std::uint8_t { kRange, kHash };

class RowPartition {
 public:
  RowPartition(std::int64_t rows, int shards, PartitionScheme scheme);

  std::int64_t rows() const { return rows_; }
  int shards() const { return shards_; }

  // Inline: called per row on the data plane (one shard: no division).
  MemoryIndex Owner(RowId row) const {
    assert(row.value >= 0 && row.value < rows_);
    if (shards_ == 1) return MemoryIndex{0};
    if (scheme_ == PartitionScheme::kHash) return MemoryIndex{static_cast<int>(row.value % shards_)};
    return MemoryIndex{static_cast<int>(row.value / block_)};
  }
  // Index of `row` inside its owner's shard.
  std::int64_t LocalIndex(RowId row) const {
    if (shards_ == 1) return row.value;
    if (scheme_ == PartitionScheme::kHash) return row.value / shards_;
    return row.value % block_;
  }
  // Number of rows shard `shard` holds.
  std::int64_t ShardRows(MemoryIndex shard) const;
  // [shard]: 1 where the shard holds a row of [first, last), else 0; at
  // most O(shards) work, whatever the range's length.
  std::vector<std::uint8_t> ShardsHolding(std::int64_t first, std::int64_t last) const;
  // How many of rows 0..row-1 shard `shard` holds (0 <= row <= rows()): the
  // local index where its rows >= `row` begin. Local indices follow global
  // ids, so the rows of [first, last) a shard holds are its local indices
  // ShardRowsBelow(first)..ShardRowsBelow(last)-1.
  std::int64_t ShardRowsBelow(MemoryIndex shard, std::int64_t row) const;
  // Inverse of (Owner, LocalIndex).
  RowId GlobalRow(MemoryIndex shard, std::int64_t local) const;

 private:
  std::int64_t rows_;
  int shards_;
  PartitionScheme scheme_;
  std::int64_t block_;  // kRange: rows per shard (the last may have fewer)
};

}  // namespace stalelearn::model
