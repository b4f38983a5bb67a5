// Memory-rank side of the mailbox rings: polls every compute rank's ring for
// committed batches (acquire load of the commit word), copies each batch out
// of the ring (so a writer cannot change it between check and use), validates
// it (sequence, size, checksum, rows inside this shard: I3, I7), merges it or
// rejects and counts it, then advances that ring's head (published for the
// writer's backpressure, I5) and the compute rank's merged clock. A row
// request (kRowRequest) merges nothing: its rows are written into the
// requester's reply area (sync/row_gather.h), at once or, if it awaits
// clocks (kAwaitsClocks), at the end of the first PollOnce after which
// they are merged here; meanwhile the ring goes on (a newer request of the
// same rank replaces it).
//
// Exactly once (I4): a batch is consumed only at its expected sequence and
// the expected sequence then advances, so no batch is merged twice or skipped.
//
// Not thread-safe: the memory rank's poll thread. The regions must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "framework/metrics/work_counters.h"
#include "framework/model/rank_index.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/changed_rows.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/shard_merger.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

struct MergeCounters {
  std::int64_t batches_merged = 0;
  std::int64_t bytes_merged = 0;     // header + payload bytes of merged batches
  std::int64_t rejected_batches = 0;
  std::int64_t rows_merged = 0;        // entries (row deltas) of merged batches
  std::int64_t element_updates = 0;    // elements merged into the master (the merger's flops)
  std::int64_t rows_written = 0;       // of rows_merged, rows whose value was written (kRowValues)
  std::int64_t rows_gathered = 0;      // rows sent back for row requests (kRowRequest, row_gather.h)
};

// Sees what a RingPoller merges, in merge order: a checkpoint's consistent
// cut forks the shard and merges the batches before the cut into the fork too
// (framework/runtime/checkpoint_cut.h). Called on the poll thread.
class MergeTap {
 public:
  virtual ~MergeTap() = default;
  // Before compute rank `from`'s `batch` (decoded and validated) is merged.
  virtual void BeforeMerge(model::ComputeIndex from, const DecodedBatch& batch) = 0;
  // Around each PollOnce pass (ShardMerger::BeginWindow / EndWindow).
  virtual void WindowBegins() = 0;
  virtual void WindowEnds() = 0;
};

class RingPoller {
 public:
  // rings[c]: the ring region of compute rank c; `published` receives heads.
  RingPoller(const model::ModelLayout& layout, model::MemoryIndex me, RingGeometry ring_geometry,
             std::vector<transport::MemoryRegion*> rings, transport::MemoryRegion& published,
             PublishedGeometry published_geometry, ShardMerger& merger);

  // Consumes every batch committed so far, ring after ring, in sequence order,
  // as one merge window of the merger (ShardMerger::BeginWindow). Returns how
  // many batches it consumed (merged or rejected).
  int PollOnce();

  // Every compute rank has set its finish word and all its batches are consumed.
  bool AllFinished() const;
  // Every compute rank has set its released word (RingWriter::Release).
  bool AllReleased() const;

  const MergeCounters& counters() const { return counters_; }
  // Whether some live ring has a committed batch not yet consumed: a few
  // loads, no merge (the memory rank times only polls that will merge).
  bool AnyCommitted() const;
  // Batches of compute rank c consumed so far (= its highest included sequence).
  std::uint64_t consumed(model::ComputeIndex c) const { return rings_[c.value].next_sequence - 1; }
  // Clocks of compute rank c whose last batch has been consumed; kDeadClock
  // once c is marked dead (nobody waits for it any more).
  std::uint64_t merged_clock(model::ComputeIndex c) const {
    return rings_[c.value].dead ? kDeadClock : rings_[c.value].merged_clock;
  }
  static constexpr std::uint64_t kDeadClock = ~std::uint64_t{0};
  // The smallest merged_clock over the compute ranks (kDeadClock if all died).
  std::uint64_t slowest_merged_clock() const;
  // Compute rank c died (framework/runtime/peer_liveness.h): its ring is no
  // longer read (its unconsumed batches are discarded), it counts as
  // finished and released, and its merged clock reads kDeadClock: kept
  // requests awaiting its clocks are answered now, its own dropped.
  void MarkDead(model::ComputeIndex c);
  bool dead(model::ComputeIndex c) const { return rings_[c.value].dead; }
  // Its clocks merged before it was marked dead.
  std::uint64_t merged_clock_when_alive(model::ComputeIndex c) const { return rings_[c.value].merged_clock; }
  // Its finish word is set and all its batches are consumed, or it is dead.
  bool Finished(model::ComputeIndex c) const;
  int compute_ranks() const { return static_cast<int>(rings_.size()); }
  const RingGeometry& ring_geometry() const { return ring_geometry_; }
  // Resuming from a checkpoint (rings empty): compute rank c's clocks before
  // `clock` are already in the master. Before the first poll.
  void RestoreMergedClock(model::ComputeIndex c, std::uint64_t clock) { rings_[c.value].merged_clock = clock; }

