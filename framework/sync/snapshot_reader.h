// A compute rank's reader of one memory rank's published snapshots: the
// read side of the protocol in snapshot.h. It reads a generation's meta as
// a seqlock (retrying while its slot is rewritten), reads change records
// only while the log's oldest-valid word says they are still there (else it
// reads the whole shard instead), and reads whole generations (or chosen
// rows of one) by patching the live rows with the records published
// meanwhile, so what it returns is never torn (I3).
// Refreshes of a partial replica (ReadPickedChanges) are planned by a
// SnapshotReadPlanner (snapshot_read_planner.h) that this reader owns and
// serves through the narrow SnapshotProtocol (snapshot_protocol.h): which
// records to get and how is the planner's, whether they are valid is
// decided here.
// Not thread-safe: one compute-rank thread. The transport and the remote
// region must outlive it; a meta it returns is valid until its next read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/snapshot_protocol.h"
#include "framework/sync/snapshot_read_planner.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

class SnapshotReader final : private SnapshotProtocol {
 public:
  SnapshotReader(transport::Transport& transport, const transport::RemoteRegion& published,
                 PublishedGeometry geometry, WaitOptions wait);
  SnapshotReader(const SnapshotReader&) = delete;  // planner_ refers to this reader
  SnapshotReader& operator=(const SnapshotReader&) = delete;

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
  // The log streams through a buffer of kLogChunkBytes.
  using SnapshotProtocol::kLogChunkBytes;
  using SnapshotProtocol::RangeSink;
  Result<const SnapshotMeta*> ReadChanges(const SnapshotMeta& since, const RangeSink& sink) override;
  std::uint64_t whole_reads() const override { return whole_reads_; }

  // ReadChanges for a reader that holds some rows (a partial replica): reads
  // the change index since `since`, asks the picker about each record
  // (SnapshotReadPlanner::RecordPicker says what it answers), and gets only
  // the picked records' rows. `sink` gets the picked records in log order (a
  // later one overwrites an earlier one's rows), or, when the log no longer
  // reaches back to `since`, the whole shard once (whole_reads()). Records
  // closer in the log than what one more get costs
  // (Capabilities::operation_cost_bytes) are fetched with one get.
  // When the reader holds most of what changes (few compute ranks), the
  // index costs more than it saves: each read weighs what it cost (bytes,
  // plus gets times operation_cost_bytes) against what the other way would
  // have cost, and the next read takes the cheaper way (reading all records,
  // as ReadChanges, it still asks the picker, to know what picking would
  // have cost). `sink` then also gets records the picker did not pick; the
  // caller ignores rows it does not hold. Blocking. `scratch`: where the
  // read works (PickScratch); null for the reader's own.
  using RecordPicker = SnapshotReadPlanner::RecordPicker;
  using PickScratch = SnapshotReadPlanner::PickScratch;
  static constexpr std::int64_t kNotPicked = SnapshotReadPlanner::kNotPicked;
  static constexpr std::int64_t kAnyRecord = SnapshotReadPlanner::kAnyRecord;
  // The reader's own writer (ChangedRows' WriterOf(compute rank)): a picked
  // row whose records since the held generation all name it alone is not
  // read (the reader's replica holds that value; I2). kNoWriter: read all.
  void set_own_writer(std::uint16_t writer) { planner_.set_own_writer(writer); }
  Result<const SnapshotMeta*> ReadPickedChanges(const SnapshotMeta& since, const RecordPicker& picker,
                                                const RangeSink& sink, PickScratch* scratch = nullptr) {
    return planner_.ReadPickedChanges(since, picker, sink, scratch);
  }

