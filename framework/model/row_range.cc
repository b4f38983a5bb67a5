#include "framework/model/row_range.h"

#include <algorithm>
#include <cassert>

namespace stalelearn::model {

RowRange PartOfRows(std::int64_t rows, int part, int parts) {
  assert(parts > 0 && part >= 0 && part < parts && rows >= 0);
  const std::int64_t base = rows / parts, extra = rows % parts;
  const std::int64_t first = part * base + std::min<std::int64_t>(part, extra);
  return {first, first + base + (part < extra ? 1 : 0)};
}

std::vector<RowRange> RowsOfPart(const TableSet& tables, int part, int parts) {
  std::vector<RowRange> ranges;
  ranges.reserve(tables.size());
  for (const RowBlock& block : tables) ranges.push_back(PartOfRows(block.rows(), part, parts));
  return ranges;
}

}  // namespace stalelearn::model
