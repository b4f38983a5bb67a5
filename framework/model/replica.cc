#include "framework/model/replica.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace stalelearn::model {

Replica::Replica(const std::vector<TableSpec>& tables) : values_(MakeTableSet(tables)) {
  touch_.resize(tables.size());
  dense_base_.resize(tables.size());
  for (std::size_t t = 0; t < tables.size(); ++t) {
    dense_.push_back(tables[t].dense);
    if (!tables[t].dense) touch_[t].slot_of_row.assign(static_cast<std::size_t>(tables[t].rows), -1);
  }
  Rebase();
}

void Replica::Rebase() {
  for (std::size_t t = 0; t < values_.size(); ++t) {
    if (!dense_[t]) continue;
    const std::span<const std::byte> bytes = std::as_const(values_[t]).bytes();
    dense_base_[t].assign(bytes.begin(), bytes.end());
  }
}

void Replica::Touch(TableId table, RowId row) {
  if (dense_[table.value]) return;
  TouchLog& log = touch_[table.value];
  std::int32_t& slot = log.slot_of_row[static_cast<std::size_t>(row.value)];
  if (slot >= 0) return;
  slot = static_cast<std::int32_t>(log.rows.size());
  log.rows.push_back(row.value);
  const RowBlock& block = values_[table.value];
  const std::byte* bytes = block.RowBytes(row.value);
  log.before.insert(log.before.end(), bytes, bytes + block.row_bytes());
}

std::span<float> Replica::FloatRow(TableId table, RowId row) {
  Touch(table, row);
  return values_[table.value].FloatRow(row.value);
}

std::span<std::int32_t> Replica::IntRow(TableId table, RowId row) {
  Touch(table, row);
  return values_[table.value].IntRow(row.value);
}

std::size_t Replica::touched_rows() const {
  std::size_t n = 0;
  for (const TouchLog& log : touch_) n += log.rows.size();
  return n;
}

void Replica::DrainDeltas(const DeltaSink& sink) {
  std::vector<std::byte> delta;
  for (std::size_t t = 0; t < touch_.size(); ++t) {
    TouchLog& log = touch_[t];
    const RowBlock& block = values_[t];
    delta.resize(block.row_bytes());
    if (dense_[t]) {
      std::vector<std::byte>& base = dense_base_[t];
      for (std::int64_t row = 0; row < block.rows(); ++row) {
        std::byte* before = base.data() + static_cast<std::size_t>(row) * block.row_bytes();
        if (block.Difference(row, before, delta.data())) sink(TableId{static_cast<std::uint32_t>(t)}, RowId{row}, delta);
      }
      const std::span<const std::byte> now = block.bytes();
      std::copy(now.begin(), now.end(), base.begin());
      continue;
    }
    for (std::size_t i = 0; i < log.rows.size(); ++i) {
      const std::int64_t row = log.rows[i];
      if (block.Difference(row, log.before.data() + i * block.row_bytes(), delta.data())) {
        sink(TableId{static_cast<std::uint32_t>(t)}, RowId{row}, delta);
      }
      log.slot_of_row[static_cast<std::size_t>(row)] = -1;
    }
    log.rows.clear();
    log.before.clear();
  }
}

}  // namespace stalelearn::model