  // For each of several readers on one transport (a compute rank's memory
  // ranks): the latest generation's meta if it is above since[i], and
  // nothing else, for a reader that knows no row it could install was
  // changed by another rank since (ReplicaRefresher: rows written alone).
  // metas[i]: readers[i]'s meta (valid until its next read), or nullptr if
  // nothing newer is published. Round trips overlap: each step's gets go out
  // to every reader before any is waited for, so M memory ranks take about
  // 3 round trips, not 3 M; a reader whose meta slot was being rewritten
  // retries alone (ReadNewerMeta). Blocking.
  static Status ReadNewerMetas(std::span<SnapshotReader* const> readers, std::span<const std::uint64_t> since,
                               std::span<const SnapshotMeta*> metas);

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
  // ReadRows for each of several readers on one transport (a compute rank's
  // memory ranks: a stratified rank's next stripe), rows[i] from
  // readers[i]. Round trips overlap as in ReadNewerMetas: the metas, the
  // live rows and the second metas of all readers go out together, then
  // each reader's patch; a reader whose check fails reads again alone.
  // Each reader's last_meta() is the generation it read. Blocking.
  static Status ReadRowsOfEach(std::span<SnapshotReader* const> readers,
                               std::span<const std::span<const RowRead>> rows);
  // ReadRowsOfEach in two halves, for rows read ahead of their use (a
  // stratified rank's next stripe, while the kernel runs): Begin reads the
  // first metas and issues the live rows' gets without waiting for them;
  // Finish waits for them, then reads the second metas and patches. Between
  // the two the readers read nothing else, and `rows` (with the memory its
  // destinations point to) stays as given. Every Begin needs its Finish.
  // `unchanged_after(first)`: true when no generation after the one Begin
  // read first can change the rows (a stratified stripe whose writers'
  // clocks that generation holds, and which nobody writes until the reader
  // takes it): the patch then lays only that generation's own records over
  // them (its live rows may still have been written as they were read), not
  // every record published while the read was ahead, whose change index
  // alone was about 2 MB a stripe load at 4:1. Null: every record.
  using UnchangedAfter = std::function<bool(const SnapshotMeta& first)>;
  static Status BeginRowsOfEach(std::span<SnapshotReader* const> readers,
                                std::span<const std::span<const RowRead>> rows);
  static Status FinishRowsOfEach(std::span<SnapshotReader* const> readers,
                                 std::span<const std::span<const RowRead>> rows,
                                 const UnchangedAfter& unchanged_after = nullptr);
  // The meta of the generation the last ReadRows or ReadNewer returned
  // (valid until the next read).
  const SnapshotMeta& last_meta() const { return meta_; }

 private:
  // SnapshotProtocol, for planner_ (snapshot_protocol.h).
  const PublishedGeometry& geometry() const override { return geometry_; }
  Status Retry(const std::function<Result<bool>()>& step, std::string_view what) override;
  Result<Latest> ReadLatestMeta(std::uint64_t after) override;
  const SnapshotMeta& latest_meta() const override { return meta_; }
  Result<bool> LogHolds(std::uint64_t position) override;
  Status Get(std::span<const RingGet> gets) override;
  Status AdvanceSimulatedTime(std::uint64_t bytes) override;
  // After a consistent read of live rows between the metas of generations
  // g0 (first_meta_) and g1 (meta_), then g1's records over them: the rows
  // hold g0's state, so their bytes arrive after g0's publication; what g1
  // rewrote comes from the `patched` record bytes, after g1's. (Charging
  // the rows after g1's publication too counted them twice whenever a
  // publication overtook the read.)
  Status AdvanceAfterRead(std::uint64_t body_bytes, std::uint64_t patched);
  Result<const SnapshotMeta*> ReadWholeInstead(const SnapshotMeta& since, const RangeSink& sink) override;

