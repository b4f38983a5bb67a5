#include "framework/model/replica.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/target_clones.h"

namespace stalelearn::model {

namespace {

// Where a first touch goes: the log's arrays and its end (kept in a register
// by TouchRows).
struct TouchCursor {
  std::int32_t* touch_of_slot;
  std::int64_t* touched_slots;
  std::uint64_t* touched_bits;
  std::byte* before;
  std::size_t touched;
};

// Logs the first touch of each of `slots` (rows at `rows`) not yet touched
// this clock. Branch-free: whether a row was touched before is as good as
// random (about half of a clock's lookups are first touches), so each row's
// slot and bytes are written at the log's end unconditionally and the ends
// advance only on a first touch; the room for that was reserved up front.
STALELEARN_TARGET_CLONES_AVX2 void TouchRows(const std::int64_t* slots, float* const* rows, std::size_t n,
                                             std::size_t row_bytes, TouchCursor& c) {
  // Locals: the row copies write bytes, which may alias anything in memory.
  std::int32_t* const touch_of_slot = c.touch_of_slot;
  std::int64_t* const touched_slots = c.touched_slots;
  std::uint64_t* const touched_bits = c.touched_bits;
  std::byte* const before = c.before;
  std::size_t touched = c.touched;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t slot = slots[i];
    std::int32_t& mark = touch_of_slot[slot];
    const bool first = mark < 0;
    mark = first ? static_cast<std::int32_t>(touched) : mark;
    touched_slots[touched] = slot;
    touched_bits[static_cast<std::size_t>(slot) / 64] |= std::uint64_t{1} << (slot % 64);
    CopyRow(before + touched * row_bytes, reinterpret_cast<const std::byte*>(rows[i]), row_bytes);
    touched += first ? 1 : 0;
  }
  c.touched = touched;
}

}  // namespace

Replica::Replica(const std::vector<TableSpec>& tables) : Replica(tables, WorkingSet(tables.size())) {}

Replica::Replica(const std::vector<TableSpec>& tables, const WorkingSet& rows) {
  touch_.resize(tables.size());
  dense_base_.resize(tables.size());
  slot_of_row_.resize(tables.size());
  held_.resize(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const TableSpec& spec = tables[t];
    dense_.push_back(spec.dense);
    std::int64_t held = spec.rows;
    if (!spec.dense && t < rows.size() && rows[t]) {
      // A 4-byte index per model row keeps the kernel's lookup one load.
      if (spec.rows > std::numeric_limits<std::int32_t>::max()) {
        throw Error(InvalidArgument(fmt::format("table {} has {} rows: too many for a partial replica", spec.name,
                                                spec.rows)));
      }
      held_[t] = *rows[t];
      held = static_cast<std::int64_t>(held_[t].size());
      slot_of_row_[t].assign(static_cast<std::size_t>(spec.rows), -1);
      for (std::size_t slot = 0; slot < held_[t].size(); ++slot) {
        slot_of_row_[t][static_cast<std::size_t>(held_[t][slot])] = static_cast<std::int32_t>(slot);
      }
    }
    values_.emplace_back(spec.type, held, spec.width);
    dense_touched_.emplace_back(spec.dense ? held : 0);
    dense_written_.emplace_back(spec.dense ? held : 0);
    if (!spec.dense) {
      touch_[t].touch_of_slot.assign(static_cast<std::size_t>(held), -1);
      touch_[t].touched_bits.assign((static_cast<std::size_t>(held) + 63) / 64, 0);
    }
  }
  Rebase();
}

std::size_t Replica::value_bytes() const {
  std::size_t n = 0;
  for (const RowBlock& b : values_) n += b.size_bytes();
  return n;
}

void Replica::Rebase() {
  for (std::size_t t = 0; t < values_.size(); ++t) {
    if (!dense_[t]) continue;
    const std::span<const std::byte> bytes = std::as_const(values_[t]).bytes();
    dense_base_[t].assign(bytes.begin(), bytes.end());
    dense_touched_[t].Clear();
    dense_written_[t].Clear();
  }
}

void Replica::RebaseWritten() {
  for (std::size_t t = 0; t < values_.size(); ++t) {
    if (!dense_[t]) continue;
    const RowBlock& block = values_[t];
    const std::size_t row_bytes = block.row_bytes();
    dense_written_[t].TakeEachMarked([&](std::int64_t row) {
      std::memcpy(dense_base_[t].data() + static_cast<std::size_t>(row) * row_bytes, block.RowBytes(row), row_bytes);
    });
  }
}

