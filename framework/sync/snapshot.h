// Snapshots of a memory rank's master shard, published in its remote-read-only
// region for compute ranks to read one-sided (I6, I7), at a cost that follows
// what changed, not the shard's size (ring_layout.h has the byte layout).
//
// Publishing generation g (only the rows changed since g-1, ChangedRows):
//   1. advance the log's oldest-valid word past what g's records overwrite,
//   2. append g's change records (shard offset, bytes) to the change log,
//   3. write g's meta slot as a seqlock (version 2g-1, meta, version 2g),
//   4. advance the latest-generation word, then the control block's clocks,
//   5. rewrite the changed rows in the live shard.
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
// Each meta carries, per compute rank, the merged clock and the highest
// consumed batch sequence the generation includes (read-your-writes, I2).
// Timing backend: a meta also carries the virtual time it was published at;
// a reader with a simulated clock (WaitOptions::sim) advances it to when the
// data it read can have reached it (SimulatedTime::GetVisibleAt).
//
// SnapshotPublisher: the memory rank's poll thread only.
// SnapshotReader: one compute-rank thread; the transport and the remote
// region must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/shard_layout.h"
#include "framework/sync/changed_rows.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/wait_options.h"
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

struct SnapshotMeta {
  std::uint64_t generation = 0;
  std::uint64_t log_end = 0;                // change-log position after this generation
  std::uint64_t index_end = 0;              // records written up to this generation
  std::uint64_t single_writer_end = 0;      // records up to here include one naming a single writer
  std::vector<std::uint64_t> merged_clock;  // per compute rank
  std::vector<std::uint64_t> included;      // per compute rank: sequences 1..included are in
};

class SnapshotReader {
 public:
  SnapshotReader(transport::Transport& transport, const transport::RemoteRegion& published,
                 PublishedGeometry geometry, WaitOptions wait);

  // Reads the latest complete snapshot if its generation is above `after`:
  // its shard bytes into `shard_bytes` (geometry.shard_bytes long) and returns
  // its meta; std::nullopt if nothing newer is published. Blocking.
  Result<std::optional<SnapshotMeta>> ReadNewer(std::uint64_t after, std::span<std::byte> shard_bytes);

  // What changed since the generation `since` (generation, log_end) a caller
  // holds: calls `sink(shard offset, bytes)` for every change record, in
  // order (a later one may overwrite an earlier one's rows), or once with the
  // whole shard when the log no longer reaches back to `since` (counted in
  // whole_reads()). Returns the new generation's meta (valid until the next
  // call), or nullptr if nothing newer is published. Blocking.
  using RangeSink = std::function<void(std::size_t shard_offset, std::span<const std::byte> bytes)>;
  Result<const SnapshotMeta*> ReadChanges(const SnapshotMeta& since, const RangeSink& sink);
  // ReadChanges streams the log through a buffer of this many bytes (plus
  // one record cut at its end): a reader's memory does not follow the log.
  static constexpr std::size_t kLogChunkBytes = std::size_t{1} << 20;
  std::uint64_t whole_reads() const { return whole_reads_; }

