// A compute rank's copy of the tables it works on: every row of a table, or
// only the rows of its working set (the rows its samples touch, found at
// start from App::RowsOf), so its memory follows its data, not the model.
// Kernels read and write it through ModelView by global row; the first touch
// of a row in a clock saves the row's value, so the clock's delta is (value
// now - value at first touch) for touched rows only. Dense tables
// (TableSpec::dense) are held whole and skip the touch log: a touch sets the
// row's bit, and the delta of each such row is (value now - the table's copy
// as of the last Rebase or drain), so a clock's drain costs what it touched,
// not the table. Rows read through ReadFloatRow/ReadIntRow are not touched.
//
//   Replica replica(tables, working_set);          // or Replica(tables): all rows
//   kernel(sample, replica);                      // touches rows
//   replica.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte> d) {
//     encoder.Add(t, r, d);                       // one call per changed row
//   });                                           // touched set is now empty
//
// A kernel touching a row outside the working set is an app error (its
// RowsOf did not name the row): FloatRow/IntRow throw stalelearn::Error.
// Not thread-safe (one trainer thread per replica).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "framework/model/model_view.h"
#include "framework/model/row_block.h"
#include "framework/model/row_marks.h"

namespace stalelearn::model {

// Rows a replica holds, per table: nullopt holds the whole table; else the
// distinct global rows in increasing order.
using WorkingSet = std::vector<std::optional<std::vector<std::int64_t>>>;

class Replica final : public ModelView {
 public:
  explicit Replica(const std::vector<TableSpec>& tables);
  Replica(const std::vector<TableSpec>& tables, const WorkingSet& rows);

  std::span<float> FloatRow(TableId table, RowId row) override;
  std::span<std::int32_t> IntRow(TableId table, RowId row) override;
  // One call per block of rows: the lookup and first-touch copy inline.
  void FloatRows(TableId table, std::span<const RowId> rows, float** out) override;
  // Reads without touching (no first-touch copy, no delta).
  std::span<const float> ReadFloatRow(TableId table, RowId row) override {
    return std::as_const(values_[table.value]).FloatRow(CheckedSlot(table, row));
  }
  std::span<const std::int32_t> ReadIntRow(TableId table, RowId row) override {
    return std::as_const(values_[table.value]).IntRow(CheckedSlot(table, row));
  }

  // Where global row `row` lives in tables()[table] (its slot), or -1 when
  // the replica does not hold it.
  std::int64_t SlotOf(TableId table, RowId row) const {
    const std::vector<std::int32_t>& index = slot_of_row_[table.value];
    return index.empty() ? row.value : index[static_cast<std::size_t>(row.value)];
  }
  // Asks for the cache line SlotOf(table, row) will read (a caller about to
  // look up many scattered rows overlaps their misses).
  void PrefetchSlotOf(TableId table, RowId row) const {
    const std::vector<std::int32_t>& index = slot_of_row_[table.value];
    if (!index.empty()) __builtin_prefetch(index.data() + row.value);
  }
  bool whole(TableId table) const { return slot_of_row_[table.value].empty(); }
  // The global row in slot `slot`.
  std::int64_t RowOfSlot(TableId table, std::int64_t slot) const {
    return whole(table) ? slot : held_[table.value][static_cast<std::size_t>(slot)];
  }
  std::size_t value_bytes() const;  // bytes of the values held

  // The values by slot (= by row for whole tables), for refresh (installing
  // snapshot rows), evaluation and dense baselines. Writing through
  // mutable_tables() bypasses touch tracking, so it is only allowed while no
  // row is touched (asserted by the callers' order), and must be followed by
  // Rebase() (dense tables diff against their copy).
  const TableSet& tables() const { return values_; }
  TableSet& mutable_tables() { return values_; }
  // The current values of dense tables become what their deltas are taken against.
  void Rebase();
  // Rebase for the dense rows written through mutable_tables() and named by
  // NoteWritten since the last rebase only (a refresh installs the rows that
  // changed: copying the whole table after each was a per-clock cost that
  // followed the model, not the changes). The other rows must equal their
  // copy already (no touched rows: drained, or never written).
  void NoteWritten(TableId table, std::int64_t slot) {
    if (dense_[table.value]) dense_written_[table.value].Mark(slot);
  }
  void RebaseWritten();
  // Copies the held rows into a full-size table set (tests, hooks); rows not
  // held are left as they are.
  void CopyHeldRowsTo(TableSet& full) const;

  std::size_t touched_rows() const;

  using DeltaSink = std::function<void(TableId, RowId, std::span<const std::byte>)>;
  // Calls `sink` for every touched row whose value changed, table by table,
  // rows in increasing order, then forgets the touched set.
  void DrainDeltas(const DeltaSink& sink);

