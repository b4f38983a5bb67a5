// Keeps a compute rank's replica = latest snapshots + its own deltas that
// those snapshots do not include yet (read-your-writes, I2), reading only
// what changed.
//
// Each batch the rank sends is kept as pending until a snapshot of that
// memory rank includes its sequence. A refresh reads, per memory rank, the
// change index since the generation the replica holds and then only the
// changed rows the replica holds, each once at its latest value
// (SnapshotReader::ReadPickedChanges), installs them, and replays the
// still-pending batches onto exactly those rows. Rows without a record keep their value: no own batch merged
// since touched them (a merge marks every row its batch names), so they
// already hold master + own pending deltas. So do rows whose records since
// the held generation all name this rank as their only writer, with a sum
// merge (master += delta): the reader skips those (ChangedRows' writers).
// By induction: the last install of such a row gave master as it was, and
// since then only this rank's deltas went into either copy.
// When no row a refresh could install can have been changed by another rank
// (set_tables_written_alone, and a focus every other rank has left: see
// FocusRows), it reads only the metas: no change index, no records. That is
// what keeps a stratified rank's refresh from reading every rank's changes.
//
// Not thread-safe (the compute rank's trainer thread). The transport and
// remote regions must outlive it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "framework/model/replica.h"
#include "framework/model/row_block.h"
#include "framework/model/row_range.h"
#include "framework/model/shard_layout.h"
#include "framework/sync/row_gather.h"
#include "framework/sync/snapshot.h"

namespace stalelearn::runtime {

struct RefreshCounters {
  std::uint64_t rows_installed = 0;  // rows written into the replica by refreshes
  std::uint64_t bytes_installed = 0;
  std::uint64_t whole_reads = 0;     // refreshes that fell back to a whole shard
  std::uint64_t meta_only_reads = 0; // snapshot reads of the meta alone (no row could have changed)
  std::uint64_t loads_read_ahead = 0;  // FocusRows loads PrefetchRows had begun
  std::uint64_t loads_read_ahead_unsettled = 0;  // of them, begun at a generation without the writer's clocks
  std::uint64_t reads_ahead_dropped = 0;          // PrefetchRows reads finished unused (DropPrefetch)
  std::uint64_t loads_gathered = 0;  // FocusRows loads made of row requests (EnableGather)
};

class ReplicaRefresher {
 public:
  ReplicaRefresher(transport::Transport& transport, const model::ModelLayout& layout, model::ComputeIndex me,
                   std::vector<const transport::RemoteRegion*> published,
                   const std::vector<sync::PublishedGeometry>& geometry, sync::WaitOptions wait);

  // Remembers a batch sent to memory rank m.
  void AddPending(model::MemoryIndex m, std::uint64_t sequence, std::vector<std::byte> batch);
  std::size_t pending_batches() const;
  // Whether a pending batch holds a delta of a row in [first, last) of
  // `table` (FocusRows' precondition). Decodes the pending batches.
  bool PendingNames(model::TableId table, std::int64_t first, std::int64_t last) const;
  // Forgets pending batches that memory rank m's published snapshots include
  // (`included`, from its control block): every generation a later refresh
  // can install includes them too. Keeps pending memory bounded when the
  // rank rarely refreshes (one compute rank never needs to).
  void DropIncluded(model::MemoryIndex m, std::uint64_t included);
  // Moves the memory of batches dropped so far into `out` (for reuse).
  void TakeDropped(std::vector<std::vector<std::byte>>& out);

  // Installs what changed in every snapshot newer than the installed one,
  // plus own pending deltas, into `replica` (which must have no touched
  // rows). Returns the merged clock of the slowest other compute rank over
  // installed snapshots (of the slowest compute rank, this one included,
  // after set_counts_own_clocks(true)). Every row it writes is noted
  // (Replica::NoteWritten): call replica.RebaseWritten() after it.
  Result<std::uint64_t> Refresh(model::Replica& replica);
  const RefreshCounters& counters() const { return counters_; }
  // Whether Refresh's merged clock counts this rank's own clocks (a merge
  // that is not master += delta: runtime/merge_config.h MergesAddDeltas).
  void set_counts_own_clocks(bool counts) { counts_own_clocks_ = counts; }
  // Per table: only this rank writes the rows the replica holds
  // (tables_written_alone.h). Under a merge that adds deltas their records
  // need not be read: with every table so (or the focused one, below), a
  // refresh reads only the metas. Default: none.
  void set_tables_written_alone(std::vector<bool> alone) { written_alone_ = std::move(alone); }
  // Tables whose held rows the caller set to the memory ranks' first
  // generation already (ConsistencyMode::StartsFromInitialValues): the
  // first read leaves them out.
  void set_tables_set_initially(std::vector<std::uint8_t> tables) { set_initially_ = std::move(tables); }

