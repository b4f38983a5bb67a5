// Storage of rows of one table: the whole table (a replica) or one memory
// rank's shard of it (the master). Elements are float32 or int32; rows travel
// between ranks as raw bytes and deltas are applied with the element type's
// arithmetic (int32 wraps, so integer merges are exact: I4).
//
// Not thread-safe: concurrent calls must touch different rows (the merger
// updates distinct rows of a batch in parallel).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "framework/core/zeroed_pages.h"
#include "framework/model/table_spec.h"

namespace stalelearn::model {

class RowBlock {
 public:
  // Zeros. `touch_pages`: written now (the default: no page faults later),
  // or, false, backed by memory only where rows are written (a table read
  // only in part: framework/core/zeroed_pages.h).
  RowBlock(ElementType type, std::int64_t rows, std::int32_t width, bool touch_pages = true);

  ElementType type() const { return type_; }
  std::int64_t rows() const { return rows_; }
  std::int32_t width() const { return width_; }
  std::size_t row_bytes() const { return static_cast<std::size_t>(width_) * kElementBytes; }
  std::size_t size_bytes() const { return row_bytes() * static_cast<std::size_t>(rows_); }

  // Typed access; the type must match (asserted).
  std::span<float> FloatRow(std::int64_t row);
  std::span<const float> FloatRow(std::int64_t row) const;
  std::span<std::int32_t> IntRow(std::int64_t row);
  std::span<const std::int32_t> IntRow(std::int64_t row) const;

  // Raw bytes of a row and of the whole block (rows in order).
  std::byte* RowBytes(std::int64_t row);
  const std::byte* RowBytes(std::int64_t row) const;
  std::span<std::byte> bytes();
  std::span<const std::byte> bytes() const;

  // row += delta (delta: row_bytes() bytes of the same element type).
  void AddDelta(std::int64_t row, const std::byte* delta);
  // delta_out = row - before (both row_bytes() bytes). Returns false when the
  // delta is all zeros (nothing to send).
  bool Difference(std::int64_t row, const std::byte* before, std::byte* delta_out) const;

 private:
  ElementType type_;
  std::int64_t rows_;
  std::int32_t width_;
  // Exactly one of the two is used, so typed access never aliases. Large
  // blocks sit on huge pages (framework/core/huge_page_new.cc: rows are
  // read and written at random).
  std::vector<float, ZeroedPages<float>> floats_;
  std::vector<std::int32_t, ZeroedPages<std::int32_t>> ints_;
};

// dst = src for one row (bytes: a multiple of 4, the element size), inline:
// rows are ~100 bytes, where a call to the library's memcpy costs more than
// the copy itself. From 32 bytes on, the last 32-byte piece ends at `bytes`
// (overlapping the one before) instead of a tail of 4-byte copies.
inline void CopyRow(std::byte* __restrict dst, const std::byte* __restrict src, std::size_t bytes) {
  if (bytes < 32) [[unlikely]] {
    for (std::size_t i = 0; i < bytes; i += 4) std::memcpy(dst + i, src + i, 4);
    return;
  }
  for (std::size_t i = 0; i + 32 < bytes; i += 32) std::memcpy(dst + i, src + i, 32);
  std::memcpy(dst + bytes - 32, src + bytes - 32, 32);
}

// CopyRow for a few rows, the library's memcpy for more.
inline void CopyRows(std::byte* __restrict dst, const std::byte* __restrict src, std::size_t bytes) {
  if (bytes <= 256) {
    CopyRow(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

// dst = src with non-temporal stores (bytes and dst 4-byte aligned, as rows
// and change-log records are): for data written once and read, if at all,
// by another rank later (the snapshot's change log). Ordinary stores would
// read every destination line into the cache first and push out what the
// writer works on; these do not. Weakly ordered: call StreamFence() before
// the store that publishes what was streamed. Other architectures: CopyRows.
inline void StreamRows(std::byte* dst, const std::byte* src, std::size_t bytes) {
#if defined(__SSE2__)
  if ((reinterpret_cast<std::uintptr_t>(dst) | bytes) % 4 != 0) {
    CopyRows(dst, src, bytes);
    return;
  }
  std::size_t i = 0;
  for (; i < bytes && reinterpret_cast<std::uintptr_t>(dst + i) % 16 != 0; i += 4) {
    std::int32_t v;
    std::memcpy(&v, src + i, 4);
    _mm_stream_si32(reinterpret_cast<int*>(dst + i), v);
  }
  for (; i + 16 <= bytes; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  }
  for (; i < bytes; i += 4) {
    std::int32_t v;
    std::memcpy(&v, src + i, 4);
    _mm_stream_si32(reinterpret_cast<int*>(dst + i), v);
  }
#else
  CopyRows(dst, src, bytes);
#endif
}

// Orders earlier StreamRows stores before later stores (a release store
// does not: non-temporal stores are weakly ordered).
inline void StreamFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// One RowBlock per table, in table order.
using TableSet = std::vector<RowBlock>;

// A full-size TableSet for `tables`, zero-filled (`touch_pages`: RowBlock's).
TableSet MakeTableSet(const std::vector<TableSpec>& tables, bool touch_pages = true);

}  // namespace stalelearn::model
