// The read planner of a partial replica's refresh: which change records to
// get from a memory rank's published snapshot, and how.
// ReadPickedChanges reads the change index since the generation held (8
// bytes per record), asks the caller's picker about each record, and gets
// only the picked records' rows, each once at its latest value; or, when
// reading the index has cost more than it saved, reads all records through
// the protocol (SnapshotProtocol::ReadChanges) and keeps weighing what
// picking would have cost.
// It reads only through SnapshotProtocol (snapshot_protocol.h), which keeps
// the seqlock and the log window; the file comment of
// snapshot_read_planner.cc says why its reads are never torn.
// Not thread-safe: the thread of the reader that owns it (SnapshotReader);
// the protocol must outlive it. A PickScratch serves one read at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/sync/changed_rows.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/snapshot_protocol.h"

namespace stalelearn::sync {

class SnapshotReadPlanner {
 public:
  using RangeSink = SnapshotProtocol::RangeSink;

  // pick(shard offset, bytes) -> an id (>= 0) for a one-row record of a row
  // the caller holds (of several records with one id, only the latest is
  // read), kAnyRecord for a record to read as it is (several rows), or
  // kNotPicked.
  // With id_count > 0 the picker promises ids below it: superseded records
  // are then found through an array over the ids (PickScratch::latest_of_id)
  // instead of by sorting the picked records. `prefetch`, if set, is told
  // about a record some records before pick is asked about it (so the
  // picker's lookups of scattered rows overlap). `take`, if set, gets each
  // picked record that has an id, with its id (so the caller need not look
  // the row up again), instead of `sink`.
  static constexpr std::int64_t kNotPicked = -1;
  static constexpr std::int64_t kAnyRecord = -2;
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

  // `operation_cost_bytes`: what one more get costs, in bytes (the
  // transport's Capabilities).
  SnapshotReadPlanner(SnapshotProtocol& protocol, std::size_t operation_cost_bytes);
  SnapshotReadPlanner(const SnapshotReadPlanner&) = delete;
  SnapshotReadPlanner& operator=(const SnapshotReadPlanner&) = delete;

  // The reader's own writer (ChangedRows' WriterOf(compute rank)): a picked
  // row whose records since the held generation all name it alone is not
  // read (the reader's replica holds that value; I2). kNoWriter: read all.
  void set_own_writer(std::uint16_t writer) { own_writer_ = writer; }

  // SnapshotReader::ReadPickedChanges (snapshot_reader.h says what the
  // caller gets); in *scratch, or in a set of its own if null.
  Result<const SnapshotMeta*> ReadPickedChanges(const SnapshotMeta& since, const RecordPicker& picker,
                                                const RangeSink& sink, PickScratch* scratch);

  // The patch of a whole read (SnapshotReader::ReadRows): of records
  // [index_begin, index_end), the first at log position `log_begin`, those
  // `picker` picks (kAnyRecord: no superseding, no own-writer skip; the
  // rows read may be torn whoever wrote them) go to `sink` in log order.
  // False if the log no longer holds them (the caller reads again).
  // Adds the bytes it got to *bytes_read.
  Result<bool> PatchPicked(std::uint64_t index_begin, std::uint64_t index_end, std::uint64_t log_begin,
                           const RecordPicker& picker, const RangeSink& sink, std::uint64_t* bytes_read);

 private:
  // Fills scratch_->picked from index entries [begin, end), whose first
  // record starts at log position `log_begin`.
  Status PickFromIndex(std::uint64_t begin, std::uint64_t end, std::uint64_t log_begin, const RecordPicker& picker);
  // Gets picked[first, ...) up to about kLogChunkBytes into rows, returning
  // the index after the last fetched one (its bytes added to *bytes_read).
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

  SnapshotProtocol& protocol_;
  std::size_t operation_cost_bytes_;
  PickScratch own_scratch_;                  // when the caller brings none
  PickScratch* scratch_ = &own_scratch_;     // the one the current picked read works in
  std::vector<SnapshotProtocol::RingGet> gets_;  // FetchPicked's (capacity reused)
  bool pick_from_index_ = true;              // the next ReadPickedChanges reads the index
  double picked_cost_ = 0, all_cost_ = 0;    // cost each way, decayed sums (WeighPicking)
  std::uint16_t own_writer_ = kNoWriter;     // set_own_writer
  bool reading_writers_ = false;             // this read gets the writers: some record in its range names one
};

}  // namespace stalelearn::sync