  // Stratified scheduling (locality_plan.h): the kernel reads only rows
  // [first, last) of `table` until the focus moves, so refreshes skip
  // records of the table's other rows (they go stale in the replica, unread).
  // Moving the focus loads the new range's held rows from the latest
  // snapshots first (LoadRows): call it with no pending batch naming a row
  // of the range (PendingNames: every own delta of the range included in a
  // published snapshot), so the loaded values hold all own deltas (I2);
  // batches of other rows may still be on their way (they are replayed
  // where a refresh installs their rows); later refreshes install records
  // since the held generation over them, newer or equal. table < 0: every
  // row (default). `clock`: the clock by which the range's last writer had
  // left it (LocalityPlan::Focus::settled_before; with one stripe a rank,
  // the first clock that reads the range). Strata let other ranks write it
  // only in clocks before that (their earlier sub-epochs) or after this
  // rank's sub-epoch (which the bound does not ask for): once an
  // installed snapshot of memory rank m (or the one FocusRows read) holds
  // `writer_before`'s clocks below `clock` (the range's last writer before
  // it, which waited for its own writer before: ConsistencyMode::FocusRows;
  // -1: every other rank's), the range needs no more of m's records.
  Status FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::uint64_t clock,
                   model::ComputeIndex writer_before, model::Replica& replica);
  bool focused() const { return focus_first_ >= 0; }
  // Starts FocusRows' load of a range ahead of the call that moves the
  // focus there: reads the first metas and issues the rows' gets, which
  // arrive while the kernel runs (a stratified rank's next stripe, resting
  // meanwhile). FocusRows with the same range finishes the read: the second
  // metas and the records published since the first, as a read done at
  // once, so the rows it installs are as fresh as FocusRows' own read
  // (FocusRows' preconditions hold there, not here). Any other read (a
  // refresh, the merged model, another range) first finishes it unused.
  Status PrefetchRows(model::TableId table, std::int64_t first, std::int64_t last);
  // Loads of a range through row requests (sync/row_gather.h): the memory
  // ranks gather the rows of it the replica holds, so the link carries those
  // rows alone, where that is at most half the range's bytes and each reply
  // fits. Rows so loaded are as of the memory rank's master when it
  // answered, so such a load must be answered only once the range's writer
  // is done with it: PrefetchGathered's requests say so and the memory
  // ranks wait (kAwaitsClocks); FocusRows' own load comes after its caller
  // waited for that. `gather` and `replica` outlive this refresher.
  // Default: ranges are read whole.
  void EnableGather(sync::RowGatherClient* gather, const model::Replica* replica) {
    gather_ = gather;
    gather_replica_ = replica;
  }
  // Starts FocusRows' load of a range at once as row requests that each
  // memory rank answers once it has merged `awaits` (the clocks in which
  // the range's last writer wrote it): a stratified rank asks for its next
  // stripe as soon as it knows it, with no polls for the writer
  // (StripeReadAhead; nullopt: answered at once, as PrefetchRows asks).
  // True if begun; false, with nothing begun, where the range is not
  // gathered (PrefetchRows then reads it whole).
  Result<bool> PrefetchGathered(model::TableId table, std::int64_t first, std::int64_t last,
                                std::optional<sync::AwaitedClocks> awaits);
  // Whether FocusRows of the range will finish a PrefetchGathered load
  // and no own delta of the range is pending: each reply then comes only
  // once the range's writer is done on its memory rank, and behind this
  // rank's own earlier batches, so FocusRows' caller needs no wait for
  // either (a control-block round trip per stripe).
  bool GatheredOnceSettled(model::TableId table, std::int64_t first, std::int64_t last) const {
    return prefetching_ && gathering_ && gather_read_.awaits && ReadsRange(gather_read_, table, first, last) &&
           !PendingNames(table, first, last);
  }
  // A gathered prefetch's replies: their gets begin once due
  // (RowGatherClient::ReadAhead), so FocusRows finds the rows in. Call
  // between clocks; no-op without such a prefetch.
  Status ReadGatherAhead();
  // Finishes a started prefetch unused (no-op without one): before the
  // readers read anything else, and before the transport goes.
  Status DropPrefetch();
  // The kernel reads `table` only through FocusRows ranges: the first read
  // leaves its rows out (FocusRows loads each range before it is read).
  void set_focus_table(model::TableId table) { will_focus_ = table; }
  // Whether no row the replica could install can change but by this rank
  // until the focus moves: every memory rank's refresh would read the meta
  // alone (a settled focus, every other table written alone, each shard
  // read once). A stratified clock then needs no refresh and no gate
  // (ssp_mode.cc).
  bool OnlyOwnWritesChangeHeldRows(const model::Replica& replica) const {
    for (std::size_t m = 0; m < readers_.size(); ++m) {
      if (ReadsRecords(m, replica)) return false;
    }
    return true;
  }

