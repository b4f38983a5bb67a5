// A checkpoint's consistent cut on a memory rank, taken while training goes
// on (checkpointer.h).
//
// Checkpoint B (B a multiple of training.checkpoint.every_clocks) holds on
// each memory rank the shard with exactly the clocks < B of every compute
// rank merged, and on each compute rank its local state after its clock
// B - 1 (checkpointing_mode.h). Under a staleness bound a fast compute rank's
// batches of clocks >= B can reach the memory rank before a slow one's last
// batch of B - 1, and the memory rank merges each as it comes. So at the
// first batch of a clock >= B the shard is forked (ShardMerger::Fork: rows,
// merge-policy state, an open window), and from then on every batch of a
// clock < B is merged into the fork as well. Once every compute rank's
// clocks < B are merged, the fork (or the shard itself, if nothing past B
// came first) is B's state and goes to disk. The live shard never waits and
// merges exactly what it would without checkpoints, so taking checkpoints
// does not change training: in deterministic emulation the model's bits and
// the simulated time are those of the run without them.
//
// Costs: a copy of the shard for each checkpoint some rank overtook, and the
// merges of up to the staleness bound's clocks done twice; neither is
// charged in virtual time (a checkpoint's cost is not modelled, as its file
// writes are not). Several cuts can be pending at once (a rank more than
// every_clocks ahead, as under ASP), each with its own fork.
//
//   CheckpointCut cut(merger, poller, {every, first, total}, writer);
//   poller.set_merge_tap(&cut);
//   while (...) { poller.PollOnce(); STALELEARN_RETURN_IF_ERROR(cut.WriteCompleted()); }
//
// Not thread-safe: the memory rank's poll thread. `live` and `poller` must
// outlive it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "framework/core/status.h"
#include "framework/proto/checkpoint.pb.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/shard_merger.h"

namespace stalelearn::runtime {

// The clocks a run takes checkpoints at: every multiple of `every` (> 0)
// after `first` (the run's first clock) and before `total`.
struct CheckpointClocks {
  std::int64_t every = 0;
  std::int64_t first = 0;
  std::int64_t total = 0;
  // The first checkpoint clock after `clock`.
  std::int64_t After(std::int64_t clock) const { return (clock / every + 1) * every; }
  bool Includes(std::int64_t clock) const {
    return every > 0 && clock > first && clock < total && clock % every == 0;
  }
};

// A shard's checkpoint state: its rows and merge-policy state as `merger`
// holds them (outside a window), with every compute rank's merged clock and
// consumed batches.
proto::MemoryShardState ShardStateOf(const sync::ShardMerger& merger, std::uint64_t clock,
                                     const std::vector<std::uint64_t>& merged_clocks,
                                     const std::vector<std::uint64_t>& consumed_batches);

class CheckpointCut final : public sync::MergeTap {
 public:
  using Writer = std::function<Status(std::int64_t clock, const proto::MemoryShardState& state)>;
  CheckpointCut(const sync::ShardMerger& live, const sync::RingPoller& poller, CheckpointClocks clocks,
                Writer writer);

  void BeforeMerge(model::ComputeIndex from, const sync::DecodedBatch& batch) override;
  void WindowBegins() override;
  void WindowEnds() override;

  // Outside windows (after a PollOnce): writes, in clock order, every cut
  // whose clocks are all merged (dead compute ranks aside); the writer's
  // first error.
  Status WriteCompleted();

  // Cuts whose shard was forked, in all.
  std::int64_t forks() const { return forks_; }

 private:
  struct Pending {
    std::int64_t clock;
    std::unique_ptr<sync::ShardMerger> fork;  // the shard without the batches of clocks >= clock
    std::vector<std::uint64_t> past;          // [compute rank]: its batches of clocks >= clock merged since
  };

  const sync::ShardMerger& live_;
  const sync::RingPoller& poller_;
  const CheckpointClocks clocks_;
  Writer writer_;
  std::int64_t next_;            // the earliest checkpoint clock not yet written
  std::deque<Pending> pending_;  // forked cuts, from next_ on, in clock order
  std::int64_t forks_ = 0;
};

}  // namespace stalelearn::runtime
