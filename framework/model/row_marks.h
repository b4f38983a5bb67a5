// One bit per row of a table: which rows some sample names, or which rows of
// a replica's dense table a kernel touched or a refresh wrote. The start-up
// passes over a rank's samples (its working set, the locality planner's
// touched rows) mark every row each sample names: tens of millions of
// marks at random rows. A bit per row keeps a million-row table's marks in
// 128 KB, in a core's L2; a byte per row (1 MB) missed it on most marks.
//
// Not thread-safe: a pass on several threads gives each its own marks and
// ORs them together after (OrWith). Shared marks cost more than they save:
// each bit's first setting, an atomic or, takes the line from the other
// core, and a million rows have only 2,000 lines of bits.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace stalelearn::model {

class RowMarks {
 public:
  RowMarks() = default;
  explicit RowMarks(std::int64_t rows) : rows_(rows), words_(static_cast<std::size_t>((rows + 63) / 64), 0) {}

  std::int64_t rows() const { return rows_; }
  bool empty() const { return rows_ == 0; }

  // Marks `row` (0 <= row < rows()).
  void Mark(std::int64_t row) { words_[static_cast<std::size_t>(row) >> 6] |= std::uint64_t{1} << (row & 63); }
  // Marks every row `other` (as many rows) marks.
  void OrWith(const RowMarks& other) {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }
  bool marked(std::int64_t row) const { return (words_[static_cast<std::size_t>(row) >> 6] >> (row & 63) & 1) != 0; }

  std::int64_t count() const {
    std::int64_t n = 0;
    for (const std::uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  // fn(row) for every marked row, in increasing order.
  template <class Fn>
  void ForEachMarked(const Fn& fn) const {
    for (std::size_t i = 0; i < words_.size(); ++i) {
      for (std::uint64_t w = words_[i]; w != 0; w &= w - 1) {
        fn(static_cast<std::int64_t>(i * 64) + std::countr_zero(w));
      }
    }
  }
  // ForEachMarked, unmarking each word as it goes (a per-clock set: the
  // next clock starts empty without a pass of its own).
  template <class Fn>
  void TakeEachMarked(const Fn& fn) {
    for (std::size_t i = 0; i < words_.size(); ++i) {
      for (std::uint64_t w = std::exchange(words_[i], 0); w != 0; w &= w - 1) {
        fn(static_cast<std::int64_t>(i * 64) + std::countr_zero(w));
      }
    }
  }
  void Clear() { std::fill(words_.begin(), words_.end(), 0); }

 private:
  std::int64_t rows_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace stalelearn::model
