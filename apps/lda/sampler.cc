#include "apps/lda/sampler.h"

#include <bit>

namespace stalelearn::apps::lda {

int SamplePlain(const LdaPriors& priors, std::span<const std::int32_t> word_row,
                std::span<const std::int32_t> totals, std::span<const std::int32_t> doc_row, double u,
                std::vector<double>& scratch) {
  const int topics = priors.topics;
  scratch.resize(static_cast<std::size_t>(topics));
  const double vocabulary_beta = priors.vocabulary * priors.beta;
  double total = 0;
  for (int k = 0; k < topics; ++k) {
    total += (Clamped(doc_row[k]) + priors.alpha) * (Clamped(word_row[k]) + priors.beta) /
             (Clamped(totals[k]) + vocabulary_beta);
    scratch[static_cast<std::size_t>(k)] = total;
  }
  const double target = u * total;
  for (int k = 0; k < topics - 1; ++k) {
    if (target < scratch[static_cast<std::size_t>(k)]) return k;
  }
  return topics - 1;
}

SparseTopicSampler::SparseTopicSampler(const LdaPriors& priors)
    : priors_(priors),
      vocabulary_beta_(priors.vocabulary * priors.beta),
      alpha_beta_(priors.alpha * priors.beta),
      inverse_(static_cast<std::size_t>(priors.topics)),
      document_(static_cast<std::size_t>(priors.topics)),
      coefficient_(static_cast<std::size_t>(priors.topics)),
      in_doc_topics_(static_cast<std::size_t>(priors.topics)),
      word_terms_(static_cast<std::size_t>(priors.topics)),
      word_term_topic_(static_cast<std::size_t>(priors.topics)) {
  doc_topics_.reserve(static_cast<std::size_t>(priors.topics));
}

void SparseTopicSampler::BeginBatch(std::span<const std::int32_t> totals) {
  inverse_sum_ = 0;
  for (std::size_t k = 0; k < inverse_.size(); ++k) {
    inverse_[k] = 1.0 / (Clamped(totals[k]) + vocabulary_beta_);
    inverse_sum_ += inverse_[k];
  }
}

void SparseTopicSampler::BeginDocument(std::span<const std::int32_t> doc_row, std::span<const std::int32_t>) {
  // The totals are those the caches hold: BeginBatch's, changed since only
  // through TopicChanged.
  r_ = 0;
  doc_topics_.clear();
  for (std::size_t k = 0; k < inverse_.size(); ++k) {
    const double n = Clamped(doc_row[k]);
    coefficient_[k] = (n + priors_.alpha) * inverse_[k];
    document_[k] = n * priors_.beta * inverse_[k];
    r_ += document_[k];
    in_doc_topics_[k] = doc_row[k] > 0;
    if (doc_row[k] > 0) doc_topics_.push_back(static_cast<int>(k));
  }
}

int SparseTopicSampler::Sample(const std::int32_t* word_row, TopicSet word_topics, double u) {
  double* terms = word_terms_.data();
  int* term_topic = word_term_topic_.data();
  std::size_t n = 0;
  double q = 0;
  for (std::size_t b = 0; b < word_topics.size(); ++b) {
    for (std::uint64_t bits = word_topics[b]; bits != 0; bits &= bits - 1) {
      const auto k = static_cast<int>(64 * b) + std::countr_zero(bits);
      q += coefficient_[static_cast<std::size_t>(k)] * Clamped(word_row[k]);
      terms[n] = q;
      term_topic[n++] = k;
    }
  }
  word_terms_walked_ += static_cast<std::int64_t>(n);
  // Guard the running sums against rounding drift (they stay >= 0).
  const double s = inverse_sum_ > 0 ? alpha_beta_ * inverse_sum_ : 0;
  const double r = r_ > 0 ? r_ : 0;
  double target = u * (s + r + q);
  if (target < q) {
    for (std::size_t j = 0; j < n; ++j) {
      if (target < terms[j]) return term_topic[j];
    }
    return term_topic[n - 1];
  }
  target -= q;
  if (target < r) {
    int last = -1;
    for (int k : doc_topics_) {
      const double term = document_[static_cast<std::size_t>(k)];
      if (term <= 0) continue;
      last = k;
      if (target < term) return k;
      target -= term;
    }
    if (last >= 0) return last;
    target = 0;  // rounding: r held only drift
  } else {
    target -= r;
  }
  for (int k = 0; k < priors_.topics; ++k) {
    const double term = alpha_beta_ * inverse_[static_cast<std::size_t>(k)];
    if (target < term) return k;
    target -= term;
  }
  return priors_.topics - 1;
}

}  // namespace stalelearn::apps::lda
