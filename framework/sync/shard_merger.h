// Adds validated batches into a memory rank's master shard (the "PIM" merge).
// Rows of one batch are distinct (checked), so large batches are merged in
// parallel over rows with oneTBB inside the rank's own task arena.
//
// Not thread-safe: one merging thread (the memory rank's poll loop) calls
// Merge; the parallelism is internal.
#pragma once

#include <cstdint>
#include <vector>

#include <tbb/task_arena.h>

#include "framework/core/status.h"
#include "framework/metrics/work_counters.h"
#include "framework/model/shard_layout.h"
#include "framework/sync/batch_codec.h"

namespace stalelearn::sync {

class ShardMerger {
 public:
  // `threads` >= 1: concurrency of the merge arena.
  ShardMerger(const model::ModelLayout& layout, model::MemoryIndex shard, int threads);

  const model::TableSet& master() const { return master_; }
  model::TableSet& mutable_master() { return master_; }

  // Applies every entry of `batch`. kDataLoss (and nothing applied) if a row
  // appears twice. Returns the work done (for timing backends).
  Result<metrics::WorkCounters> Merge(const DecodedBatch& batch);

 private:
  Status CheckDistinctRows(const DecodedBatch& batch);

  const model::ModelLayout& layout_;
  model::TableSet master_;
  // stamp_[table][local row] = number of the last batch that named the row.
  std::vector<std::vector<std::uint64_t>> stamp_;
  std::uint64_t batches_seen_ = 0;
  tbb::task_arena arena_;
};

}  // namespace stalelearn::sync