void Replica::CopyHeldRowsTo(TableSet& full) const {
  for (std::size_t t = 0; t < values_.size(); ++t) {
    const RowBlock& block = values_[t];
    const TableId id{static_cast<std::uint32_t>(t)};
    for (std::int64_t slot = 0; slot < block.rows(); ++slot) {
      std::memcpy(full[t].RowBytes(RowOfSlot(id, slot)), block.RowBytes(slot), block.row_bytes());
    }
  }
}

void Replica::ThrowOutsideWorkingSet(TableId table, RowId row) {
  throw Error(FailedPrecondition(fmt::format("the kernel touched row {} of table {}, which this rank's samples do "
                                             "not name (App::RowsOf): outside its working set",
                                             row.value, table.value)));
}

void Replica::TouchLog::Grow(std::size_t rows, std::size_t row_bytes) {
  // resize() zero-fills what it adds: grow geometrically, so a warm log never does.
  slots.resize(std::max({touched + rows, 2 * slots.size(), std::size_t{256}}));
  before.resize(std::max({(touched + rows) * row_bytes, 2 * before.size(), std::size_t{16384}}));
}

std::span<float> Replica::FloatRow(TableId table, RowId row) {
  const std::int64_t slot = CheckedSlot(table, row);
  Touch(table, slot);
  return values_[table.value].FloatRow(slot);
}

std::span<std::int32_t> Replica::IntRow(TableId table, RowId row) {
  const std::int64_t slot = CheckedSlot(table, row);
  Touch(table, slot);
  return values_[table.value].IntRow(slot);
}

void Replica::FloatRows(TableId table, std::span<const RowId> rows, float** out) {
  RowBlock& block = values_[table.value];
  assert(block.type() == ElementType::kFloat32);
  const std::size_t row_bytes = block.row_bytes();
  const auto width = static_cast<std::ptrdiff_t>(block.width());
  float* const base = reinterpret_cast<float*>(block.bytes().data());
  const std::vector<std::int32_t>& index = slot_of_row_[table.value];
  const bool whole = index.empty();
  if (dense_[table.value]) {  // no touch log: a bit per row
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::int64_t slot = whole ? rows[i].value : CheckedSlot(table, rows[i]);
      dense_touched_[table.value].Mark(slot);
      out[i] = base + slot * width;
    }
    return;
  }
  TouchLog& log = touch_[table.value];
  std::int32_t* const touch_of_slot = log.touch_of_slot.data();
  // Room for every row of the call up front (TouchRows writes each row at
  // the log's end before it knows whether the row is new).
  log.Reserve(rows.size(), row_bytes);
  TouchCursor cursor{touch_of_slot, log.slots.data(), log.touched_bits.data(), log.before.data(), log.touched};
  // Two passes per chunk: the first finds every row and asks for its cache
  // lines, so the rows' misses overlap instead of stalling the touch loop
  // one by one.
  constexpr std::size_t kChunk = 64;
  std::int64_t slots[kChunk];
  for (std::size_t start = 0; start < rows.size(); start += kChunk) {
    const std::size_t n = std::min(kChunk, rows.size() - start);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t slot = whole ? rows[start + i].value : CheckedSlot(table, rows[start + i]);
      float* row = base + slot * width;
      __builtin_prefetch(row);
      __builtin_prefetch(reinterpret_cast<const std::byte*>(row) + row_bytes - 1);
      __builtin_prefetch(touch_of_slot + slot);
      slots[i] = slot;
      out[start + i] = row;
    }
    TouchRows(slots, out + start, n, row_bytes, cursor);
  }
  log.touched = cursor.touched;
}

std::size_t Replica::touched_rows() const {
  std::size_t n = 0;
  for (const TouchLog& log : touch_) n += log.touched;
  return n;
}

namespace {

// Adapts a DeltaSink: each delta goes through a scratch row as wide as the
// widest table, and the sink sees the row's own bytes.
class SinkWriter final {
 public:
  SinkWriter(const Replica::DeltaSink& sink, const TableSet& tables, std::vector<std::byte>& scratch)
      : sink_(sink), tables_(tables), scratch_(scratch) {
    std::size_t widest = 0;
    for (const RowBlock& block : tables) widest = std::max(widest, block.row_bytes());
    scratch_.resize(widest);
  }
  std::byte* BeginRow(TableId table, RowId row) {
    table_ = table;
    row_ = row;
    return scratch_.data();
  }
  void EndRow(bool changed) {
    if (changed) sink_(table_, row_, std::span(scratch_).first(tables_[table_.value].row_bytes()));
  }

 private:
  const Replica::DeltaSink& sink_;
  const TableSet& tables_;
  std::vector<std::byte>& scratch_;
  TableId table_{0};
  RowId row_{0};
};

}  // namespace

void Replica::DrainDeltas(const DeltaSink& sink) {
  SinkWriter writer(sink, values_, delta_);
  DrainDeltasInto(writer);
}

}  // namespace stalelearn::model
