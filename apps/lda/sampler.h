// The collapsed-Gibbs conditional of LDA and two samplers of it. For a
// token of word w in document d (its own assignment already removed):
//
//   p(z = k) ∝ (n_dk + alpha) * (n_wk + beta) / (n_k + V * beta)
//
// with n_wk, n_k read from a (possibly stale) replica. Stale counts can be
// negative or zero where the truth is positive, so every count is clamped
// with max(n, 0) before use: no probability is ever negative.
//
//   SamplePlain   the reference: all K terms, O(K) per token.
//   SparseTopicSampler  SparseLDA (Yao, Mimno, McCallum 2009): the mass
//                 splits into s = sum_k alpha beta / (n_k + Vb) (smoothing),
//                 r = sum_{k: n_dk>0} n_dk beta / (n_k + Vb) (document) and
//                 q = sum_{k: n_wk>0} (n_dk + alpha) n_wk / (n_k + Vb) (word);
//                 s and r and the coefficients (n_dk + alpha)/(n_k + Vb) are
//                 cached and updated in O(1) per count change, so a token
//                 costs O(K_d + K_w) (topics present in its document / word)
//                 plus an O(K) walk in the rare case the draw lands in s.
//                 BeginBatch costs O(K), BeginDocument O(K). The caller keeps
//                 the word's topic set (apps/lda/word_topic_sets.h).
// Both draw from the same distribution (tests/unit/lda: chi-square).
//
// Not thread-safe: one sampler per kernel call. Spans passed in must stay
// valid for the call only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace stalelearn::apps::lda {

struct LdaPriors {
  double alpha = 0.1;
  double beta = 0.01;
  int vocabulary = 1;  // V
  int topics = 1;      // K
};

inline double Clamped(std::int32_t count) { return count > 0 ? static_cast<double>(count) : 0.0; }

// K bits: bit k % 64 of word k / 64 is topic k.
using TopicSet = std::span<const std::uint64_t>;

inline std::size_t TopicSetWords(int topics) { return (static_cast<std::size_t>(topics) + 63) / 64; }

// The set of topics k with row[k] > 0, written to `bits` (TopicSetWords long).
// Four compares per instruction where SSE2 is there (every x86-64): the
// kernel builds a word's set at the word's first token in every clock.
inline void FillTopicSet(std::span<const std::int32_t> row, std::span<std::uint64_t> bits) {
  const std::size_t topics = row.size();
  for (std::size_t b = 0; b < bits.size(); ++b) {
    const std::int32_t* counts = row.data() + 64 * b;
    const std::size_t n = std::min<std::size_t>(64, topics - 64 * b);
    std::uint64_t word = 0;
    std::size_t j = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (; j + 4 <= n; j += 4) {
      const __m128i present = _mm_cmpgt_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(counts + j)), zero);
      word |= static_cast<std::uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(present))) << j;
    }
#endif
    for (; j < n; ++j) word |= static_cast<std::uint64_t>(counts[j] > 0) << j;
    bits[b] = word;
  }
}

// The reference sampler; `u` uniform in [0, 1); `scratch` is resized to K.
int SamplePlain(const LdaPriors& priors, std::span<const std::int32_t> word_row,
                std::span<const std::int32_t> totals, std::span<const std::int32_t> doc_row, double u,
                std::vector<double>& scratch);

class SparseTopicSampler {
 public:
  explicit SparseTopicSampler(const LdaPriors& priors);

