#include "framework/sync/shard_merger.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cassert>
#include "framework/core/planted_defect.h"

namespace stalelearn::sync {
namespace {
// Below this many rows a parallel merge costs more than it saves.
constexpr std::size_t kParallelMergeRows = 2048;
}  // namespace

ShardMerger::ShardMerger(const model::ModelLayout& layout, model::MemoryIndex shard, int threads,
                         std::vector<std::unique_ptr<MergePolicy>> policies)
    : layout_(layout), master_(layout.MakeShard(shard)), policies_(std::move(policies)), arena_(threads) {
  if (policies_.empty()) {
    // The default: sum everywhere, which merges every element type.
    policies_ = std::move(CreateMergePolicies({}, layout, shard)).value();
  }
  assert(policies_.size() == master_.size() && "one merge policy per table");
  for (const model::RowBlock& block : master_) stamp_.emplace_back(static_cast<std::size_t>(block.rows()), 0);
  for (const auto& policy : policies_) apply_work_.push_back(policy->ApplyWork());
  parallel_ = [this](std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
    ForChunks(n, body);
  };
}

std::size_t ShardMerger::policy_state_bytes() const {
  std::size_t bytes = 0;
  for (const auto& policy : policies_) bytes += policy->state_bytes();
  return bytes;
}

void ShardMerger::ForChunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
  if (n >= kParallelMergeRows && arena_.max_concurrency() > 1) {
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 256),
                        [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
    });
  } else if (n > 0) {
    body(0, n);
  }
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

void ShardMerger::BeginWindow() {
  assert(!in_window_ && "merge windows do not nest");
  in_window_ = true;
}

metrics::WorkCounters ShardMerger::EndWindow() {
  assert(in_window_ && "EndWindow without BeginWindow");
  in_window_ = false;
  metrics::WorkCounters work;
  for (std::size_t t = 0; t < policies_.size(); ++t) work += policies_[t]->EndWindow(master_[t], parallel_);
  return work;
}

Result<metrics::WorkCounters> ShardMerger::Merge(const DecodedBatch& batch) {
  STALELEARN_RETURN_IF_ERROR(CheckDistinctRows(batch));
  const bool own_window = !in_window_;
  if (own_window) BeginWindow();
  // Planted defect (self-tests only): every 5th batch is merged twice.
  const int times = DefectPlanted(PlantedDefect::kDeltaMergedTwice) && batches_seen_ % 5 == 0 ? 2 : 1;
  for (int time = 0; time < times; ++time) {
    ForChunks(batch.entries.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const DecodedEntry& e = batch.entries[i];
        policies_[e.table.value]->Apply(master_[e.table.value], e.local_row, e.delta);
      }
    });
  }
  metrics::WorkCounters work;
  for (const DecodedEntry& e : batch.entries) work += apply_work_[e.table.value];
  if (own_window) work += EndWindow();
  return work;
}

}  // namespace stalelearn::sync
