// A compute rank's copy of every table. Kernels read and write it through
// ModelView; the first touch of a row in a clock saves the row's value, so the
// clock's delta is (value now - value at first touch) for touched rows only.
// Dense tables (TableSpec::dense) skip the touch log: their delta is (value
// now - the copy taken at the last Rebase or drain), row by row.
//
//   Replica replica(tables);
//   kernel(sample, replica);                      // touches rows
//   replica.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte> d) {
//     encoder.Add(t, r, d);                       // one call per changed row
//   });                                           // touched set is now empty
//
// Not thread-safe (one trainer thread per replica).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "framework/model/model_view.h"
#include "framework/model/row_block.h"

namespace stalelearn::model {

class Replica final : public ModelView {
 public:
  explicit Replica(const std::vector<TableSpec>& tables);

  std::span<float> FloatRow(TableId table, RowId row) override;
  std::span<std::int32_t> IntRow(TableId table, RowId row) override;

  // The values, for refresh (installing a snapshot), evaluation and dense
  // baselines. Writing through mutable_tables() bypasses touch tracking, so it
  // is only allowed while no row is touched (asserted by the callers' order),
  // and must be followed by Rebase() (dense tables diff against their copy).
  const TableSet& tables() const { return values_; }
  TableSet& mutable_tables() { return values_; }
  // The current values of dense tables become what their deltas are taken against.
  void Rebase();

  std::size_t touched_rows() const;

  using DeltaSink = std::function<void(TableId, RowId, std::span<const std::byte>)>;
  // Calls `sink` for every touched row whose value changed, table by table in
  // first-touch order, then forgets the touched set.
  void DrainDeltas(const DeltaSink& sink);

 private:
  void Touch(TableId table, RowId row);

  struct TouchLog {
    std::vector<std::int32_t> slot_of_row;  // -1 = untouched this clock
    std::vector<std::int64_t> rows;         // touched rows, first-touch order
    std::vector<std::byte> before;          // their values at first touch
  };
  TableSet values_;
  std::vector<TouchLog> touch_;           // [table]; empty for dense tables
  std::vector<bool> dense_;               // [table]
  std::vector<std::vector<std::byte>> dense_base_;  // [table]: values at the last rebase
};

}  // namespace stalelearn::model
