// Compute-rank side of one mailbox ring (one per memory rank): writes sealed
// batches into slots of the memory rank's registered ring region with
// one-sided puts (I6), then the slot's commit word.
//
// Publication order (I3): payload put -> Fence -> commit-word put. Nothing
// waits for the memory rank to acknowledge them: Complete waits only until
// their sources may be reused (local completion), so a clock's pushes cost
// the caller the issue, not a round trip, and overlap its next compute. The
// memory rank merges a batch once it sees its commit word; what a reader
// may rely on comes from the memory rank's published clocks, never from
// this writer's flush (only Finish flushes).
// The memory rank reads the commit word with an acquire load, so it sees the
// payload once it sees the commit word; a writer stopped before the commit
// word never has the batch merged. A slot is rewritten only after the memory
// rank consumed its previous batch (backpressure), so the put into it has
// completed; the caller keeps each pushed batch alive until Complete.
// Backpressure (I5): batch n may be written only when the memory rank has
// consumed batch n - R (its head, read one-sided from the published region);
// until then Push waits, progressing the transport. A push that leaves the
// ring half full by the head last known begins a read of the head without
// waiting for it (once per half ring of pushes at most), so a later push
// usually finds room by its answer instead of a round trip of its own.
// Each batch carries in its header the virtual time its put becomes visible
// at the memory rank (BatchHeader::visible_at_ps, from the rank's time
// service wait.time; 0 in real time).
//
// Not thread-safe (the compute rank's trainer thread). The Transport and the
// published RemoteRegion must outlive the writer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

class RingWriter {
 public:
  RingWriter(transport::Transport& transport, std::unique_ptr<transport::RemoteRegion> ring,
             const transport::RemoteRegion& published, model::ComputeIndex me, RingGeometry ring_geometry,
             PublishedGeometry published_geometry, WaitOptions wait);

  transport::Rank peer() const { return ring_->owner(); }
  model::ComputeIndex me() const { return me_; }
  // The memory rank's head of this ring as read elsewhere (its control
  // block, which ClockTable refreshes read whole): batches up to `head` were
  // consumed. Heads only grow, so any value once read is a lower bound, and
  // a push that finds room by it needs no read of its own.
  void NoteHead(std::uint64_t head) { known_head_ = std::max(known_head_, head); }
  // Sequence the next batch must be sealed with (1, 2, ...).
  std::uint64_t next_sequence() const { return next_sequence_; }
  // Largest batch (header + payload) a slot holds.
  std::size_t slot_capacity() const { return ring_geometry_.slot_bytes; }

  // Writes `batch`, sealed with next_sequence(). Blocks while the ring is full.
  // Returns the time spent waiting for a free slot (stall). `batch` must stay
  // unchanged until Complete returns.
  Result<std::chrono::nanoseconds> Push(std::span<const std::byte> batch);
  // Waits until the sources of every put issued so far may be reused (local
  // completion, not a flush: the memory rank may not have them yet). Blocking.
  Status Complete();

  // Sets the ring's finish word (batches sent + 1) and flushes. Blocking.
  Status Finish();
  // Sets the ring's released word: this rank needs nothing more from the
  // memory rank. Waits for local completion only: a flush would need the
  // memory rank to progress after it saw the word, and it stops then.
  Status Release();

 private:
  Status WaitForFreeSlot(std::uint64_t sequence);
  // Takes the answer of the head read begun ahead, if it is in (with
  // `wait`: once it is); no-op without one.
  Status TakeHeadAhead(bool wait);
  // A copy of `batch` stamped `visible_at`, when a put of it issued now is
  // visible (the caller's batch stays as sealed: it is replayed for
  // read-your-writes).
  std::span<const std::byte> Stamped(int slot, std::span<const std::byte> batch, transport::VirtualTime visible_at);

  transport::Transport& transport_;
  std::unique_ptr<transport::RemoteRegion> ring_;
  const transport::RemoteRegion& published_;
  model::ComputeIndex me_;
  RingGeometry ring_geometry_;
  PublishedGeometry published_geometry_;
  WaitOptions wait_;
  std::uint64_t next_sequence_ = 1;
  std::uint64_t known_head_ = 0;  // batches the memory rank has consumed
  // Sources of small puts; they must stay alive until the Flush.
  std::vector<std::uint64_t> commit_values_;  // [slot]
  std::uint64_t finish_value_ = 0;
  std::uint64_t released_value_ = 1;
  std::uint64_t head_read_ = 0;
  std::uint64_t head_ahead_value_ = 0;  // written by head_ahead_'s get
  transport::RequestPtr head_ahead_;    // a read of the head begun by Push, not yet taken
  std::uint64_t head_ahead_at_ = 0;     // batches pushed when the last one began
  std::vector<std::vector<std::byte>> stamped_;  // [slot] virtual time: the batch put there, stamped
  std::vector<transport::RequestPtr> in_flight_;  // puts not known complete at origin
  bool unflushed_ = false;                        // puts issued since the last flush
};

}  // namespace stalelearn::sync
