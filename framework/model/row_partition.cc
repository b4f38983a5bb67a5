#include "framework/model/row_partition.h"

#include <algorithm>
#include <cassert>

namespace stalelearn::model {

RowPartition::RowPartition(std::int64_t rows, int shards, PartitionScheme scheme)
    : rows_(rows), shards_(shards), scheme_(scheme), block_((rows + shards - 1) / shards) {
  assert(rows >= 1 && shards >= 1);
  if (block_ == 0) block_ = 1;
}

std::int64_t RowPartition::ShardRows(MemoryIndex shard) const {
  const std::int64_t m = shard.value;
  if (scheme_ == PartitionScheme::kHash) return m < rows_ ? (rows_ - m + shards_ - 1) / shards_ : 0;
  const std::int64_t begin = std::min(rows_, m * block_);
  const std::int64_t end = std::min(rows_, begin + block_);
  return end - begin;
}

std::int64_t RowPartition::ShardRowsBelow(MemoryIndex shard, std::int64_t row) const {
  assert(row >= 0 && row <= rows_);
  const std::int64_t m = shard.value;
  if (shards_ == 1) return row;
  if (scheme_ == PartitionScheme::kHash) return row > m ? (row - m + shards_ - 1) / shards_ : 0;
  return std::clamp(row - m * block_, std::int64_t{0}, ShardRows(shard));
}

RowId RowPartition::GlobalRow(MemoryIndex shard, std::int64_t local) const {
  if (scheme_ == PartitionScheme::kHash) return RowId{local * shards_ + shard.value};
  return RowId{shard.value * block_ + local};
}

std::vector<std::uint8_t> RowPartition::ShardsHolding(std::int64_t first, std::int64_t last) const {
  std::vector<std::uint8_t> holds(static_cast<std::size_t>(shards_), 0);
  if (first >= last) return holds;
  if (scheme_ == PartitionScheme::kHash && last - first < shards_) {
    for (std::int64_t r = first; r < last; ++r) holds[static_cast<std::size_t>(Owner(RowId{r}).value)] = 1;
  } else if (scheme_ == PartitionScheme::kHash) {
    holds.assign(holds.size(), 1);
  } else {
    const int end = Owner(RowId{last - 1}).value;
    for (int m = Owner(RowId{first}).value; m <= end; ++m) holds[static_cast<std::size_t>(m)] = 1;
  }
  return holds;
}

}  // namespace stalelearn::model
