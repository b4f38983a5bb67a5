// What an app's per-sample update kernel sees of the model (the compute
// rank's replica, or in DIRECT mode the rows fetched for the mini-batch).
// Part of the public app API (framework/runtime/app.h). Apps use the typed
// forms, Row(handle, row) and Rows(handle, rows, out) (table_handle.h): inline
// forwards to the virtual FloatRow/IntRow/FloatRows, so a typed access costs
// exactly the one virtual call it always did.
//
// Not thread-safe: one kernel call at a time per view. Returned spans stay
// valid until the runtime's next step (end of the clock or mini-batch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "framework/model/table_handle.h"
#include "framework/model/table_spec.h"

namespace stalelearn::model {

class ModelView {
 public:
  virtual ~ModelView() = default;
  // Row `row` of a float32 (int32) table, readable and writable. The row is
  // recorded as touched: what the kernel changes is sent as a delta.
  virtual std::span<float> FloatRow(TableId table, RowId row) = 0;
  virtual std::span<std::int32_t> IntRow(TableId table, RowId row) = 0;

  // out[i] = FloatRow(table, rows[i]).data() for every i: a hot kernel asks
  // for the rows of a block of samples in one virtual call instead of one per
  // row. Touches each row as FloatRow does, in order; the pointers stay valid
  // as FloatRow's spans do. Views override it with a loop the compiler can
  // inline (framework/model/replica.h); this default calls FloatRow.
  virtual void FloatRows(TableId table, std::span<const RowId> rows, float** out) {
    for (std::size_t i = 0; i < rows.size(); ++i) out[i] = FloatRow(table, rows[i]).data();
  }

  // Row `row` for reading only: not recorded as touched, so a row a kernel
  // only reads is neither copied at first touch nor diffed at the drain (a
  // kernel that reads a whole dense matrix and writes a few of its rows).
  // To write a row, ask for it with FloatRow/IntRow. The default touches.
  virtual std::span<const float> ReadFloatRow(TableId table, RowId row) { return FloatRow(table, row); }
  virtual std::span<const std::int32_t> ReadIntRow(TableId table, RowId row) { return IntRow(table, row); }

  // Typed forms (not virtual): Row(users_, row) is a std::span<float> for a
  // FloatTable and a std::span<std::int32_t> for an IntTable.
  std::span<float> Row(FloatTable table, RowId row) { return FloatRow(table.id, row); }
  std::span<std::int32_t> Row(IntTable table, RowId row) { return IntRow(table.id, row); }
  void Rows(FloatTable table, std::span<const RowId> rows, float** out) { FloatRows(table.id, rows, out); }
  std::span<const float> ReadRow(FloatTable table, RowId row) { return ReadFloatRow(table.id, row); }
  std::span<const std::int32_t> ReadRow(IntTable table, RowId row) { return ReadIntRow(table.id, row); }
};

}  // namespace stalelearn::model
