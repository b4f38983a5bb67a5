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

RowId RowPartition::GlobalRow(MemoryIndex shard, std::int64_t local) const {
  if (scheme_ == PartitionScheme::kHash) return RowId{local * shards_ + shard.value};
  return RowId{shard.value * block_ + local};
}

}  // namespace stalelearn::model
