// The sparse sampler's per-word topic sets (SparseLDA): for each word w the
// topics k with n_wk > 0 in the replica's view, as a bitset of K bits, plus
// the view's row itself, for the current clock.
//
// Why built once per clock and then kept incrementally: between clocks the
// runtime refreshes the replica (other ranks' counts arrive in any row) and
// does not say which rows changed, so the first token of a word in a clock
// builds its set from the row (K compares into bits; the row is loaded for
// the token anyway). From then on only this rank's kernel changes the row,
// and every change goes through Decremented/Incremented: a count falling to
// 0 clears its bit, a count rising to 1 sets it. The set is exact: every k
// with n_wk > 0 and no other (a stale negative count rising to 0 stays out).
//
// Bits, not lists: a word's set is K/8 bytes (8 at K = 20, all words' sets
// in 87 KB for Brown), an update is one bit operation, and the sampler walks
// the set bits in topic order.
//
// The word's row pointer is cached with the set: the model view's row spans
// stay valid until the end of the clock (framework/model/model_view.h), and
// the view records the row as touched at the first call.
//
// Storage is flat, allocated once per compute rank: no allocation in the
// kernel. Not thread-safe: part of one compute rank's LdaState.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "apps/lda/sampler.h"

namespace stalelearn::apps::lda {

class WordTopicSets {
 public:
  WordTopicSets(std::size_t words, int topics)
      : topics_(static_cast<std::size_t>(topics)),
        set_words_(TopicSetWords(topics)),
        bits_(words * set_words_),
        word_(words) {}

  // Starts a clock: every word's set and row must be fetched again.
  void NextClock() {
    if (++clock_ == 0) {  // wrapped (after 2^32 clocks): forget every entry
      for (Word& entry : word_) entry.clock = 0;
      clock_ = 1;
    }
  }

  // The word's row in this clock's view, or nullptr before Fill/Remember.
  std::int32_t* Row(std::int32_t word) const {
    const Word& entry = word_[static_cast<std::size_t>(word)];
    return entry.clock == clock_ ? entry.row : nullptr;
  }

  // Sets the topics with row[k] > 0 and remembers the row for this clock.
  std::int32_t* Fill(std::int32_t word, std::span<std::int32_t> row) {
    FillTopicSet(row.first(topics_), Bits(word));
    return Remember(word, row);
  }

  // Remembers the row for this clock without its set (for the plain
  // sampler, which reads none; Decremented/Incremented must not follow).
  std::int32_t* Remember(std::int32_t word, std::span<std::int32_t> row) {
    word_[static_cast<std::size_t>(word)] = {row.data(), clock_};
    return row.data();
  }

  TopicSet Topics(std::int32_t word) const {
    return {&bits_[static_cast<std::size_t>(word) * set_words_], set_words_};
  }

  // After row[k] -= 1 (`count` is the new value).
  void Decremented(std::int32_t word, std::int32_t k, std::int32_t count) {
    if (count == 0) Bits(word)[static_cast<std::size_t>(k) / 64] &= ~Bit(k);
  }

  // After row[k] += 1 (`count` is the new value).
  void Incremented(std::int32_t word, std::int32_t k, std::int32_t count) {
    if (count == 1) Bits(word)[static_cast<std::size_t>(k) / 64] |= Bit(k);
  }

 private:
  struct Word {
    std::int32_t* row = nullptr;  // the view's row, valid in `clock` only
    std::uint32_t clock = 0;      // the clock the set and row were filled in (0: never)
  };

  static std::uint64_t Bit(std::int32_t k) { return std::uint64_t{1} << (static_cast<unsigned>(k) % 64); }
  std::span<std::uint64_t> Bits(std::int32_t word) {
    return {&bits_[static_cast<std::size_t>(word) * set_words_], set_words_};
  }

  std::size_t topics_;
  std::size_t set_words_;
  std::vector<std::uint64_t> bits_;  // word * set_words_
  std::vector<Word> word_;
  std::uint32_t clock_ = 0;
};

}  // namespace stalelearn::apps::lda
