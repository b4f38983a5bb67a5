// LdaApp's evaluation (lda_app.h): document completion on the held-out
// documents, the training log-likelihood, and the count invariants.
#include <algorithm>
#include <cmath>

#include "apps/lda/lda_app.h"
#include "apps/lda/lda_state.h"

namespace stalelearn::apps::lda {

using internal::LdaState;
using internal::SlotHash;

std::vector<std::int64_t> LdaApp::TrainingTokensPerWord() const {
  std::vector<std::int64_t> counts(corpus_.vocabulary.size());
  for (std::int32_t word : token_word_) counts[static_cast<std::size_t>(word)] += 1;
  return counts;
}

std::pair<double, double> LdaApp::CompleteDocument(std::int64_t doc, std::span<const double> phi) const {
  const std::vector<std::uint32_t>& tokens = corpus_.documents[static_cast<std::size_t>(doc)];
  const std::size_t half = tokens.size() / 2;
  if (half == 0 || half == tokens.size()) return {0.0, 0.0};
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const double alpha = params_.priors.alpha;
  const auto phi_row = [&](std::uint32_t word) { return phi.subspan(word * width, width); };
  runtime::RandomStream random(params_.seed ^ (0xD0C0ull + static_cast<std::uint64_t>(doc) * 0x9E3779B97F4A7C15ull));
  std::vector<std::int32_t> topic(half);
  std::vector<double> doc_topic(width), mean_theta(width), cumulative(width);
  for (std::size_t t = 0; t < half; ++t) {
    topic[t] = static_cast<std::int32_t>(random.Below(topics));
    doc_topic[static_cast<std::size_t>(topic[t])] += 1;
  }
  // Gibbs sweeps with the model fixed; theta averaged over the later half.
  const int sweeps = std::max(1, params_.eval_sweeps);
  int averaged = 0;
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for (std::size_t t = 0; t < half; ++t) {
      doc_topic[static_cast<std::size_t>(topic[t])] -= 1;
      const std::span<const double> word_phi = phi_row(tokens[t]);
      double total = 0;
      for (std::size_t k = 0; k < width; ++k) {
        total += (doc_topic[k] + alpha) * word_phi[k];
        cumulative[k] = total;
      }
      const double target = random.Uniform() * total;
      int k = 0;
      while (k < topics - 1 && target >= cumulative[static_cast<std::size_t>(k)]) ++k;
      topic[t] = k;
      doc_topic[static_cast<std::size_t>(k)] += 1;
    }
    if (sweep >= sweeps / 2) {
      for (std::size_t k = 0; k < width; ++k) mean_theta[k] += doc_topic[k];
      ++averaged;
    }
  }
  const double norm = static_cast<double>(half) + topics * alpha;
  for (std::size_t k = 0; k < width; ++k) mean_theta[k] = (mean_theta[k] / averaged + alpha) / norm;
  double log_likelihood = 0;
  for (std::size_t t = half; t < tokens.size(); ++t) {
    const std::span<const double> word_phi = phi_row(tokens[t]);
    double p = 0;
    for (std::size_t k = 0; k < width; ++k) p += mean_theta[k] * word_phi[k];
    log_likelihood += std::log(p);
  }
  return {log_likelihood, static_cast<double>(tokens.size() - half)};
}