  // Reads the latest snapshots of all memory ranks into `model` (no own
  // deltas): the merged model, for evaluation. Blocking.
  Status ReadMergedModel(model::TableSet& model);
  // Rows `rows` of those snapshots (one range per table; an empty span:
  // every row, as ReadMergedModel) into `model`, whose other rows stay as
  // they are: an evaluation part's rows (app_facets.h), each memory rank's
  // run of a range in one get. Blocking.
  Status ReadMergedRows(model::TableSet& model, std::span<const model::RowRange> rows);

 // Dropped batches kept for TakeDropped (their memory is reused, not freed).
  static constexpr std::size_t kKeptDropped = 16;

 private:
  struct Pending {
    std::uint64_t sequence;
    std::vector<std::byte> batch;
  };
  // Writes the rows of shard m's bytes [offset, offset + bytes) that the
  // replica holds, stamping them as installed by this refresh.
  void Install(model::MemoryIndex m, std::size_t offset, std::span<const std::byte> bytes, model::Replica& replica);
  // The table of shard m whose rows hold shard byte `offset`: where its rows
  // begin and end in the shard bytes, its row size, and how an offset maps
  // to a global row without dividing (one lookup per change record read;
  // built once per memory rank).
  struct TableSpan {
    model::TableId table;
    std::size_t first, last, row_bytes;
    int shift = 0;              // row_bytes = odd << shift
    std::uint64_t inverse = 1;  // of odd, mod 2^64: exact division is a multiply
    std::int64_t row_base = 0, row_stride = 1;  // global row = base + local x stride
    // The global row at shard byte `offset` (inside this span).
    std::int64_t GlobalRow(std::size_t offset) const {
      const std::uint64_t bytes = offset - first;
      std::uint64_t local = (bytes >> shift) * inverse;
      if (local * row_bytes != bytes) local = bytes / row_bytes;  // not on a row start (a peer's bad key)
      return row_base + static_cast<std::int64_t>(local) * row_stride;
    }
  };
  const TableSpan* TableAt(model::MemoryIndex m, std::size_t offset) const {
    for (const TableSpan& span : spans_[m.value]) {
      if (offset < span.last) return &span;
    }
    return nullptr;
  }
  // The replica slot of the row at shard byte `offset` of `span`, or -1.
  static std::int64_t SlotAt(const TableSpan& span, std::size_t offset, const model::Replica& replica) {
    return replica.SlotOf(span.table, model::RowId{span.GlobalRow(offset)});
  }
  // Which change records of shard m the replica wants: a one-row record of a
  // row it holds by an id (its replica slot, numbered across tables from
  // first_id_), a record of several rows as it is.
  std::int64_t Pick(model::MemoryIndex m, std::size_t offset, std::size_t bytes, const model::Replica& replica) const;
  // Writes one row into replica slot `slot` and stamps it as installed by this refresh.
  void InstallRow(model::TableId table, std::int64_t slot, std::span<const std::byte> row, model::Replica& replica);
  // Install for one picked row, named by the id Pick gave it (no lookup).
  void InstallPicked(model::MemoryIndex m, std::int64_t id, std::size_t offset, std::span<const std::byte> bytes,
                     model::Replica& replica);
  // Asks for the cache line Pick will read for that record.
  void PrefetchPick(model::MemoryIndex m, std::size_t offset, std::size_t bytes, const model::Replica& replica) const;
  void ReplayPending(model::MemoryIndex m, model::Replica& replica) const;
  // Whether a refresh must read memory rank m's change records: some row it
  // could install may have been changed by another rank since the installed
  // generation (class comment).
  bool ReadsRecords(std::size_t m, const model::Replica& replica) const;
  // Whether a generation with these merged clocks holds every other
  // writer's clocks of the focus before focus_clock_ (FocusRows).
  bool SettlesFocus(std::span<const std::uint64_t> merged_clock) const;
  // The first read of memory rank m: only the rows the replica holds (not
  // those of a table set_focus_table names, outside the focus), as runs of
  // live rows patched to one generation (SnapshotReader::ReadRows). The
  // records from generation 0 would be the whole shard: at --ranks 64:8 a
  // rank holds 1.5% of one table's rows and reads the other through FocusRows.
  Result<const sync::SnapshotMeta*> ReadHeldRows(model::MemoryIndex m, model::Replica& replica);
  // Sizes installed_in_ and numbers the picker ids on first use (the replica's shape is fixed).
  void NumberSlots(const model::Replica& replica);
  // FocusRows' and PrefetchRows' read of a range: per memory rank the span
  // of shard bytes its rows lie in, and where that lands in `buffer`.
  struct RangeRead {
    model::TableId table{0};
    std::int64_t first = -1, last = -1;
    std::vector<std::size_t> begin, end, at;  // [m]
    std::vector<std::byte> buffer;
    std::vector<sync::SnapshotReader*> readers;  // memory ranks with rows of the range
    std::vector<sync::SnapshotReader::RowRead> reads;
    std::vector<std::span<const sync::SnapshotReader::RowRead>> each;  // one read per reader
  };
  void PlanRangeRead(model::TableId table, std::int64_t first, std::int64_t last);
  // Whether `read` (range_read_ or gather_read_) is of rows [first, last) of `table`.
  template <class Read>
  static bool ReadsRange(const Read& read, model::TableId table, std::int64_t first, std::int64_t last) {
    return read.table == table && read.first == first && read.last == last;
  }
  RangeRead range_read_;
  bool prefetching_ = false;  // range_read_ or gather_read_ begun, not finished
  // A load of a range by row requests: per memory rank the keys asked for
  // and the replica slots they fill.
  struct GatherRead {
    model::TableId table{0};
    std::int64_t first = -1, last = -1;
    std::vector<std::vector<std::uint64_t>> keys;    // [m]
    std::vector<std::vector<std::int64_t>> slots;    // [m]
    bool awaits = false;  // answered once the writer is done (PrefetchGathered)
  };
  // Sends the row requests for the held rows of the range (answered once
  // `awaits` holds, if given); false (nothing sent) where reading it whole
  // costs no more or a reply would not fit.
  Result<bool> BeginGather(model::TableId table, std::int64_t first, std::int64_t last,
                           std::optional<sync::AwaitedClocks> awaits);
  Status FinishGather(model::Replica& replica);
  sync::RowGatherClient* gather_ = nullptr;
  const model::Replica* gather_replica_ = nullptr;
  GatherRead gather_read_;
  bool gathering_ = false;  // the prefetch begun is gather_read_

