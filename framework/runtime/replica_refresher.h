// Keeps a compute rank's replica = latest snapshots + its own deltas that
// those snapshots do not include yet (read-your-writes, I2).
//
// Each batch the rank sends is kept as pending until a snapshot of that
// memory rank includes its sequence; installing a newer snapshot of memory
// rank m overwrites m's rows and replays m's still-pending batches.
//
// Not thread-safe (the compute rank's trainer thread). The transport and
// remote regions must outlive it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "framework/model/row_block.h"
#include "framework/model/shard_layout.h"
#include "framework/sync/snapshot.h"

namespace stalelearn::runtime {

class ReplicaRefresher {
 public:
  ReplicaRefresher(transport::Transport& transport, const model::ModelLayout& layout, model::ComputeIndex me,
                   std::vector<const transport::RemoteRegion*> published,
                   const std::vector<sync::PublishedGeometry>& geometry, sync::WaitOptions wait);

  // Remembers a batch sent to memory rank m.
  void AddPending(model::MemoryIndex m, std::uint64_t sequence, std::vector<std::byte> batch);
  std::size_t pending_batches() const;

  // Installs every snapshot newer than the installed one, plus own pending
  // deltas, into `replica` (which must have no touched rows). Returns the
  // merged clock of the slowest other compute rank over installed snapshots.
  Result<std::uint64_t> Refresh(model::TableSet& replica);

  // Reads the latest snapshots of all memory ranks into `model` (no own
  // deltas): the merged model, for evaluation. Blocking.
  Status ReadMergedModel(model::TableSet& model);

 private:
  struct Pending {
    std::uint64_t sequence;
    std::vector<std::byte> batch;
  };
  void ReplayPending(model::MemoryIndex m, model::TableSet& replica) const;

  const model::ModelLayout& layout_;
  model::ComputeIndex me_;
  std::vector<std::unique_ptr<sync::SnapshotReader>> readers_;  // [m]
  std::vector<std::uint64_t> installed_generation_;            // [m]
  std::vector<std::vector<std::uint64_t>> installed_merged_;    // [m][c]
  std::vector<std::deque<Pending>> pending_;                   // [m], by sequence
  std::vector<std::byte> shard_buffer_;
};

}  // namespace stalelearn::runtime