std::vector<double> LdaApp::EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const {
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const std::span<const std::int32_t> totals = runtime::Row(model, totals_, 0);
  const double vocabulary_beta = params_.priors.vocabulary * params_.priors.beta;
  std::vector<double> inverse_totals(width);
  for (std::size_t k = 0; k < width; ++k) inverse_totals[k] = 1.0 / (Clamped(totals[k]) + vocabulary_beta);
  // phi_wk = (n_wk + beta) / (n_k + V beta) once per evaluation, word-major:
  // the completion sweeps and the training tokens read it K at a time.
  const double alpha = params_.priors.alpha, beta = params_.priors.beta;
  std::vector<double> phi(corpus_.vocabulary.size() * width);
  for (std::size_t w = 0; w < corpus_.vocabulary.size(); ++w) {
    const std::span<const std::int32_t> row = runtime::Row(model, word_topic_, static_cast<std::int64_t>(w));
    for (std::size_t k = 0; k < width; ++k) phi[w * width + k] = (Clamped(row[k]) + beta) * inverse_totals[k];
  }
  double test_ll = 0, test_tokens = 0;
  const auto ranks = static_cast<std::size_t>(std::max(1, ctx.info.compute_ranks));
  for (std::size_t i = static_cast<std::size_t>(ctx.info.rank.value); i < test_.size(); i += ranks) {
    const auto [ll, n] = CompleteDocument(test_[i], phi);
    test_ll += ll;
    test_tokens += n;
  }
  double train_ll = 0, train_tokens = 0;
  if (const auto* state = dynamic_cast<const LdaState*>(ctx.state)) {
    for (std::int64_t s : state->samples) {
      const auto i = static_cast<std::size_t>(s);
      const auto d = static_cast<std::size_t>(token_doc_[i]);
      const double length = static_cast<double>(doc_begin_[d + 1] - doc_begin_[d]);
      const double* word_phi = &phi[static_cast<std::size_t>(token_word_[i]) * width];
      const std::int32_t* doc_row = &state->doc_topic[d * width];
      double p = 0;
      for (std::size_t k = 0; k < width; ++k) p += (doc_row[k] + alpha) * word_phi[k];
      train_ll += std::log(p / (length + topics * alpha));
      train_tokens += 1;
    }
  }
  std::vector<double> sums = {test_ll, test_tokens, train_ll, train_tokens, 0, 0, 0, 0};
  if (ctx.info.rank.value == 0) {
    const CountCheck check = CheckCounts(model);
    sums[4] = static_cast<double>(check.count_errors);
    sums[5] = static_cast<double>(check.negative_counts);
    sums[6] = static_cast<double>(check.fingerprint);
  }
  if (const auto* state = dynamic_cast<const LdaState*>(ctx.state)) {
    const auto vocabulary_slots = static_cast<std::uint64_t>(corpus_.vocabulary.size()) * width;
    std::uint32_t assigned = 0;  // wraps: sums mod 2^32
    for (std::int64_t s : state->samples) {
      const auto i = static_cast<std::size_t>(s);
      const auto k = static_cast<std::uint64_t>(state->topic[i]);
      assigned += SlotHash(static_cast<std::uint64_t>(token_word_[i]) * width + k) + SlotHash(vocabulary_slots + k);
    }
    sums[7] = static_cast<double>(assigned);
  }
  return sums;
}

LdaApp::CountCheck LdaApp::CheckCounts(const runtime::TableSet& model) const {
  const auto width = static_cast<std::size_t>(params_.priors.topics);
  const std::vector<std::int64_t> expected = TrainingTokensPerWord();
  CountCheck check;
  std::uint32_t fingerprint = 0;  // wraps: sums mod 2^32
  for (std::size_t w = 0; w < expected.size(); ++w) {
    const std::span<const std::int32_t> row = runtime::Row(model, word_topic_, static_cast<std::int64_t>(w));
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < width; ++k) {
      sum += row[k];
      if (row[k] < 0) ++check.negative_counts;
      fingerprint += static_cast<std::uint32_t>(row[k]) * SlotHash(w * width + k);
    }
    if (sum != expected[w]) ++check.count_errors;
  }
  const std::span<const std::int32_t> totals = runtime::Row(model, totals_, 0);
  std::int64_t sum = 0;
  for (std::size_t k = 0; k < width; ++k) {
    sum += totals[k];
    if (totals[k] < 0) ++check.negative_counts;
    fingerprint += static_cast<std::uint32_t>(totals[k]) * SlotHash(expected.size() * width + k);
  }
  if (sum != static_cast<std::int64_t>(token_word_.size())) ++check.count_errors;
  check.fingerprint = fingerprint;
  return check;
}

double LdaApp::UnigramPerplexity() const {
  const std::vector<std::int64_t> counts = TrainingTokensPerWord();
  const double beta = params_.priors.beta;
  const double denominator = static_cast<double>(token_word_.size()) + beta * static_cast<double>(counts.size());
  double log_likelihood = 0, tokens = 0;
  for (std::int64_t doc : test_) {
    const std::vector<std::uint32_t>& words = corpus_.documents[static_cast<std::size_t>(doc)];
    const std::size_t half = words.size() / 2;
    if (half == 0) continue;  // as CompleteDocument: scores nothing
    for (std::size_t t = half; t < words.size(); ++t) {
      log_likelihood += std::log((static_cast<double>(counts[words[t]]) + beta) / denominator);
      tokens += 1;
    }
  }
  return tokens > 0 ? std::exp(-log_likelihood / tokens) : 0;
}

runtime::Evaluation LdaApp::CombineParts(std::span<const double> sums) const {
  if (sums.size() != 8) return {"test_perplexity", 0};
  const double train = sums[3] > 0 ? sums[2] / sums[3] : 0;
  const auto model_fingerprint = static_cast<std::uint32_t>(static_cast<std::uint64_t>(sums[6]));
  const auto assigned_fingerprint = static_cast<std::uint32_t>(static_cast<std::uint64_t>(sums[7]));
  return {"test_perplexity",
          sums[1] > 0 ? std::exp(-sums[0] / sums[1]) : 0,
          {{"train_log_likelihood", train},
           {"count_errors", sums[4]},
           {"negative_counts", sums[5]},
           {"assignment_mismatch", model_fingerprint == assigned_fingerprint ? 0.0 : 1.0}}};
}

}  // namespace stalelearn::apps::lda
