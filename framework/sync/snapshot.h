// Snapshots of a memory rank's master shard, published in its remote-read-only
// region for compute ranks to read one-sided (I6, I7), at a cost that follows
// what changed, not the shard's size (ring_layout.h has the byte layout).
//
// Publishing generation g (only the rows changed since g-1, ChangedRows):
//   1. advance the log's oldest-valid word past what g's records overwrite,
//   2. append g's change records (shard offset, bytes) to the change log,
//   3. write g's meta slot as a seqlock (version 2g-1, meta, version 2g),
//   4. advance the latest-generation word, then the control block's clocks,
//   5. rewrite the changed rows in the live shard,
//   6. advance the live-generation word to g.
// Reading changes (a refresh): a reader holding generation h (log position
// e_h) reads latest g, g's meta (seqlock), the records [e_h, e_g), then the
// oldest-valid word again: if the log still holds e_h.., the records are
// exactly the rows changed in h+1..g, each with its value as of the
// generation that changed it, applied in order. Otherwise (too far behind)
// it falls back to a whole read.
// Reading whole (or chosen rows of) a generation: latest g0 and its meta,
// the live rows, latest g1 and its meta, then the records [begin of g0, end
// of g1) patched over what was read. Nothing torn (I3): a live row read
// while step 5 rewrote it belongs to a generation in g0..g1, whose records
// are all patched over it in order, so the result is generation g1 exactly.
// If the live-generation word, read after g0 and before the rows, is g0 or
// later, g0's rows were all written before the read began: the records
// from the end of g0 suffice (none where g1 = g0). A final read after the
// last merge, or a stratified stripe nobody writes after g0, then gets no
// records: at 4:1 they were a third again of the final read (34 MB).
// Each meta carries, per compute rank, the merged clock and the highest
// consumed batch sequence the generation includes (read-your-writes, I2).
// A meta also carries the virtual time it was published at (0 in real
// time); a reader's time service (WaitOptions::time) advances its clock to
// when the data it read can have reached it (RankTime::GetVisibleAt).
//
// Here: SnapshotPublisher, the publishing side. The reading side:
// SnapshotReader (snapshot_reader.h: the seqlock, the log window, whole
// reads), which plans a partial replica's refresh with a SnapshotReadPlanner
// (snapshot_read_planner.h: picked records or all records, by cost).
// SnapshotPublisher: the memory rank's poll thread only; the published
// region and the layout must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/model/shard_layout.h"
#include "framework/sync/changed_rows.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/snapshot_reader.h"  // the reading side, for callers of both
#include "framework/transport/transport.h"

namespace stalelearn::sync {

class SnapshotPublisher {
 public:
  SnapshotPublisher(transport::MemoryRegion& published, PublishedGeometry geometry,
                    const model::ModelLayout& layout);

  // Publishes `master` with the poller's merged clocks and consumed sequences
  // as the next generation, stamped `published_at_ps` (the publisher's
  // virtual time; 0 without the timing backend). Writes only the rows in
  // `changed` (all rows if changed.all()); the caller clears it afterwards.
  void Publish(const model::TableSet& master, const RingPoller& poller, const ChangedRows& changed,
               std::int64_t published_at_ps = 0);
  // Every row changed (the initial publish, tests).
  void Publish(const model::TableSet& master, const RingPoller& poller, std::int64_t published_at_ps = 0);
  std::uint64_t generation() const { return generation_; }
  // Bytes written per publish, summed (change records; live rows as many again).
  std::uint64_t record_bytes() const { return record_bytes_; }

 private:
  struct Range {
    std::size_t offset;  // in the shard bytes
    std::size_t bytes;
    const std::byte* source;
    std::uint16_t writer = kManyWriters;  // ChangedRows::writer
  };
  void CollectRanges(const model::TableSet& master, const ChangedRows& changed);
  void WriteLog(std::uint64_t position, const void* source, std::size_t bytes);

  transport::MemoryRegion& published_;
  PublishedGeometry geometry_;
  const model::ModelLayout& layout_;
  std::uint64_t generation_ = 0;
  std::uint64_t log_end_ = 0;     // position after the last record written
  std::uint64_t index_end_ = 0;   // number of records written (their index entries)
  std::uint64_t single_writer_end_ = 0;  // index_end_ after the latest generation with a single-writer record
  std::uint64_t log_oldest_ = 0;  // the oldest position the log still holds
  std::uint64_t record_bytes_ = 0;
  std::vector<Range> ranges_;     // this publish's changed byte ranges (reused)
};

}  // namespace stalelearn::sync
