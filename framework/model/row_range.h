// Row ranges of a model's tables: the part of each table a rank takes when
// the ranks split a model evenly (an evaluation in parts, its checksum:
// model_checksum.h), and the rows a model read names (ModelRows).
// Plain values and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/model/row_block.h"

namespace stalelearn::model {

// Rows first..last-1 of a table.
struct RowRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t size() const { return last - first; }
  bool operator==(const RowRange&) const = default;
};

// Part `part` of `parts` of rows 0..rows-1: contiguous, in part order, the
// first rows % parts parts one row longer.
RowRange PartOfRows(std::int64_t rows, int part, int parts);
// That part of every table of `tables`.
std::vector<RowRange> RowsOfPart(const TableSet& tables, int part, int parts);

// Rows of a model to read: one range per table, or an empty span: every row.
using ModelRows = std::span<const RowRange>;

}  // namespace stalelearn::model