  // Caches the smoothing terms from the topic totals: O(K).
  void BeginBatch(std::span<const std::int32_t> totals);
  // Caches the document's coefficients and its non-zero topics: O(K), no
  // division (the inverse totals are cached).
  void BeginDocument(std::span<const std::int32_t> doc_row, std::span<const std::int32_t> totals);
  // Draws a topic for a token of the current document. `word_topics` must
  // hold every topic k with word_row[k] > 0 (it may hold others: they add
  // nothing). `u` uniform in [0, 1). The document's counts are in the caches.
  int Sample(const std::int32_t* word_row, TopicSet word_topics, double u);
  // After the caller changed n_dk or n_k of topic k (doc_row, totals hold the
  // new values): updates the caches in O(1) (amortised), one division.
  void TopicChanged(int k, std::span<const std::int32_t> doc_row, std::span<const std::int32_t> totals) {
    TopicChanged(k, doc_row[static_cast<std::size_t>(k)], totals[static_cast<std::size_t>(k)]);
  }
  void TopicChanged(int k, std::int32_t doc_count, std::int32_t total);
  // The kernel's pair of changes for one token, as TopicChanged: Removed
  // after taking the token out of topic k, Added after putting it into the
  // drawn topic. When the draw keeps the topic (often, once the model has
  // settled), Added restores what Removed saved: no division.
  void Removed(int k, std::int32_t doc_count, std::int32_t total);
  void Added(int k, std::int32_t doc_count, std::int32_t total);
  // Word terms computed by Sample so far (the work it did).
  std::int64_t word_terms_walked() const { return word_terms_walked_; }

 private:
  LdaPriors priors_;
  double vocabulary_beta_;
  double alpha_beta_;
  // Per topic k, 2 cache lines' worth at K = 20: the kernel's working set.
  std::vector<double> inverse_;      // 1 / (n_k + Vb)
  std::vector<double> document_;     // n_dk beta / (n_k + Vb)
  std::vector<double> coefficient_;  // (n_dk + alpha) / (n_k + Vb)
  std::vector<int> doc_topics_;      // topics with n_dk > 0 at some point in this document
  std::vector<char> in_doc_topics_;
  std::vector<double> word_terms_;   // scratch, K long: q's running sums
  std::vector<int> word_term_topic_; // scratch, K long: the topic of each
  double inverse_sum_ = 0;           // s = alpha beta * inverse_sum_
  double r_ = 0;
  std::int64_t word_terms_walked_ = 0;
  struct Saved {                     // topic k's caches before Removed
    int topic = -1;
    double inverse, document, coefficient;
  } saved_;
};

// Per token, twice: inline in the kernel's loop.
inline void SparseTopicSampler::TopicChanged(int topic, std::int32_t doc_count, std::int32_t total) {
  const auto k = static_cast<std::size_t>(topic);
  const double inverse = 1.0 / (Clamped(total) + vocabulary_beta_);
  inverse_sum_ += inverse - inverse_[k];
  inverse_[k] = inverse;
  const double n = Clamped(doc_count);
  const double document = n * priors_.beta * inverse;
  r_ += document - document_[k];
  document_[k] = document;
  coefficient_[k] = (n + priors_.alpha) * inverse;
  if (doc_count > 0 && !in_doc_topics_[k]) {
    in_doc_topics_[k] = 1;
    doc_topics_.push_back(topic);
  }
}

inline void SparseTopicSampler::Removed(int topic, std::int32_t doc_count, std::int32_t total) {
  const auto k = static_cast<std::size_t>(topic);
  saved_ = {topic, inverse_[k], document_[k], coefficient_[k]};
  TopicChanged(topic, doc_count, total);
}

inline void SparseTopicSampler::Added(int topic, std::int32_t doc_count, std::int32_t total) {
  if (topic != saved_.topic) {
    TopicChanged(topic, doc_count, total);
    return;
  }
  // The counts are back where they were before Removed, and so are the caches.
  const auto k = static_cast<std::size_t>(topic);
  inverse_sum_ += saved_.inverse - inverse_[k];
  inverse_[k] = saved_.inverse;
  r_ += saved_.document - document_[k];
  document_[k] = saved_.document;
  coefficient_[k] = saved_.coefficient;
  // n_dk > 0 again: still listed in doc_topics_ (entries are never removed).
}

}  // namespace stalelearn::apps::lda