  // Called with the work of every merged batch, and of each window's end where
  // a policy did work there (timing backends charge it).
  void set_merge_observer(std::function<void(const metrics::WorkCounters&)> observer) {
    merge_observer_ = std::move(observer);
  }
  // Called with the header of every intact batch right before its merge (the
  // timing backend advances the clock to the batch's visible time). If it
  // fails, the batch stays unconsumed, nothing more is consumed and failure()
  // returns the error.
  void set_merge_gate(std::function<Status(const BatchHeader&)> gate) { merge_gate_ = std::move(gate); }
  // The time a reply's rows are written at, in picoseconds (timing backend:
  // the rank's virtual clock, after the observer charged the gather); unset: 0.
  void set_reply_clock(std::function<std::int64_t()> clock) { reply_clock_ = std::move(clock); }

  // The first merge gate failure, or the merger's divergence (a NaN or
  // infinity, ShardMerger::Merge), after which nothing more is consumed.
  const Status& failure() const { return failure_; }
  // Marks every row a merged batch names in `changed` (the snapshot
  // publisher then writes only those); null: nothing is marked.
  void set_changed_rows(ChangedRows* changed) { changed_ = changed; }
  // Shown every batch before its merge and every window; null: none. It
  // must outlive the poller's use of it.
  void set_merge_tap(MergeTap* tap) { tap_ = tap; }

 private:
  struct RingState {
    transport::MemoryRegion* region;
    std::uint64_t next_sequence = 1;
    std::uint64_t merged_clock = 0;
    bool dead = false;
  };
  // Whether `ring`'s next batch is committed (its slot's commit word).
  bool Committed(const RingState& ring) const;
  // Consumes the batch in `ring`'s next slot if committed; true if it did.
  bool ConsumeNext(model::ComputeIndex c);
  // Answers compute rank c's row request (its reply area); the gather's work goes to the observer.
  Status Answer(model::ComputeIndex c, const DecodedBatch& request);
  // Compute rank c's request: answered now if what it awaits is merged,
  // else kept (the one of c kept before is dropped).
  Status AnswerOrKeep(model::ComputeIndex c, const DecodedBatch& request);
  // Whether `awaits` of compute rank c's request holds here.
  bool Holds(model::ComputeIndex c, const AwaitedClocks& awaits) const;
  // Answers the kept requests whose awaited clocks are merged now.
  void AnswerKept();

  const model::ModelLayout& layout_;
  model::MemoryIndex me_;
  RingGeometry ring_geometry_;
  std::vector<RingState> rings_;
  transport::MemoryRegion& published_;
  PublishedGeometry published_geometry_;
  ShardMerger& merger_;
  MergeCounters counters_;
  ChangedRows* changed_ = nullptr;  // rows merged since the last publish, or null
  MergeTap* tap_ = nullptr;
  std::vector<std::byte> scratch_;  // private copy of the slot being consumed
  std::function<void(const metrics::WorkCounters&)> merge_observer_;
  std::function<Status(const BatchHeader&)> merge_gate_;
  std::function<std::int64_t()> reply_clock_;
  Status failure_;  // first merge gate failure or divergence
  // [compute rank]: its request waiting for clocks (kAwaitsClocks), if any;
  // entries hold no row bytes (keys alone), so they point nowhere.
  std::vector<std::optional<DecodedBatch>> kept_requests_;
};

}  // namespace stalelearn::sync
