#include "framework/model/row_block.h"

#include <cassert>
#include <cstring>

#include "framework/model/hash64.h"

namespace stalelearn::model {

RowBlock::RowBlock(ElementType type, std::int64_t rows, std::int32_t width)
    : type_(type), rows_(rows), width_(width) {
  const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(width);
  if (type == ElementType::kFloat32) {
    floats_.assign(n, 0.0f);
  } else {
    ints_.assign(n, 0);
  }
}

std::span<float> RowBlock::FloatRow(std::int64_t row) {
  assert(type_ == ElementType::kFloat32 && row >= 0 && row < rows_);
  return {floats_.data() + row * width_, static_cast<std::size_t>(width_)};
}
std::span<const float> RowBlock::FloatRow(std::int64_t row) const {
  assert(type_ == ElementType::kFloat32 && row >= 0 && row < rows_);
  return {floats_.data() + row * width_, static_cast<std::size_t>(width_)};
}
std::span<std::int32_t> RowBlock::IntRow(std::int64_t row) {
  assert(type_ == ElementType::kInt32 && row >= 0 && row < rows_);
  return {ints_.data() + row * width_, static_cast<std::size_t>(width_)};
}
std::span<const std::int32_t> RowBlock::IntRow(std::int64_t row) const {
  assert(type_ == ElementType::kInt32 && row >= 0 && row < rows_);
  return {ints_.data() + row * width_, static_cast<std::size_t>(width_)};
}

std::byte* RowBlock::RowBytes(std::int64_t row) { return bytes().data() + row * row_bytes(); }
const std::byte* RowBlock::RowBytes(std::int64_t row) const { return bytes().data() + row * row_bytes(); }

std::span<std::byte> RowBlock::bytes() {
  return type_ == ElementType::kFloat32 ? std::as_writable_bytes(std::span(floats_))
                                        : std::as_writable_bytes(std::span(ints_));
}
std::span<const std::byte> RowBlock::bytes() const {
  return type_ == ElementType::kFloat32 ? std::as_bytes(std::span(floats_)) : std::as_bytes(std::span(ints_));
}

void RowBlock::AddDelta(std::int64_t row, const std::byte* delta) {
  if (type_ == ElementType::kFloat32) {
    std::span<float> r = FloatRow(row);
    for (std::int32_t i = 0; i < width_; ++i) {
      float d;
      std::memcpy(&d, delta + i * kElementBytes, sizeof d);
      r[i] += d;
    }
  } else {
    std::span<std::int32_t> r = IntRow(row);
    for (std::int32_t i = 0; i < width_; ++i) {
      std::uint32_t d;
      std::memcpy(&d, delta + i * kElementBytes, sizeof d);
      r[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(r[i]) + d);  // wraps, never UB
    }
  }
}

bool RowBlock::Difference(std::int64_t row, const std::byte* before, std::byte* delta_out) const {
  bool nonzero = false;
  if (type_ == ElementType::kFloat32) {
    std::span<const float> r = FloatRow(row);
    for (std::int32_t i = 0; i < width_; ++i) {
      float b;
      std::memcpy(&b, before + i * kElementBytes, sizeof b);
      const float d = r[i] - b;
      nonzero |= d != 0.0f;
      std::memcpy(delta_out + i * kElementBytes, &d, sizeof d);
    }
  } else {
    std::span<const std::int32_t> r = IntRow(row);
    for (std::int32_t i = 0; i < width_; ++i) {
      std::uint32_t b;
      std::memcpy(&b, before + i * kElementBytes, sizeof b);
      const std::uint32_t d = static_cast<std::uint32_t>(r[i]) - b;
      nonzero |= d != 0;
      std::memcpy(delta_out + i * kElementBytes, &d, sizeof d);
    }
  }
  return nonzero;
}

TableSet MakeTableSet(const std::vector<TableSpec>& tables) {
  TableSet set;
  set.reserve(tables.size());
  for (const TableSpec& t : tables) set.emplace_back(t.type, t.rows, t.width);
  return set;
}

std::uint64_t ModelChecksum(const TableSet& tables) {
  Hasher hasher(0xC0FFEE);
  for (const RowBlock& block : tables) hasher.Update(block.bytes());
  return hasher.Finish();
}

}  // namespace stalelearn::model