  const model::ModelLayout& layout_;
  model::ComputeIndex me_;
  bool counts_own_clocks_ = false;
  std::vector<std::unique_ptr<sync::SnapshotReader>> readers_;  // [m]
  std::vector<sync::SnapshotMeta> installed_;                   // [m]: generation, log end, merged clocks
  std::vector<std::vector<std::uint64_t>> installed_merged_;    // [m][c]
  std::vector<std::deque<Pending>> pending_;                    // [m], by sequence
  std::vector<std::vector<std::byte>> dropped_;                 // dropped batches' memory, until taken
  std::vector<std::vector<std::uint32_t>> installed_in_;        // [table][replica slot]: refresh that wrote it
  std::vector<std::size_t> first_id_;                           // [table]: picker id of its slot 0
  std::size_t id_count_ = 0;                                    // replica slots over all tables
  std::vector<std::vector<TableSpan>> spans_;                   // [m][table]
  sync::SnapshotReader::PickScratch pick_scratch_;              // shared by readers_ (one at a time)
  std::uint32_t refresh_number_ = 0;
  RefreshCounters counters_;
  std::vector<std::byte> shard_buffer_;  // ReadMergedModel only
  // FocusRows: the focused table and rows (focus_first_ < 0: none).
  model::TableId focus_table_{0};
  std::int64_t focus_first_ = -1;
  std::int64_t focus_last_ = -1;
  std::uint64_t focus_clock_ = 0;    // FocusRows' clock
  model::ComputeIndex focus_writer_{-1};  // FocusRows' writer_before
  std::vector<char> focus_settled_;  // per memory rank: FocusRows read a settled generation
  std::optional<model::TableId> will_focus_;  // set_focus_table
  std::size_t operation_cost_bytes_;  // what one more get costs (the transport's Capabilities)
  std::vector<bool> written_alone_;  // set_tables_written_alone
  std::vector<std::uint8_t> set_initially_;  // set_tables_set_initially
  // Refresh's scratch for the memory ranks it reads only the metas of (in
  // memory-rank order).
  std::vector<sync::SnapshotReader*> meta_only_readers_;
  std::vector<std::uint64_t> meta_only_since_;
  std::vector<const sync::SnapshotMeta*> meta_only_metas_;
  std::vector<std::byte> rows_buffer_;  // live rows read by FocusRows and ReadHeldRows (capacity reused)
};

}  // namespace stalelearn::runtime
