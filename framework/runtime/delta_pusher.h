// Ships a compute rank's deltas of one clock to the memory ranks: routes each
// touched row's delta to the memory rank owning the row, packs batches that
// fit a ring slot, seals the last batch of every memory rank with the
// end-of-clock flag (also when empty, so every memory rank's merged clock
// advances; a push inside a stratum may skip those: PushClock), pushes them
// through the rings and hands each batch to the refresher as pending
// (read-your-writes).
// The puts of a clock are waited for (local completion: their sources may be
// reused) only when the next clock pushes (or at Complete / Finish), so they
// overlap the next clock's compute, and no clock waits for a memory rank's
// acknowledgement; a batch stays alive until then (as pending, or kept here
// when there is no refresher).
// Buffers are reused across clocks: deltas are written straight into the
// batch being encoded, and a batch's memory goes back to an encoder once
// the refresher drops it (or its put completed): no allocation or page
// zeroing per batch once warm.
//
// Not thread-safe (the compute rank's trainer thread).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "framework/model/replica.h"
#include "framework/runtime/replica_refresher.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/clock_table.h"
#include "framework/sync/ring_writer.h"

namespace stalelearn::runtime {

class DeltaPusher final {
 public:
  // `heads` (may be null; outlives the pusher): the rank's clock table,
  // whose reads of the memory ranks' control blocks carry the rings' heads,
  // so a push rarely reads a head itself (RingWriter::NoteHead).
  DeltaPusher(const model::ModelLayout& layout, std::vector<std::unique_ptr<sync::RingWriter>> writers,
              ReplicaRefresher* refresher, const sync::ClockTable* heads = nullptr);

  // Drains `replica`'s deltas as clock `clock` and pushes them, each batch
  // marked with the clock's staleness in epochs (ClockRecord::
  // staleness_epochs; sync::BatchHeader::stale_epochs_x1024). Returns the
  // time spent waiting for ring slots (backpressure stall). Tables marked
  // in `keep` stay in the replica (Replica::DrainDeltasInto): the batches
  // then say the clock is in for every other table only. Every memory rank
  // gets a batch ending the clock, an empty one where it has no delta (its
  // merged clock of this rank advances), unless `only_with_deltas`: then
  // memory ranks without a delta get none and keep their merged clock
  // until a later push (a stratum's pushes but its last: the next rank
  // waits for the last one's clock, which reaches every memory rank).
  // `values`: the batches carry the rows' values (sync::kRowValues), for a
  // caller that is the one writer of every row it drains.
  Result<std::chrono::nanoseconds> PushClock(model::Replica& replica, std::uint64_t clock,
                                             double staleness_epochs = 0, std::span<const std::uint8_t> keep = {},
                                             bool only_with_deltas = false, bool values = false);
  // Notes the rings' heads `table` read (a second clock table's refresh,
  // taken: StripeReadAhead's asks), as the rank's own table's are noted
  // before each push. Heads only grow, so an older read is harmless.
  void NoteHeads(const sync::ClockTable& table) {
    for (std::size_t m = 0; m < writers_.size(); ++m) {
      writers_[m]->NoteHead(table.head(model::MemoryIndex{static_cast<int>(m)}, writers_[m]->me()));
    }
  }
  // The ring writers, one per memory rank (a row request goes through
  // them between pushes: sync/row_gather.h).
  std::vector<sync::RingWriter*> ring_writers() const {
    std::vector<sync::RingWriter*> out;
    for (const auto& w : writers_) out.push_back(w.get());
    return out;
  }
  // Sequence of the last batch pushed to memory rank m (0 if none).
  std::uint64_t last_sequence(model::MemoryIndex m) const { return writers_[m.value]->next_sequence() - 1; }
  // Waits until every push so far is complete at this rank, so its batch
  // may be dropped or reused (not at the memory ranks: their published
  // clocks say what they merged). Blocking.
  Status Complete();
  // Tells every memory rank this compute rank is done.
  Status Finish();
  // Tells every memory rank this rank no longer reads from it.
  Status Release();

  // The writer Replica::DrainDeltasInto calls (inline, per changed row):
  // routes a row to its memory rank's encoder, sealing a full batch first.
  std::byte* BeginRow(model::TableId table, model::RowId row) {
    const int m = layout_.partition(table).Owner(row).value;
    sync::BatchEncoder& encoder = encoders_[m];
    if (encoder.encoded_bytes() + encoder.EntryBytes(table) > writers_[m]->slot_capacity()) [[unlikely]] Seal(m, 0);
    open_memory_ = m;
    return encoder.BeginEntry(table, row);
  }
  void EndRow(bool changed) { encoders_[open_memory_].EndEntry(changed); }

 private:
  void Seal(int m, std::uint32_t flags);
  void RecycleBuffers();
  void GiveSpare(sync::BatchEncoder& encoder);

  const model::ModelLayout& layout_;
  std::vector<std::unique_ptr<sync::RingWriter>> writers_;  // [m]
  const sync::ClockTable* heads_;                            // may be null (each push reads its heads)
  ReplicaRefresher* refresher_;                              // may be null (no replay needed)
  std::vector<sync::BatchEncoder> encoders_;                 // [m]
  struct Sealed {
    int memory;
    std::vector<std::byte> bytes;
  };
  std::vector<Sealed> sealed_;
  std::vector<std::vector<std::byte>> unflushed_;  // no refresher: pushed, not yet completed
  std::vector<std::uint64_t> sealed_count_;  // [m] sealed this clock, not yet pushed
  std::vector<std::vector<std::byte>> spare_;  // sent batches' memory, for the encoders
  std::uint64_t clock_ = 0;                    // the clock being drained
  std::uint32_t stale_epochs_x1024_ = 0;       // its staleness (sync::BatchHeader)
  std::uint32_t row_flags_ = 0;                // sync::kRowValues while a push sends values
  int open_memory_ = -1;                       // encoder of the row BeginRow opened
};

}  // namespace stalelearn::runtime
