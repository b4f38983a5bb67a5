// The sparse sampler's per-word topic lists (SparseLDA): for each word w the
// topics k with n_wk > 0 in the replica's view, plus the view's row itself,
// for the current clock.
//
// Why built once per clock and then kept incrementally: between clocks the
// runtime refreshes the replica (other ranks' counts arrive in any row) and
// does not say which rows changed, so the first token of a word in a clock
// lists its row afresh (K compares, branch-free; the row is loaded for the
// token anyway). From then on only this rank's kernel changes the row, and
// every change goes through Decremented/Incremented: a count falling to 0
// leaves the list, a count rising to 1 joins it. The list is exact: it holds
// every k with n_wk > 0 and no other (a stale negative count rising to 0
// stays out, as it should).
//
// The word's row pointer is cached with the list: the model view's row spans
// stay valid until the end of the clock (framework/model/model_view.h), and
// the view records the row as touched at the first call.
//
// Storage is flat (word * K), allocated once per compute rank: no allocation
// in the kernel. Not thread-safe: part of one compute rank's LdaState.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <span>
#include <vector>

namespace stalelearn::apps::lda {

class WordTopicLists {
 public:
  WordTopicLists(std::size_t words, int topics)
      : topics_(static_cast<std::size_t>(topics)), listed_(words * topics_), word_(words) {}

  // Starts a clock: every word's list and row must be fetched again.
  void NextClock() {
    if (++clock_ == 0) {  // wrapped (after 2^32 clocks): forget every entry
      for (Word& entry : word_) entry.clock = 0;
      clock_ = 1;
    }
  }

  // The word's row in this clock's view, or nullptr before Fill.
  std::int32_t* Row(std::int32_t word) const {
    const Word& entry = word_[static_cast<std::size_t>(word)];
    return entry.clock == clock_ ? entry.row : nullptr;
  }

  // Lists the topics with row[k] > 0 and remembers the row for this clock.
  std::int32_t* Fill(std::int32_t word, std::span<std::int32_t> row) {
    const auto w = static_cast<std::size_t>(word);
    std::int32_t* listed = &listed_[w * topics_];
    std::size_t n = 0;
    for (std::size_t k = 0; k < topics_; ++k) {
      listed[n] = static_cast<std::int32_t>(k);
      n += row[k] > 0 ? 1 : 0;
    }
    word_[w] = {row.data(), clock_, static_cast<std::int32_t>(n)};
    return row.data();
  }

  std::span<const std::int32_t> Topics(std::int32_t word) const {
    const auto w = static_cast<std::size_t>(word);
    return {&listed_[w * topics_], static_cast<std::size_t>(word_[w].size)};
  }

  // After row[k] -= 1 (`count` is the new value).
  void Decremented(std::int32_t word, std::int32_t k, std::int32_t count) {
    if (count != 0) return;
    const auto w = static_cast<std::size_t>(word);
    std::int32_t* listed = &listed_[w * topics_];
    std::int32_t* end = listed + word_[w].size;
    std::int32_t* at = std::find(listed, end, k);
    assert(at != end);  // it was 1: listed
    *at = *(end - 1);
    word_[w].size -= 1;
  }

  // After row[k] += 1 (`count` is the new value).
  void Incremented(std::int32_t word, std::int32_t k, std::int32_t count) {
    if (count != 1) return;
    const auto w = static_cast<std::size_t>(word);
    assert(word_[w].size < static_cast<std::int32_t>(topics_));
    listed_[w * topics_ + static_cast<std::size_t>(word_[w].size)] = k;
    word_[w].size += 1;
  }

 private:
  // One cache line holds four words' entries: a token's lookup is one load.
  struct Word {
    std::int32_t* row = nullptr;  // the view's row, valid in `clock` only
    std::uint32_t clock = 0;      // the clock the list and row were filled in (0: never)
    std::int32_t size = 0;        // the first `size` entries of the word's listed_ slice
  };

  std::size_t topics_;
  std::vector<std::int32_t> listed_;  // word * K
  std::vector<Word> word_;
  std::uint32_t clock_ = 0;
};

}  // namespace stalelearn::apps::lda
