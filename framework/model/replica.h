// A compute rank's copy of the tables it works on: every row of a table, or
// only the rows of its working set (the rows its samples touch, found at
// start from App::RowsOf), so its memory follows its data, not the model.
// Kernels read and write it through ModelView by global row; the first touch
// of a row in a clock saves the row's value, so the clock's delta is (value
// now - value at first touch) for touched rows only. Dense tables
// (TableSpec::dense) are held whole and skip the touch log: their delta is
// (value now - the copy taken at the last Rebase or drain), row by row.
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

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "framework/model/model_view.h"
#include "framework/model/row_block.h"

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

  // Where global row `row` lives in tables()[table] (its slot), or -1 when
  // the replica does not hold it.
  std::int64_t SlotOf(TableId table, RowId row) const {
    const std::vector<std::int32_t>& index = slot_of_row_[table.value];
    return index.empty() ? row.value : index[static_cast<std::size_t>(row.value)];
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
  // Copies the held rows into a full-size table set (tests, hooks); rows not
  // held are left as they are.
  void CopyHeldRowsTo(TableSet& full) const;

  std::size_t touched_rows() const;

  using DeltaSink = std::function<void(TableId, RowId, std::span<const std::byte>)>;
  // Calls `sink` for every touched row whose value changed, table by table in
  // first-touch order, then forgets the touched set.
  void DrainDeltas(const DeltaSink& sink);

  // Where DrainDeltasInto writes each touched row's delta: BeginRow returns
  // room for the row's bytes, EndRow(changed) keeps or drops it (an
  // unchanged row is dropped). Lets an encoder take deltas without a copy.
  class DeltaWriter {
   public:
    virtual std::byte* BeginRow(TableId table, RowId row) = 0;
    virtual void EndRow(bool changed) = 0;

   protected:
    ~DeltaWriter() = default;
  };
  // DrainDeltas, writing in place through `writer`.
  void DrainDeltasInto(DeltaWriter& writer);

  // SlotOf, or a stalelearn::Error naming the row when the replica does not hold it.
  std::int64_t CheckedSlot(TableId table, RowId row) const;

 private:
  void Touch(TableId table, std::int64_t slot);

  struct TouchLog {
    std::vector<std::int32_t> touch_of_slot;  // -1 = untouched this clock
    std::vector<std::int64_t> slots;          // touched slots, first-touch order
    std::vector<std::byte> before;            // their values at first touch
  };
  TableSet values_;                                 // [table] by slot
  std::vector<std::vector<std::int32_t>> slot_of_row_;  // [table][global row]; empty: whole table
  std::vector<std::vector<std::int64_t>> held_;         // [table][slot]: global row; empty: whole
  std::vector<TouchLog> touch_;                     // [table]; empty for dense tables
  std::vector<bool> dense_;                         // [table]
  std::vector<std::vector<std::byte>> dense_base_;  // [table]: values at the last rebase
  std::vector<std::byte> delta_;                    // DrainDeltas' scratch
};

}  // namespace stalelearn::model
