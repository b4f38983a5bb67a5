#include "framework/sync/shard_merger.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "framework/core/planted_defect.h"

namespace stalelearn::sync {
namespace {
// Below this many rows a parallel merge costs more than it saves.
constexpr std::size_t kParallelMergeRows = 2048;
}  // namespace

ShardMerger::ShardMerger(const model::ModelLayout& layout, model::MemoryIndex shard, int threads)
    : layout_(layout), master_(layout.MakeShard(shard)), arena_(threads) {
  for (const model::RowBlock& block : master_) stamp_.emplace_back(static_cast<std::size_t>(block.rows()), 0);
}

Status ShardMerger::CheckDistinctRows(const DecodedBatch& batch) {
  const std::uint64_t stamp = ++batches_seen_;
  for (const DecodedEntry& e : batch.entries) {
    std::uint64_t& s = stamp_[e.table.value][static_cast<std::size_t>(e.local_row)];
    if (s == stamp) {
      return DataLoss(fmt::format("batch names row {} of table '{}' twice", e.row.value,
                                  layout_.tables()[e.table.value].name));
    }
    s = stamp;
  }
  return Status::Ok();
}

Result<metrics::WorkCounters> ShardMerger::Merge(const DecodedBatch& batch) {
  STALELEARN_RETURN_IF_ERROR(CheckDistinctRows(batch));
  const auto apply = [&](std::size_t i) {
    const DecodedEntry& e = batch.entries[i];
    master_[e.table.value].AddDelta(e.local_row, e.delta);
  };
  const std::size_t n = batch.entries.size();
  // Planted defect (self-tests only): every 5th batch is merged twice.
  const int times = DefectPlanted(PlantedDefect::kDeltaMergedTwice) && batches_seen_ % 5 == 0 ? 2 : 1;
  for (int time = 0; time < times; ++time) {
    if (n >= kParallelMergeRows && arena_.max_concurrency() > 1) {
      arena_.execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256), [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t i = r.begin(); i != r.end(); ++i) apply(i);
        });
      });
    } else {
      for (std::size_t i = 0; i < n; ++i) apply(i);
    }
  }
  metrics::WorkCounters work;
  for (const DecodedEntry& e : batch.entries) {
    const auto width = static_cast<double>(layout_.tables()[e.table.value].width);
    work.flops += width;
    work.bytes += 3 * width * model::kElementBytes;  // read delta, read + write master
    ++work.random_row_accesses;
  }
  return work;
}

}  // namespace stalelearn::sync
