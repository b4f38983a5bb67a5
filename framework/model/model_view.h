// What an app's per-sample update kernel sees of the model (the compute
// rank's replica, or in DIRECT mode the rows fetched for the mini-batch).
// Part of the public app API (framework/runtime/app.h).
//
// Not thread-safe: one kernel call at a time per view. Returned spans stay
// valid until the runtime's next step (end of the clock or mini-batch).
#pragma once

#include <cstdint>
#include <span>

#include "framework/model/table_spec.h"

namespace stalelearn::model {

class ModelView {
 public:
  virtual ~ModelView() = default;
  // Row `row` of a float32 (int32) table, readable and writable. The row is
  // recorded as touched: what the kernel changes is sent as a delta.
  virtual std::span<float> FloatRow(TableId table, RowId row) = 0;
  virtual std::span<std::int32_t> IntRow(TableId table, RowId row) = 0;
};

}  // namespace stalelearn::model