  // DrainDeltas, writing each delta in place through `writer` (no copy):
  // `std::byte* writer.BeginRow(TableId, RowId)` returns room for the row's
  // bytes, `writer.EndRow(bool changed)` keeps or drops it (an unchanged row
  // is dropped). A template, so a final writer's calls inline: this runs once
  // per changed row of every clock (runtime/delta_pusher.h is the writer).
  // `keep[t]`: table t is not drained; its touched rows and their deltas
  // stay for a later drain (a table only this rank writes, whose deltas
  // no other rank waits for: runtime/modes/ssp_mode.cc). Empty: drain all.
  // `values`: each changed row's room gets the row's value instead of its
  // delta (sync::kRowValues: the sender is the row's one writer).
  template <class Writer>
  void DrainDeltasInto(Writer& writer, std::span<const std::uint8_t> keep = {}, bool values = false);
  // Whether `slot` of `table` holds a delta not yet drained (always false
  // for dense tables, which callers never keep). Installing a value there
  // would lose that delta (runtime/replica_refresher.cc InstallRow).
  bool Undrained(TableId table, std::int64_t slot) const {
    const TouchLog& log = touch_[table.value];
    return !log.touch_of_slot.empty() && log.touch_of_slot[static_cast<std::size_t>(slot)] >= 0;
  }

  // SlotOf, or a stalelearn::Error naming the row when the replica does not hold it.
  std::int64_t CheckedSlot(TableId table, RowId row) const {
    const std::int64_t slot = SlotOf(table, row);
    if (slot < 0) [[unlikely]] ThrowOutsideWorkingSet(table, row);
    return slot;
  }

 private:
  struct TouchLog {
    std::vector<std::int32_t> touch_of_slot;  // -1 = untouched this clock
    std::vector<std::uint64_t> touched_bits;  // one bit per slot: touched this clock
    // Touched slots in first-touch order (slots[0, touched)) and their values
    // at first touch (the i-th at before[i * row_bytes]). Both vectors are
    // capacity kept across clocks: no allocation or zeroing once warm, and
    // the first-touch loop keeps its end in a register.
    std::vector<std::int64_t> slots;
    std::size_t touched = 0;
    std::vector<std::byte> before;
    // Makes room for `rows` more first touches of `row_bytes` each.
    void Reserve(std::size_t rows, std::size_t row_bytes) {
      if (touched + rows > slots.size() || (touched + rows) * row_bytes > before.size()) [[unlikely]] {
        Grow(rows, row_bytes);
      }
    }
    void Grow(std::size_t rows, std::size_t row_bytes);
  };

  // Drain sorts the touched slots when they are fewer than one per this
  // many words of touched bits (sorting them then costs less than the scan).
  static constexpr std::size_t kSortBelowOnePer = 128;
  // How many touched rows ahead the drain asks for a row's cache lines.
  static constexpr std::size_t kDrainAhead = 8;
  // Tables from this size on prefetch in the drain (about a core's L2).
  static constexpr std::size_t kDrainPrefetchBytes = std::size_t{2} << 20;

  [[noreturn]] static void ThrowOutsideWorkingSet(TableId table, RowId row);
  // Records the first touch of `slot` in this clock: its index in the log
  // and its value now (what the clock's delta is taken against).
  static void FirstTouch(TouchLog& log, std::int32_t& touched, std::int64_t slot, const std::byte* bytes,
                         std::size_t row_bytes) {
    log.Reserve(1, row_bytes);
    touched = static_cast<std::int32_t>(log.touched);
    CopyRow(log.before.data() + log.touched * row_bytes, bytes, row_bytes);
    log.slots[log.touched++] = slot;
    log.touched_bits[static_cast<std::size_t>(slot) / 64] |= std::uint64_t{1} << (slot % 64);
  }
  void Touch(TableId table, std::int64_t slot) {
    if (dense_[table.value]) {
      dense_touched_[table.value].Mark(slot);
      return;
    }
    TouchLog& log = touch_[table.value];
    std::int32_t& touched = log.touch_of_slot[static_cast<std::size_t>(slot)];
    if (touched >= 0) return;
    const RowBlock& block = values_[table.value];
    FirstTouch(log, touched, slot, block.RowBytes(slot), block.row_bytes());
  }