  // ReadChanges for a reader that holds some rows (a partial replica): reads
  // the change index since `since` (8 bytes per record), asks the picker
  // about each record, and gets only the picked records' rows:
  //   pick(shard offset, bytes) -> an id (>= 0) for a one-row record of
  //   a row the caller holds (of several records with one id, only the
  //   latest is read), kAnyRecord for a record to read as it is (several
  //   rows), or kNotPicked.
  // `sink` gets the picked records in log order (a later one overwrites an
  // earlier one's rows), or, when the log no longer reaches back to `since`,
  // the whole shard once (whole_reads()). Records closer in the log than
  // what one more get costs (Capabilities::operation_cost_bytes) are fetched
  // with one get.
  // When the reader holds most of what changes (few compute ranks), the
  // index costs more than it saves: each read weighs what it cost (bytes,
  // plus gets times operation_cost_bytes) against what the other way would
  // have cost, and the next read takes the cheaper
  // way (reading all records, as ReadChanges, it still asks the picker, to
  // know what picking would have cost). `sink` then also gets records the
  // picker did not pick; the caller ignores rows it does not hold. Blocking.
  // With id_count > 0 the picker promises ids below it: superseded records
  // are then found through an array over the ids (PickScratch::latest_of_id)
  // instead of by sorting the picked records. `prefetch`, if set, is told
  // about a record some records before pick is asked about it (so the
  // picker's lookups of scattered rows overlap). `take`, if set, gets each
  // picked record that has an id, with its id (so the caller need not look
  // the row up again), instead of `sink`.
  struct RecordPicker {
    std::function<std::int64_t(std::size_t shard_offset, std::size_t bytes)> pick;
    std::size_t id_count = 0;
    std::function<void(std::size_t shard_offset, std::size_t bytes)> prefetch = nullptr;
    std::function<void(std::int64_t id, std::size_t shard_offset, std::span<const std::byte> bytes)> take = nullptr;
  };
  // What a picked read works in (capacity reused from read to read). A
  // refresh reads its memory ranks one after another, so one set serves all
  // of a compute rank's readers (ReplicaRefresher): a set per reader made
  // memory grow with compute x memory ranks (512 sets at --ranks 64:8).
  struct PickScratch {
    struct Picked {
      std::uint64_t position;  // of the record's key in the log
      std::size_t shard_offset;
      std::size_t bytes;       // 0 while DropSuperseded drops it
      std::int64_t id;         // the picker's, or kAnyRecord
      std::size_t staged = 0;  // where FetchPicked put its row bytes in rows (the
                               // all-records estimate keeps the record number here)
      std::uint16_t writer = kManyWriters;  // who changed it (read when an own writer is set)
    };
    std::vector<Picked> picked;        // the records picked, in log order
    std::vector<std::uint32_t> by_id;  // DropSuperseded: picked indices sorted by id
    // DropSuperseded with dense ids: per id, the latest picked record (and
    // whether all its records name the own writer); kNoRecord between reads.
    std::vector<std::uint32_t> latest_of_id;
    std::vector<std::byte> index;      // a chunk of index entries
    std::vector<std::uint16_t> writers;  // their writers
    std::vector<std::byte> rows;       // fetched rows
  };
  // The reader's own writer (ChangedRows' WriterOf(compute rank)): a picked
  // row whose records since the held generation all name it alone is not
  // read (the reader's replica holds that value; I2). kNoWriter: read all.
  void set_own_writer(std::uint16_t writer) { own_writer_ = writer; }
  static constexpr std::int64_t kNotPicked = -1;
  static constexpr std::int64_t kAnyRecord = -2;
  Result<const SnapshotMeta*> ReadPickedChanges(const SnapshotMeta& since, const RecordPicker& picker,
                                                const RangeSink& sink, PickScratch* scratch = nullptr);

  // A consistent read of some rows of the latest snapshot (DIRECT mode; a
  // stratified rank's next stripe): each (offset inside shard bytes,
  // destination, length: one row or a run of whole rows; reads disjoint or
  // identical) is fetched with its own get. Returns the generation read.
  // Blocking.
  struct RowRead {
    std::size_t offset;
    std::byte* destination;
    std::size_t bytes;
  };
  Result<std::uint64_t> ReadRows(std::span<const RowRead> rows);

