#include "framework/model/row_block.h"

#include <cassert>
#include <cstring>


namespace stalelearn::model {

RowBlock::RowBlock(ElementType type, std::int64_t rows, std::int32_t width, bool touch_pages)
    : type_(type),
      rows_(rows),
      width_(width),
      floats_(ZeroedPages<float>(touch_pages)),
      ints_(ZeroedPages<std::int32_t>(touch_pages)) {
  const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(width);
  // Sized once: the allocator's memory is zero, and resize writes nothing.
  if (type == ElementType::kFloat32) {
    floats_.resize(n);
  } else {
    ints_.resize(n);
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

namespace {

// delta = now - before, element by element in T's arithmetic (uint32 for
// int32: wraps). Returns whether any element differs. Written so the
// compiler vectorises it: no branch, one OR of the delta bits. For floats
// the sign bit is masked, so a -0 delta (-0 - +0) is no change, exactly as
// d != 0.0f says.
template <class T, class Bits>
bool DifferenceOf(const T* now, const std::byte* before, std::byte* delta_out, std::int32_t width, Bits mask) {
  Bits any = 0;
  for (std::int32_t i = 0; i < width; ++i) {
    T b;
    std::memcpy(&b, before + i * kElementBytes, sizeof b);
    const T d = now[i] - b;
    Bits bits;
    std::memcpy(&bits, &d, sizeof bits);
    any |= bits;
    std::memcpy(delta_out + i * kElementBytes, &d, sizeof d);
  }
  return (any & mask) != 0;
}

}  // namespace

bool RowBlock::Difference(std::int64_t row, const std::byte* before, std::byte* delta_out) const {
  assert(row >= 0 && row < rows_);
  if (type_ == ElementType::kFloat32) {
    return DifferenceOf(floats_.data() + row * width_, before, delta_out, width_, std::uint32_t{0x7fffffff});
  }
  // Unsigned arithmetic: wraps, never UB.
  return DifferenceOf(reinterpret_cast<const std::uint32_t*>(ints_.data() + row * width_), before, delta_out, width_,
                      ~std::uint32_t{0});
}

TableSet MakeTableSet(const std::vector<TableSpec>& tables, bool touch_pages) {
  TableSet set;
  set.reserve(tables.size());
  for (const TableSpec& t : tables) set.emplace_back(t.type, t.rows, t.width, touch_pages);
  return set;
}

}  // namespace stalelearn::model
