// Where each table's rows live inside one memory rank's shard bytes (tables
// in order, rows in local-index order), and the row partitions of all tables.
// Every rank computes the same layout from the same table list and config, so
// a compute rank can address a master row remotely (DIRECT mode) and install
// snapshots without any exchange.
//
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/model/row_block.h"
#include "framework/model/row_partition.h"

namespace stalelearn::model {

class ModelLayout {
 public:
  ModelLayout(std::vector<TableSpec> tables, int memory_ranks, PartitionScheme scheme);

  const std::vector<TableSpec>& tables() const { return tables_; }
  int memory_ranks() const { return memory_ranks_; }
  const RowPartition& partition(TableId table) const { return partitions_[table.value]; }

  // Bytes of shard `shard` (all tables).
  std::size_t ShardBytes(MemoryIndex shard) const;
  // Offset of table `table`'s first row inside shard `shard`'s bytes.
  std::size_t TableOffset(MemoryIndex shard, TableId table) const;
  // Offset of global row `row` of `table` inside its owner's shard bytes.
  std::size_t RowOffset(TableId table, RowId row) const;

  // Master shard storage for `shard`, zero-filled.
  TableSet MakeShard(MemoryIndex shard) const;

  // Copies shard bytes (ShardBytes long, as laid out above) into the rows of
  // `shard` in a full-size table set, and back.
  void InstallShard(MemoryIndex shard, const std::byte* shard_bytes, TableSet& full) const;
  void SerializeShard(const TableSet& shard_rows, std::byte* out) const;

 private:
  std::vector<TableSpec> tables_;
  int memory_ranks_;
  std::vector<RowPartition> partitions_;
  std::vector<std::vector<std::size_t>> table_offsets_;  // [shard][table]
  std::vector<std::size_t> shard_bytes_;
};

}  // namespace stalelearn::model
