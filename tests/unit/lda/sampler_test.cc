// The two samplers of apps/lda/sampler.h draw from the collapsed-Gibbs
// conditional p(k) ∝ (n_dk + alpha)(n_wk + beta)/(n_k + V beta), computed
// here independently of either: a chi-square goodness-of-fit test of many
// draws on a fixed state. The same test rejects a planted wrong sampler (the
// sparse sampler whose caches miss the removal of the token's own topic),
// so it can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "apps/lda/sampler.h"

namespace stalelearn::apps::lda {
namespace {

constexpr int kTopics = 12;
constexpr int kDraws = 200000;
// The 0.999 quantile of chi-square with 11 degrees of freedom is 31.26: a
// correct sampler fails one run in a thousand (the seeds are fixed, so the
// outcome is reproducible).
constexpr double kCritical = 31.26;

// A state with small counts, so that a count off by one moves the
// distribution measurably; some topics absent from the word and document,
// and one stale (negative) word count that must be read as 0.
struct FixedState {
  LdaPriors priors{0.1, 0.01, /*vocabulary=*/500, kTopics};
  std::vector<std::int32_t> word_row{3, 0, 0, 7, 1, 0, 0, 2, 0, -1, 0, 5};
  std::vector<std::int32_t> doc_row{2, 0, 4, 1, 0, 0, 3, 0, 0, 1, 0, 0};
  std::vector<std::int32_t> totals{40, 25, 60, 33, 18, 90, 22, 15, 70, 41, 12, 30};
  // The topics with word_row > 0 (0, 3, 4, 7, 11) as a topic set.
  std::vector<std::uint64_t> word_topics{(1u << 0) | (1u << 3) | (1u << 4) | (1u << 7) | (1u << 11)};
};

std::vector<double> ExactConditional(const FixedState& s) {
  std::vector<double> p(kTopics);
  double total = 0;
  for (int k = 0; k < kTopics; ++k) {
    const double nwk = std::max(0, s.word_row[k]);
    p[k] = (s.doc_row[k] + s.priors.alpha) * (nwk + s.priors.beta) /
           (s.totals[k] + s.priors.vocabulary * s.priors.beta);
    total += p[k];
  }
  for (double& v : p) v /= total;
  return p;
}

// Pearson's statistic of kDraws draws of `draw(u)` against `expected`.
double ChiSquare(const std::function<int(double)>& draw, const std::vector<double>& expected, unsigned seed) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> observed(kTopics);
  for (int i = 0; i < kDraws; ++i) {
    const int k = draw(uniform(generator));
    EXPECT_TRUE(k >= 0 && k < kTopics) << k;
    if (k >= 0 && k < kTopics) observed[k] += 1;
  }
  double statistic = 0;
  for (int k = 0; k < kTopics; ++k) {
    const double e = expected[k] * kDraws;
    statistic += (observed[k] - e) * (observed[k] - e) / e;
  }
  return statistic;
}

TEST(LdaSampler, PlainSamplerDrawsTheConditional) {
  const FixedState s;
  std::vector<double> scratch;
  const double statistic = ChiSquare(
      [&](double u) { return SamplePlain(s.priors, s.word_row, s.totals, s.doc_row, u, scratch); },
      ExactConditional(s), 1);
  EXPECT_LT(statistic, kCritical);
}

TEST(LdaSampler, SparseSamplerDrawsTheConditional) {
  const FixedState s;
  SparseTopicSampler sampler(s.priors);
  sampler.BeginBatch(s.totals);
  sampler.BeginDocument(s.doc_row, s.totals);
  const double statistic =
      ChiSquare([&](double u) { return sampler.Sample(s.word_row.data(), s.word_topics, u); },
                ExactConditional(s), 2);
  EXPECT_LT(statistic, kCritical);
}

// The kernel's path: the caches were set up with the token's own topic still
// counted, then the removal updates them in O(1) (TopicChanged).
FixedState WithTokenCounted(const FixedState& s, int topic) {
  FixedState counted = s;
  counted.word_row[topic] += 1;
  counted.doc_row[topic] += 1;
  counted.totals[topic] += 1;
  return counted;
}

TEST(LdaSampler, SparseSamplerAfterIncrementalRemovalDrawsTheConditional) {
  const FixedState s;
  FixedState counted = WithTokenCounted(s, /*topic=*/3);
  SparseTopicSampler sampler(s.priors);
  sampler.BeginBatch(counted.totals);
  sampler.BeginDocument(counted.doc_row, counted.totals);
  sampler.TopicChanged(3, s.doc_row, s.totals);  // the removal
  const double statistic =
      ChiSquare([&](double u) { return sampler.Sample(s.word_row.data(), s.word_topics, u); },
                ExactConditional(s), 3);
  EXPECT_LT(statistic, kCritical);
}

// The kernel's pair Removed / Added when the draw keeps the token's topic:
// Added restores the caches Removed saved, so the sampler draws the
// conditional of the counts with the token back in (and with Added left out,
// the same test rejects it: the caches would still miss the token).
TEST(LdaSampler, SparseSamplerAfterRemovedAndAddedBackDrawsTheConditional) {
  const FixedState s;
  const FixedState counted = WithTokenCounted(s, /*topic=*/3);
  SparseTopicSampler sampler(s.priors);
  sampler.BeginBatch(counted.totals);
  sampler.BeginDocument(counted.doc_row, counted.totals);
  sampler.Removed(3, s.doc_row[3], s.totals[3]);
  SparseTopicSampler without_added = sampler;
  sampler.Added(3, counted.doc_row[3], counted.totals[3]);
  const auto draw = [](SparseTopicSampler& x, const FixedState& state) {
    return [&x, &state](double u) { return x.Sample(state.word_row.data(), state.word_topics, u); };
  };
  EXPECT_LT(ChiSquare(draw(sampler, counted), ExactConditional(counted), 7), kCritical);
  EXPECT_GT(ChiSquare(draw(without_added, counted), ExactConditional(counted), 8), kCritical);
  // Added of another topic than the removed one recomputes that topic.
  const FixedState moved = WithTokenCounted(s, /*topic=*/0);
  SparseTopicSampler mover(s.priors);
  mover.BeginBatch(counted.totals);
  mover.BeginDocument(counted.doc_row, counted.totals);
  mover.Removed(3, s.doc_row[3], s.totals[3]);
  mover.Added(0, moved.doc_row[0], moved.totals[0]);
  EXPECT_LT(ChiSquare(draw(mover, moved), ExactConditional(moved), 9), kCritical);
}

TEST(LdaSampler, ThePlainAndSparseSamplersAgreeWithEachOther) {
  // Two-sample chi-square between the samplers' histograms.
  const FixedState s;
  std::mt19937_64 generator(4);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  SparseTopicSampler sparse(s.priors);
  sparse.BeginBatch(s.totals);
  sparse.BeginDocument(s.doc_row, s.totals);
  std::vector<double> scratch, plain_counts(kTopics), sparse_counts(kTopics);
  for (int i = 0; i < kDraws; ++i) {
    plain_counts[SamplePlain(s.priors, s.word_row, s.totals, s.doc_row, uniform(generator), scratch)] += 1;
    sparse_counts[sparse.Sample(s.word_row.data(), s.word_topics, uniform(generator))] += 1;
  }
  double statistic = 0;
  for (int k = 0; k < kTopics; ++k) {
    const double sum = plain_counts[k] + sparse_counts[k];
    if (sum > 0) statistic += (plain_counts[k] - sparse_counts[k]) * (plain_counts[k] - sparse_counts[k]) / sum;
  }
  EXPECT_LT(statistic, kCritical);
}

TEST(LdaSampler, ThePlantedWrongSamplerFailsTheSameTest) {
  // The defect: the token's removal is made in the counts but not told to
  // the sparse sampler, whose caches still count the token in topic 3.
  const FixedState s;
  FixedState counted = WithTokenCounted(s, 3);
  SparseTopicSampler sampler(s.priors);
  sampler.BeginBatch(counted.totals);
  sampler.BeginDocument(counted.doc_row, counted.totals);
  const double statistic =
      ChiSquare([&](double u) { return sampler.Sample(s.word_row.data(), s.word_topics, u); },
                ExactConditional(s), 5);
  EXPECT_GT(statistic, kCritical) << "a sampler with stale caches should be rejected";
  // And the reference sampler run on the counts before the removal.
  std::vector<double> scratch;
  const double plain_statistic = ChiSquare(
      [&](double u) { return SamplePlain(s.priors, counted.word_row, counted.totals, counted.doc_row, u, scratch); },
      ExactConditional(s), 6);
  EXPECT_GT(plain_statistic, kCritical);
}

TEST(LdaSampler, UniformEdgesStayInRange) {
  const FixedState s;
  std::vector<double> scratch;
  SparseTopicSampler sampler(s.priors);
  sampler.BeginBatch(s.totals);
  sampler.BeginDocument(s.doc_row, s.totals);
  for (double u : {0.0, 1e-300, 0.5, std::nextafter(1.0, 0.0)}) {
    const int plain = SamplePlain(s.priors, s.word_row, s.totals, s.doc_row, u, scratch);
    const int sparse = sampler.Sample(s.word_row.data(), s.word_topics, u);
    EXPECT_TRUE(plain >= 0 && plain < kTopics) << u;
    EXPECT_TRUE(sparse >= 0 && sparse < kTopics) << u;
  }
}

// Topic sets of more than 64 topics: the sampler finds a topic in the third
// word of the bitset. With tiny priors and an empty document the word's only
// present topic holds all the mass.
TEST(LdaSampler, SparseSamplerReadsTopicSetsWiderThan64Topics) {
  const LdaPriors priors{1e-12, 1e-12, /*vocabulary=*/100, /*topics=*/130};
  std::vector<std::int32_t> word_row(130), doc_row(130), totals(130, 50);
  word_row[100] = 5;
  word_row[3] = -2;  // stale: must count as 0
  std::vector<std::uint64_t> set(TopicSetWords(130));
  FillTopicSet(word_row, set);
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set[0], 0u);
  EXPECT_EQ(set[1], std::uint64_t{1} << 36);
  SparseTopicSampler sampler(priors);
  sampler.BeginBatch(totals);
  sampler.BeginDocument(doc_row, totals);
  for (double u : {0.0, 0.3, 0.9}) EXPECT_EQ(sampler.Sample(word_row.data(), set, u), 100) << u;
}

}  // namespace
}  // namespace stalelearn::apps::lda