 private:
  Result<std::uint64_t> ReadWord(std::size_t offset);
  // Reads generation g's meta slot into `meta` (seqlock); false if the slot
  // is being written or holds another generation.
  Result<bool> ReadMeta(std::uint64_t g, SnapshotMeta& meta, std::uint64_t* log_begin);
  // The latest generation's meta into meta_, if it is newer than `after`
  // (kRead); kRetry while its slot is being rewritten.
  enum class Latest { kNothingNewer, kRetry, kRead };
  Result<Latest> ReadLatestMeta(std::uint64_t after);
  // Copies log bytes [begin, end) into log_copy_ after its first `keep`
  // bytes; false if the log no longer holds them (overwritten before or
  // while reading).
  Result<bool> ReadLog(std::uint64_t begin, std::uint64_t end, std::size_t keep);
  // Issues the gets of `bytes` of a ring (`ring_bytes` long at region offset
  // `ring_offset`) from ring position `at` into `into`: one, or two when the
  // bytes wrap around its end. WaitForGets waits for every issued get.
  Status GetFromRing(std::byte* into, std::size_t bytes, std::size_t ring_offset, std::size_t ring_bytes,
                     std::size_t at);
  Status WaitForGets();
  // Calls fn(shard offset, bytes) for each complete record in log_copy_;
  // returns the bytes they span (a cut record after them is left).
  template <class Fn>
  std::size_t ForEachRecord(Fn&& fn) const;
  // After a rare large read (a whole read's patch): gives the memory back.
  void ReleaseLargeLogCopy();
  // Reads a whole generation: `body` reads live rows between the two meta
  // reads, `patch` gets the records to lay over them. nullopt if the latest
  // generation is <= `after`. Result meta in meta_.
  template <class Body, class Patch>
  Result<bool> ReadWhole(std::uint64_t after, std::uint64_t bytes, Body&& body, Patch&& patch);
  Status AdvanceSimulatedTime(std::uint64_t bytes);
  // The fallback of a reader the log no longer reaches: sink(0, whole shard).
  Result<const SnapshotMeta*> ReadWholeInstead(const SnapshotMeta& since, const RangeSink& sink);
  // ReadPickedChanges, steps (snapshot_picked_read.cc), in *scratch_: fills
  // picked from index entries [begin, end); then gets picked[first, ...) up
  // to about kLogChunkBytes into rows, returning the index after the last
  // fetched one (its bytes added to *bytes_read).
  // Records `begin` on start at log position `log_begin`.
  Status PickFromIndex(std::uint64_t begin, std::uint64_t end, std::uint64_t log_begin, const RecordPicker& picker);
  // Each get it issues adds operation_cost_bytes to *cost.
  Result<std::size_t> FetchPicked(std::size_t first, std::uint64_t* bytes_read, std::uint64_t* cost);
  // What reading every record from log position `from` to `to` costs (bytes
  // plus gets, as ReadChanges reads them), in bytes.
  std::uint64_t AllRecordsCost(std::uint64_t from, std::uint64_t to) const;
  // Keeps the latest of the picked records with one id (log order stays);
  // none of them when all name own_writer_. Marks the others (bytes = 0)
  // through an array over ids below id_count, or by sorting when the picker
  // gave no id_count, then erases them.
  void DropSuperseded(std::size_t id_count);
  void MarkSupersededByIdArray(std::size_t id_count);
  void MarkSupersededBySorting();
  // Gets the writers of records [begin, end) into scratch_->writers.
  Status ReadWriters(std::uint64_t begin, std::uint64_t end);
  // Whether a read from `since` to `meta` needs the writers: this reader has
  // one, and some record in that range names a single writer.
  bool WritersWorthReading(const SnapshotMeta& since, const SnapshotMeta& meta) const {
    return own_writer_ != kNoWriter && meta.single_writer_end > since.index_end;
  }
  // Whether a picked record starting at log position `begin` joins the run
  // of gets ending at `run_end`: the gap costs less than another get.
  bool JoinsRun(std::uint64_t run_end, std::uint64_t begin) const {
    return begin >= run_end && begin - run_end <= operation_cost_bytes_;
  }
  // Adds a read's cost both ways and picks the way of the next read.
  void WeighPicking(std::uint64_t picked_cost, std::uint64_t all_cost);
  Result<const SnapshotMeta*> ReadAllChangesWeighingPicks(const SnapshotMeta& since, const RecordPicker& picker,
                                                          const RangeSink& sink);

  transport::Transport& transport_;
  const transport::RemoteRegion& published_;
  PublishedGeometry geometry_;
  WaitOptions wait_;
  std::vector<std::byte> meta_bytes_;   // one meta slot
  std::vector<std::byte> log_copy_;     // records being read (capacity reused)
  std::size_t log_copy_bytes_ = 0;
  std::vector<std::byte> whole_shard_;  // only while a whole read replaces change records
  std::vector<transport::RequestPtr> requests_;
  std::vector<std::size_t> by_offset_;  // ReadRows: indices of rows sorted by offset
  PickScratch own_scratch_;                  // when the caller brings none
  PickScratch* scratch_ = &own_scratch_;     // the one the current picked read works in
  bool pick_from_index_ = true;              // the next ReadPickedChanges reads the index
  double picked_cost_ = 0, all_cost_ = 0;    // cost each way, decayed sums (WeighPicking)
  std::size_t operation_cost_bytes_;         // the transport's (Capabilities)
  std::uint16_t own_writer_ = kNoWriter;     // set_own_writer
  bool reading_writers_ = false;             // this read gets the writers: some record in its range names one
  SnapshotMeta meta_, first_meta_;
  std::uint64_t published_at_ps_ = 0;   // of the meta last read
  std::uint64_t whole_reads_ = 0;
};

}  // namespace stalelearn::sync
