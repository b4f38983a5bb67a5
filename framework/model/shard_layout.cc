#include "framework/model/shard_layout.h"

#include <cstring>

namespace stalelearn::model {

ModelLayout::ModelLayout(std::vector<TableSpec> tables, int memory_ranks, PartitionScheme scheme)
    : tables_(std::move(tables)), memory_ranks_(memory_ranks) {
  for (const TableSpec& t : tables_) partitions_.emplace_back(t.rows, memory_ranks, scheme);
  table_offsets_.resize(static_cast<std::size_t>(memory_ranks));
  shard_bytes_.resize(static_cast<std::size_t>(memory_ranks));
  for (int m = 0; m < memory_ranks; ++m) {
    std::size_t offset = 0;
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      table_offsets_[m].push_back(offset);
      offset += static_cast<std::size_t>(partitions_[t].ShardRows(MemoryIndex{m})) * tables_[t].row_bytes();
    }
    shard_bytes_[m] = offset;
  }
}

std::size_t ModelLayout::ShardBytes(MemoryIndex shard) const { return shard_bytes_[shard.value]; }

std::size_t ModelLayout::TableOffset(MemoryIndex shard, TableId table) const {
  return table_offsets_[shard.value][table.value];
}

std::size_t ModelLayout::RowOffset(TableId table, RowId row) const {
  const RowPartition& p = partitions_[table.value];
  return TableOffset(p.Owner(row), table) +
         static_cast<std::size_t>(p.LocalIndex(row)) * tables_[table.value].row_bytes();
}

TableSet ModelLayout::MakeShard(MemoryIndex shard) const {
  TableSet set;
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    set.emplace_back(tables_[t].type, partitions_[t].ShardRows(shard), tables_[t].width);
  }
  return set;
}

void ModelLayout::InstallShard(MemoryIndex shard, const std::byte* shard_bytes, TableSet& full) const {
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    const RowPartition& p = partitions_[t];
    const std::size_t row_bytes = tables_[t].row_bytes();
    const std::byte* src = shard_bytes + table_offsets_[shard.value][t];
    const std::int64_t n = p.ShardRows(shard);
    if (n == 0) continue;
    const RowId first = p.GlobalRow(shard, 0);
    const bool contiguous = n == 1 || p.GlobalRow(shard, 1).value == first.value + 1;
    if (contiguous) {  // kRange: one copy
      std::memcpy(full[t].RowBytes(first.value), src, static_cast<std::size_t>(n) * row_bytes);
      continue;
    }
    for (std::int64_t local = 0; local < n; ++local) {
      std::memcpy(full[t].RowBytes(p.GlobalRow(shard, local).value), src + local * row_bytes, row_bytes);
    }
  }
}

void ModelLayout::SerializeShard(const TableSet& shard_rows, std::byte* out) const {
  std::size_t offset = 0;
  for (const RowBlock& block : shard_rows) {
    std::memcpy(out + offset, block.bytes().data(), block.size_bytes());
    offset += block.size_bytes();
  }
}

}  // namespace stalelearn::model
