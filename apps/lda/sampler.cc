#include "apps/lda/sampler.h"

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
      smoothing_(static_cast<std::size_t>(priors.topics)),
      document_(static_cast<std::size_t>(priors.topics)),
      coefficient_(static_cast<std::size_t>(priors.topics)),
      in_doc_topics_(static_cast<std::size_t>(priors.topics)) {}

void SparseTopicSampler::BeginBatch(std::span<const std::int32_t> totals) {
  s_ = 0;
  for (int k = 0; k < priors_.topics; ++k) {
    smoothing_[static_cast<std::size_t>(k)] = priors_.alpha * priors_.beta / (Clamped(totals[k]) + vocabulary_beta_);
    s_ += smoothing_[static_cast<std::size_t>(k)];
  }
}

void SparseTopicSampler::BeginDocument(std::span<const std::int32_t> doc_row, std::span<const std::int32_t> totals) {
  r_ = 0;
  doc_topics_.clear();
  for (int k = 0; k < priors_.topics; ++k) {
    const auto i = static_cast<std::size_t>(k);
    const double inverse = 1.0 / (Clamped(totals[k]) + vocabulary_beta_);
    coefficient_[i] = (Clamped(doc_row[k]) + priors_.alpha) * inverse;
    document_[i] = Clamped(doc_row[k]) * priors_.beta * inverse;
    r_ += document_[i];
    in_doc_topics_[i] = doc_row[k] > 0;
    if (doc_row[k] > 0) doc_topics_.push_back(k);
  }
}

void SparseTopicSampler::Recompute(int k, std::span<const std::int32_t> doc_row,
                                   std::span<const std::int32_t> totals) {
  const auto i = static_cast<std::size_t>(k);
  const double inverse = 1.0 / (Clamped(totals[k]) + vocabulary_beta_);
  s_ -= smoothing_[i];
  smoothing_[i] = priors_.alpha * priors_.beta * inverse;
  s_ += smoothing_[i];
  r_ -= document_[i];
  document_[i] = Clamped(doc_row[k]) * priors_.beta * inverse;
  r_ += document_[i];
  coefficient_[i] = (Clamped(doc_row[k]) + priors_.alpha) * inverse;
  if (doc_row[k] > 0 && !in_doc_topics_[i]) {
    in_doc_topics_[i] = 1;
    doc_topics_.push_back(k);
  }
}

void SparseTopicSampler::TopicChanged(int k, std::span<const std::int32_t> doc_row,
                                      std::span<const std::int32_t> totals) {
  Recompute(k, doc_row, totals);
}

int SparseTopicSampler::Sample(std::span<const std::int32_t> word_row, std::span<const std::int32_t> word_topics,
                               std::span<const std::int32_t> doc_row, double u) {
  (void)doc_row;  // its contribution is in the caches
  word_terms_.resize(word_topics.size());
  double q = 0;
  for (std::size_t j = 0; j < word_topics.size(); ++j) {
    const int k = word_topics[j];
    q += coefficient_[static_cast<std::size_t>(k)] * Clamped(word_row[k]);
    word_terms_[j] = q;
  }
  // Guard the running sums against rounding drift (they stay >= 0).
  const double s = s_ > 0 ? s_ : 0;
  const double r = r_ > 0 ? r_ : 0;
  double target = u * (s + r + q);
  if (target < q) {
    for (std::size_t j = 0; j < word_topics.size(); ++j) {
      if (target < word_terms_[j]) return word_topics[j];
    }
    return word_topics.back();
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
    const double term = smoothing_[static_cast<std::size_t>(k)];
    if (target < term) return k;
    target -= term;
  }
  return priors_.topics - 1;
}

}  // namespace stalelearn::apps::lda
