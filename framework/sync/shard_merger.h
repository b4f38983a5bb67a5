// Folds validated batches into a memory rank's master shard (the "PIM"
// merge), each table by its merge policy (merge_policy.h: sum by default).
// Rows of one batch are distinct (checked), so large batches are merged in
// parallel over rows with oneTBB inside the rank's own task arena.
//
// Merge windows: policies that combine the deltas of several batches
// (average) hold them from BeginWindow until EndWindow, which applies them.
// RingPoller opens one window per PollOnce pass. Merge outside a window is a
// window of its own (the master reflects the batch on return). Snapshots must
// be taken outside windows; they see master rows only, never policy state.
//
//   merger.BeginWindow();
//   for (const DecodedBatch& b : batches) work += merger.Merge(b).value();
//   work += merger.EndWindow();
//
// Not thread-safe: one merging thread (the memory rank's poll loop) calls
// everything; the parallelism is internal. Not movable (the arena).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <tbb/task_arena.h>

#include "framework/core/status.h"
#include "framework/metrics/work_counters.h"
#include "framework/model/shard_layout.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"

namespace stalelearn::sync {

class ShardMerger {
 public:
  // `threads` >= 1: concurrency of the merge arena. `policies`: one per table
  // of `layout`, in table order, made for shard `shard` (CreateMergePolicies);
  // empty: sum for every table.
  ShardMerger(const model::ModelLayout& layout, model::MemoryIndex shard, int threads,
              std::vector<std::unique_ptr<MergePolicy>> policies = {});
  ShardMerger(const ShardMerger&) = delete;
  ShardMerger& operator=(const ShardMerger&) = delete;

  const model::TableSet& master() const { return master_; }
  model::TableSet& mutable_master() { return master_; }

  // Applies every entry of `batch` by its table's policy. kDataLoss (and
  // nothing applied) if a row appears twice. Divergence: kFailedPrecondition
  // "diverged: table 'T' row R element E: ... in the batch of clock C (memory
  // rank M)" if a delta holds a NaN or infinity (nothing applied) or a merged
  // row became one; diverged() is true from then on and the run must stop.
  // A batch of row values (kRowValues) is written over the master rows, not
  // merged: kInvalidArgument (nothing applied) if a table it names is not
  // merged by `sum`, whose master += delta its one writer's value equals.
  // A row request (kRowRequest) is kInvalidArgument: it has no deltas.
  // Returns the work done (for timing backends); outside a window, including
  // the window's end.
  Result<metrics::WorkCounters> Merge(const DecodedBatch& batch);
  bool diverged() const { return diverged_; }

  // Opens a merge window (none may be open).
  void BeginWindow();
  // Closes the window: policies apply what they held. Returns that work.
  metrics::WorkCounters EndWindow();
  bool in_window() const { return in_window_; }

  // An independent copy of the shard as it is now: master rows, every
  // policy's state (with what an open window holds) and whether a window is
  // open; it then merges on its own. A checkpoint's consistent cut forks the
  // shard at the first batch past the cut (framework/runtime/checkpoint_cut.h).
  std::unique_ptr<ShardMerger> Fork() const;

  const MergePolicy& policy(model::TableId table) const { return *policies_[table.value]; }
  // The table's merge is master += delta (MergePolicy::adds_delta).
  bool adds_delta(model::TableId table) const { return adds_inline_[table.value] != 0; }
  // Bytes of optimizer state held beside the master rows, all tables.
  std::size_t policy_state_bytes() const;

  // One table of the shard as the merge loop needs it.
  struct TableView {
    std::byte* base;
    std::size_t row_bytes;
    std::int32_t width;
    bool is_float;
    bool adds_inline;
    float scale;  // adds_inline float tables: the policy's DeltaScale for this batch
  };

 private:
  Status CheckDistinctRows(const DecodedBatch& batch);
  // views_ for a batch of this staleness (TableView::scale).
  void FillViews(std::uint32_t stale_epochs_x1024);
  Result<metrics::WorkCounters> WriteRows(const DecodedBatch& batch);
  Status Diverged(const DecodedBatch& batch, std::size_t entry, const char* what, int element, float value);
  template <class Bad>
  std::pair<std::size_t, int> FindFirst(std::size_t entries, const Bad& bad);
  // Runs body over chunks of [0, n), in parallel when n is large.
  void ForChunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body);

  const model::ModelLayout& layout_;
  model::MemoryIndex shard_;
  model::TableSet master_;
  std::vector<std::unique_ptr<MergePolicy>> policies_;  // [table]
  std::vector<metrics::WorkCounters> apply_work_;       // [table]: work of one row
  std::vector<std::uint8_t> adds_inline_;               // [table]: policy adds_delta(): merged inline
  bool any_held_ = false;                               // a policy holds deltas until the window ends
  std::vector<TableView> views_;                        // Merge's per-batch table views (capacity reused)
  // named_[table]: one bit per shard row, set while checking a batch's rows
  // (all clear between batches).
  std::vector<std::vector<std::uint64_t>> named_;
  std::uint64_t batches_seen_ = 0;
  bool in_window_ = false;
  bool diverged_ = false;
  ParallelChunks parallel_;  // ForChunks, for the policies' window ends
  tbb::task_arena arena_;
};

}  // namespace stalelearn::sync
