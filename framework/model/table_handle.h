// Typed table handles: a TableId together with its element type, so an app
// writes model.Row(users_, row) and gets a std::span<float> (or, for an int
// table, a std::span<std::int32_t>) without naming the type twice or a bare
// TableId{0}. An app gets its handles from its table declarations:
//
//   model::TableList tables_;                 // member, filled in the constructor
//   model::FloatTable users_ = tables_.AddFloat("user", users, k + 1);
//   std::vector<TableSpec> Tables() const override { return tables_.specs(); }
//
// Reading a full model (an evaluation's TableSet) goes through model::Row.
// Handles and RowValues are small values; a TableList is built once (in the
// app's constructor) and only read afterwards, so concurrent reads are safe.
// Spans returned by Row live as long as the TableSet they come from.
#pragma once

#include <cassert>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/model/row_block.h"
#include "framework/model/table_spec.h"

namespace stalelearn::model {

// The element type a C++ type stands for (float: kFloat32, std::int32_t: kInt32).
template <class T>
inline constexpr ElementType kElementTypeOf =
    std::is_same_v<T, float> ? ElementType::kFloat32 : ElementType::kInt32;

template <class T>
concept TableElement = std::is_same_v<T, float> || std::is_same_v<T, std::int32_t>;

// A table of elements T: where it sits in the app's table list.
template <TableElement T>
struct TableHandle {
  using Element = T;
  TableId id;
  friend bool operator==(TableHandle, TableHandle) = default;
};

using FloatTable = TableHandle<float>;
using IntTable = TableHandle<std::int32_t>;

// An app's table list under construction; each Add returns the new table's
// handle (its index in the list, which every rank builds in the same order).
class TableList {
 public:
  FloatTable AddFloat(std::string name, std::int64_t rows, std::int32_t width, bool dense = false) {
    return Add<float>(std::move(name), rows, width, dense);
  }
  IntTable AddInt(std::string name, std::int64_t rows, std::int32_t width, bool dense = false) {
    return Add<std::int32_t>(std::move(name), rows, width, dense);
  }
  template <TableElement T>
  TableHandle<T> Add(std::string name, std::int64_t rows, std::int32_t width, bool dense = false) {
    specs_.push_back({std::move(name), kElementTypeOf<T>, rows, width, dense});
    return TableHandle<T>{TableId{static_cast<std::uint32_t>(specs_.size() - 1)}};
  }

  const std::vector<TableSpec>& specs() const { return specs_; }

 private:
  std::vector<TableSpec> specs_;
};

// Row `row` of table `table` in a full model (every row of every table).
template <TableElement T>
std::span<const T> Row(const TableSet& model, TableHandle<T> table, std::int64_t row) {
  const RowBlock& block = model[table.id.value];
  if constexpr (std::is_same_v<T, float>) {
    return block.FloatRow(row);
  } else {
    return block.IntRow(row);
  }
}

// A row's values to fill (App::InitRow), typed by its table's element type.
class RowValues {
 public:
  explicit RowValues(std::span<float> values) : type_(ElementType::kFloat32), floats_(values) {}
  explicit RowValues(std::span<std::int32_t> values) : type_(ElementType::kInt32), ints_(values) {}

  ElementType type() const { return type_; }
  // The values as the table's type; asking for the other type is a bug (asserted).
  std::span<float> floats() const {
    assert(type_ == ElementType::kFloat32);
    return floats_;
  }
  std::span<std::int32_t> ints() const {
    assert(type_ == ElementType::kInt32);
    return ints_;
  }
  template <TableElement T>
  std::span<T> as() const {
    if constexpr (std::is_same_v<T, float>) {
      return floats();
    } else {
      return ints();
    }
  }

 private:
  ElementType type_;
  std::span<float> floats_;
  std::span<std::int32_t> ints_;
};

}  // namespace stalelearn::model
