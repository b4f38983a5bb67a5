// The lda app's per-compute-rank state and the hash of the count
// fingerprint, shared by the kernels (lda_app.cc) and the evaluation
// (lda_evaluation.cc). Internal to apps/lda.
//
// Thread-safety: an LdaState belongs to one compute rank; the runtime hands
// it to that rank's kernel and evaluation calls only, one at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/runtime/app.h"

namespace stalelearn::apps::lda::internal {

// A compute rank's topic assignments and document-topic counts. Indexed by
// global training token / document so lookups need no map; entries of other
// ranks' tokens stay unused.
class LdaState final : public runtime::LocalState {
 public:
  LdaState(std::span<const std::int64_t> mine, std::size_t tokens, std::size_t documents, int topics,
           std::size_t words)
      : samples(mine.begin(), mine.end()),
        topic(tokens, -1),
        doc_topic(documents * static_cast<std::size_t>(topics)),
        word_stamp(words, -1),
        word_topics(words) {}

  std::vector<std::int64_t> samples;      // this rank's tokens
  std::vector<std::int32_t> topic;        // per training token
  std::vector<std::int32_t> doc_topic;    // per training document, K wide
  // Sparse sampler: the topics with n_wk > 0 in this batch's view of word w,
  // rebuilt the first time w appears in a batch (word_stamp != batch).
  std::int64_t batch = 0;
  std::vector<std::int64_t> word_stamp;
  std::vector<std::vector<std::int32_t>> word_topics;
};

inline LdaState& StateOf(runtime::KernelContext& ctx) { return *static_cast<LdaState*>(ctx.state); }

// The fingerprint's weight of one count: a 32-bit mix of its slot (slot =
// word * K + topic for word_topic, V * K + topic for the totals).
inline std::uint32_t SlotHash(std::uint64_t slot) {
  std::uint64_t z = (slot + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>(z ^ (z >> 31));
}

}  // namespace stalelearn::apps::lda::internal