  Result<std::uint64_t> ReadWord(std::size_t offset);
  // The batched reads' gets (snapshot_reader_batched.cc), added to
  // `requests`, not waited for: a word at `offset`, generation g's meta slot.
  Status IssueWord(std::uint64_t* into, std::size_t offset, std::vector<transport::RequestPtr>& requests);
  Status IssueMetaSlot(std::uint64_t g, std::vector<transport::RequestPtr>& requests);
  // For each reader still together_: the latest generation and, if above
  // since[i] (0 where `since` is empty), its meta (into first_meta_ and
  // begin0_, or with `second` into meta_), as ReadMeta does; together_ =
  // false where it is not above since[i] or its slot was being rewritten.
  static Status ReadMetasTogether(std::span<SnapshotReader* const> readers, std::span<const std::uint64_t> since,
                                  bool second);
  // ReadNewerMetas for this reader alone, retried until its meta is whole.
  Result<const SnapshotMeta*> ReadNewerMeta(std::uint64_t since);
  // Reads generation g's meta slot into `meta` (seqlock); false if the slot
  // is being written or holds another generation. With `live`, also the
  // live-generation word, got with the version re-check (TakeLiveGeneration).
  Result<bool> ReadMeta(std::uint64_t g, SnapshotMeta& meta, std::uint64_t* log_begin,
                        std::uint64_t* live = nullptr);
  // ReadMeta's check and copy, from meta_bytes_ (read) and the version word
  // read after it.
  bool TakeMeta(std::uint64_t g, std::uint64_t version_after, SnapshotMeta& meta, std::uint64_t* log_begin);
  // After first_meta_ (generation g0, its records from *begin0): the live
  // word `live` read before the rows says whether g0's rows were all
  // written then; if so the patch starts after g0's records
  // (live_holds_first_, *begin0 moved to g0's log end).
  void TakeLiveGeneration(std::uint64_t live, std::uint64_t* begin0);
  // Copies log bytes [begin, end) into log_copy_ after its first `keep`
  // bytes; false if the log no longer holds them (overwritten before or
  // while reading). check_first: also ask before reading (else only after).
  Result<bool> ReadLog(std::uint64_t begin, std::uint64_t end, std::size_t keep, bool check_first = true);
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
  // Calls fn(shard offset, bytes) for each record in log [begin, end),
  // read in chunks of kLogChunkBytes (a record cut at a chunk's end is
  // carried to the next): memory follows the chunk, not the log. False if
  // a chunk was overwritten before it was read whole (records before it may
  // have been passed to fn).
  template <class Fn>
  Result<bool> StreamLog(std::uint64_t begin, std::uint64_t end, Fn&& fn);
  // Reads a whole generation: `body` reads live rows between the two meta
  // reads, `patch` lays the records over them. nullopt if the latest
  // generation is <= `after`. Result meta in meta_.
  // `patch(begin0, &patched)` lays the records from g0's first (at log
  // position begin0) over what body read, adding the bytes it got to
  // patched; false if the log no longer held them (read again).
  template <class Body, class Patch>
  Result<bool> ReadWhole(std::uint64_t after, std::uint64_t bytes, Body&& body, Patch&& patch);
  // ReadRows' parts: the gets of the live rows (added to `requests`, not
  // waited for), and the patch over them once first_meta_ and meta_ hold
  // the generations read before and after (ReadWhole's patch).
  Status IssueRowGets(std::span<const RowRead> rows, std::vector<transport::RequestPtr>& requests);
  Result<bool> PatchRows(std::span<const RowRead> rows, std::uint64_t begin0, std::uint64_t* patched);
  static std::uint64_t BytesOf(std::span<const RowRead> rows) {
    std::uint64_t bytes = 0;
    for (const RowRead& r : rows) bytes += r.bytes;
    return bytes;
  }

  transport::Transport& transport_;
  const transport::RemoteRegion& published_;
  PublishedGeometry geometry_;
  WaitOptions wait_;
  std::vector<std::byte> meta_bytes_;   // one meta slot
  // The batched reads': the latest generation and the version re-read,
  // whether this reader is still on the shared path, and g0's log begin.
  std::vector<transport::RequestPtr> word_requests_;  // ReadMeta's words (requests_ may hold a read begun ahead)
  std::uint64_t words_[3] = {0, 0, 0};  // ReadMetasTogether: latest, version re-check, live word
  bool together_ = false;
  std::uint64_t begin0_ = 0;
  bool patch_first_only_ = false;       // PatchRows: lay first_meta_'s records only (UnchangedAfter)
  bool live_holds_first_ = false;       // PatchRows: first_meta_'s rows were written before the read (no records of it)
  std::vector<std::byte> log_copy_;     // records being read (capacity reused)
  std::size_t log_copy_bytes_ = 0;
  std::vector<std::byte> whole_shard_;  // only while a whole read replaces change records
  std::vector<transport::RequestPtr> requests_;
  std::vector<std::size_t> by_offset_;  // ReadRows: indices of rows sorted by offset
  SnapshotMeta meta_, first_meta_;
  std::uint64_t published_at_ps_ = 0;   // of the meta last read
  std::uint64_t first_published_at_ps_ = 0;  // of the last meta read into first_meta_
  std::uint64_t whole_reads_ = 0;
  SnapshotReadPlanner planner_;         // last: it is given *this
};

}  // namespace stalelearn::sync
