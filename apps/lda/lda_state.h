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

#include "apps/lda/word_topic_sets.h"
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
        word_topics(words, topics),
        tokens_of_doc(documents) {}

  std::vector<std::int64_t> samples;      // this rank's tokens
  std::vector<std::int32_t> topic;        // per training token
  std::vector<std::int32_t> doc_topic;    // per training document, K wide
  WordTopicSets word_topics;             // the words' rows and topic sets in this clock

  // A clock's tokens grouped by document (GroupByDocument in lda_app.cc):
  // grouped[group_begin[g] .. group_begin[g + 1]) are tokens of document
  // group_doc[g]. Scratch reused every clock; tokens_of_doc is all zeros
  // between clocks.
  std::vector<std::int64_t> grouped;
  std::vector<std::int64_t> group_begin;
  std::vector<std::int32_t> group_doc;
  std::vector<std::int64_t> tokens_of_doc;  // per training document
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
