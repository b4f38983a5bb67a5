// The memory-rank role (the "PIM"): holds the master shard, consumes the
// compute ranks' rings, merges, and publishes snapshots until every compute
// rank has finished. Sends nothing to compute ranks: they read its published
// region one-sided (framework/README.md).
//
//   auto memory = MemoryRank::Make(env, std::move(endpoints), geometry);
//   memory->PublishInitial();       // before the start barrier
//   auto result = memory->Run();    // returns when all compute ranks finished
//
// Through the rank's time service (env.wait.time): merges a batch no earlier
// than its stamp, charges the merge, and stamps each snapshot with the
// rank's clock (all free or 0 in real time).
// Not thread-safe: the rank's main thread. Not movable (the poller's hooks
// point at it).
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "framework/proto/checkpoint.pb.h"
#include "framework/runtime/checkpoint_cut.h"
#include "framework/runtime/data_plane.h"
#include "framework/runtime/rank_env.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/shard_merger.h"
#include "framework/sync/snapshot.h"

namespace stalelearn::runtime {

class DeadRankDetector;  // peer_liveness.h

struct MemoryRankResult {
  sync::MergeCounters counters;
  std::uint64_t snapshots = 0;
  std::int64_t checkpoint_forks = 0;  // CheckpointCut::forks
  // Thread CPU seconds spent consuming, merging and publishing batches (not
  // idling): with rows_merged, what calibrate prices the host path by.
  double busy_cpu_seconds = 0;
};

class MemoryRank {
 public:
  // kInvalidArgument if the config's merge policies do not fit the tables.
  // `restored`: a checkpoint's state of this shard (its policies' state is
  // restored here; PublishRestored does the rest), or null.
  static Result<std::unique_ptr<MemoryRank>> Make(const RankEnv& env, MemoryEndpoints endpoints,
                                                  const DataPlaneGeometry& geometry,
                                                  const proto::MemoryShardState* restored = nullptr);
  ~MemoryRank();
  MemoryRank(const MemoryRank&) = delete;
  MemoryRank& operator=(const MemoryRank&) = delete;

  // Initializes the master from the app and publishes it as generation 1.
  void PublishInitial();
  // Resuming (checkpointer.h): the master rows and every compute rank's merged
  // clock from `state` (the one given to Make), published as generation 1.
  // kDataLoss if the state does not fit this shard.
  Status PublishRestored(const proto::MemoryShardState& state);

  // Checkpoints (checkpointer.h): from now on, the shard's state at each of
  // `clocks` goes to `writer` as soon as every compute rank's clocks before
  // it are merged, while merging goes on (checkpoint_cut.h). Before Run.
  void EnableCheckpointCuts(CheckpointClocks clocks, CheckpointCut::Writer writer);
  // After Run returned (every batch merged, no merge window open): the
  // shard's state for a checkpoint of `clock` (a stop's).
  proto::MemoryShardState SaveState(std::uint64_t clock) const;
  // Called with the slowest compute rank's merged clock whenever it advances.
  void set_merged_clock_observer(std::function<void(std::uint64_t)> observer) {
    merged_clock_observer_ = std::move(observer);
  }
  // faults.dead_after_seconds: Run drops a compute rank whose heartbeat stood
  // still that long (peer_liveness.h). Before Run.
  void EnableDeadRankDetection(std::chrono::duration<double> dead_after);
  struct DeadRank {
    model::ComputeIndex rank;
    std::uint64_t merged_clock;  // its clocks merged here before it was dropped
  };
  const std::vector<DeadRank>& dead_ranks() const { return dead_ranks_; }
  Result<MemoryRankResult> Run();

 private:
  MemoryRank(const RankEnv& env, MemoryEndpoints endpoints, const DataPlaneGeometry& geometry,
             std::vector<std::unique_ptr<sync::MergePolicy>> policies);
  // The poller and publisher of `endpoints_`.
  void Plumb(const DataPlaneGeometry& geometry);
  // Publishes the master as the next snapshot, stamped with the virtual time.
  void Publish();

  const RankEnv& env_;
  model::MemoryIndex me_;
  MemoryEndpoints endpoints_;
  sync::ShardMerger merger_;
  std::unique_ptr<sync::RingPoller> poller_;
  std::unique_ptr<sync::SnapshotPublisher> publisher_;
  sync::ChangedRows changed_;  // rows merged since the last publish
  Status charge_status_;  // first error of charging merge work (timing backend)
  std::chrono::nanoseconds busy_cpu_{0};  // MemoryRankResult::busy_cpu_seconds
  std::function<void(std::uint64_t)> merged_clock_observer_;
  std::unique_ptr<DeadRankDetector> detector_;
  std::unique_ptr<CheckpointCut> cut_;  // checkpoints taken while merging goes on, or null
  std::vector<DeadRank> dead_ranks_;
  // Drops the compute ranks whose heartbeat stopped; true if it dropped any.
  bool DropDeadRanks();
};

}  // namespace stalelearn::runtime
