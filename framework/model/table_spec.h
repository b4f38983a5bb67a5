// Tables of a model: named, fixed-width rows of float32 or int32 elements.
// An app declares its tables once (framework/runtime/app.h); every rank builds
// the same list in the same order, so a TableId means the same table on every
// rank. Value types; thread-safe as values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::model {

enum class ElementType : std::uint8_t { kFloat32 = 1, kInt32 = 2 };

// Both element types are 4 bytes wide: rows travel as raw bytes.
inline constexpr std::size_t kElementBytes = 4;

// Index of a table in the app's table list.
struct TableId {
  std::uint32_t value = 0;
  friend bool operator==(TableId, TableId) = default;
  friend auto operator<=>(TableId, TableId) = default;
};

// A row of a table, by its global index 0..rows-1.
struct RowId {
  std::int64_t value = 0;
  friend bool operator==(RowId, RowId) = default;
  friend auto operator<=>(RowId, RowId) = default;
};

struct TableSpec {
  std::string name;
  ElementType type = ElementType::kFloat32;
  std::int64_t rows = 0;
  std::int32_t width = 0;  // elements per row
  // Every row changes every clock (e.g. a network's weight matrix): the
  // replica keeps one copy of the table to diff against instead of a per-row
  // touch log, and DIRECT mode always fetches the table whole.
  bool dense = false;

  std::size_t row_bytes() const { return static_cast<std::size_t>(width) * kElementBytes; }
};

// kInvalidArgument naming the table unless every table has a unique non-empty
// name, rows >= 1 and width >= 1.
Status ValidateTables(const std::vector<TableSpec>& tables);

}  // namespace stalelearn::model