  TableSet values_;                                 // [table] by slot
  std::vector<std::vector<std::int32_t>> slot_of_row_;  // [table][global row]; empty: whole table
  std::vector<std::vector<std::int64_t>> held_;         // [table][slot]: global row; empty: whole
  std::vector<TouchLog> touch_;                     // [table]; empty for dense tables
  std::vector<std::uint8_t> dense_;                 // [table]: 1 = dense
  std::vector<std::vector<std::byte>> dense_base_;  // [table]: values at the last rebase or drain
  std::vector<RowMarks> dense_touched_;             // [table]: rows touched since the last drain
  std::vector<RowMarks> dense_written_;             // [table]: rows noted since the last rebase
  std::vector<std::byte> delta_;                    // DrainDeltas' scratch
};

// ---- implementation ----
template <class Writer>
void Replica::DrainDeltasInto(Writer& writer, std::span<const std::uint8_t> keep, bool values) {
  for (std::size_t t = 0; t < touch_.size(); ++t) {
    if (t < keep.size() && keep[t]) continue;
    TouchLog& log = touch_[t];
    const RowBlock& block = values_[t];
    const TableId id{static_cast<std::uint32_t>(t)};
    const std::size_t row_bytes = block.row_bytes();
    if (dense_[t]) {  // the touched rows, in increasing order
      std::byte* const base = dense_base_[t].data();
      dense_touched_[t].TakeEachMarked([&](std::int64_t row) {
        std::byte* before = base + static_cast<std::size_t>(row) * row_bytes;
        std::byte* out = writer.BeginRow(id, RowId{row});
        const bool changed = block.Difference(row, before, out);
        if (values) CopyRow(out, block.RowBytes(row), row_bytes);
        writer.EndRow(changed);
        std::memcpy(before, block.RowBytes(row), row_bytes);
      });
      continue;
    }
    // Rows go out in increasing slot (= global row) order: the memory rank
    // then walks its shard forwards, and checks a batch's rows are distinct
    // by comparing neighbours. Few rows of a large table are sorted; more
    // are found by scanning the touched bits.
    std::uint64_t* const bits = log.touched_bits.data();
    const std::size_t words = log.touched_bits.size();
    const auto slots = std::span(log.slots).first(log.touched);
    if (slots.size() * kSortBelowOnePer < words) {
      std::sort(slots.begin(), slots.end());
      for (const std::int64_t slot : slots) bits[static_cast<std::size_t>(slot) / 64] = 0;
    } else if (!slots.empty()) {
      std::size_t n = 0;  // the scan rewrites the slots in increasing order
      for (std::size_t w = 0; w < words; ++w) {
        std::uint64_t word = bits[w];
        if (word == 0) continue;
        bits[w] = 0;
        for (; word != 0; word &= word - 1) slots[n++] = static_cast<std::int64_t>(w * 64 + std::countr_zero(word));
      }
    }
    // The touched rows of a large replica are scattered misses (the row, its
    // log index, its global row, its first-touch value): each is asked for
    // some rows ahead, the value once the log index has arrived.
    // (A replica that fits the caches gains nothing from it and pays the
    // extra loads: only larger ones prefetch.)
    const std::int64_t* const row_of_slot = held_[t].empty() ? nullptr : held_[t].data();
    const std::byte* const now = block.bytes().data();
    const std::size_t ahead_end = block.size_bytes() >= kDrainPrefetchBytes ? slots.size() : 0;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (i + kDrainAhead < ahead_end) {
        const auto ahead = static_cast<std::size_t>(slots[i + kDrainAhead]);
        __builtin_prefetch(now + ahead * row_bytes);
        __builtin_prefetch(now + ahead * row_bytes + row_bytes - 1);
        __builtin_prefetch(log.touch_of_slot.data() + ahead);
        if (row_of_slot != nullptr) __builtin_prefetch(row_of_slot + ahead);
      }
      if (i + kDrainAhead / 2 < ahead_end) {
        const auto index = static_cast<std::size_t>(log.touch_of_slot[static_cast<std::size_t>(slots[i + kDrainAhead / 2])]);
        __builtin_prefetch(log.before.data() + index * row_bytes);
        __builtin_prefetch(log.before.data() + index * row_bytes + row_bytes - 1);
      }
      const std::int64_t slot = slots[i];
      std::int32_t& touched = log.touch_of_slot[static_cast<std::size_t>(slot)];
      const std::byte* before = log.before.data() + static_cast<std::size_t>(touched) * row_bytes;
      std::byte* out = writer.BeginRow(id, RowId{row_of_slot != nullptr ? row_of_slot[slot] : slot});
      const bool changed = block.Difference(slot, before, out);
      if (values) CopyRow(out, now + static_cast<std::size_t>(slot) * row_bytes, row_bytes);
      writer.EndRow(changed);
      touched = -1;
    }
    log.touched = 0;  // keeps the capacity: no allocation or zeroing in the next clock
  }
}

}  // namespace stalelearn::model
