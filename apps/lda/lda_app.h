// LDA by collapsed Gibbs sampling (sampler.h). One sample is one token of a
// training document; each document is a sample group, so its tokens stay on
// one compute rank.
//
// Tables (int32, sum merge):
//   0 "word_topic"   one row per word, width K: n_wk;
//   1 "topic_totals" one row, width K: n_k.
// Local state per compute rank (LdaState): the topic of each of its tokens
// and its documents' topic counts n_dk (exact: only this rank changes them).
// InitializeFromData draws random topics and writes their counts (summed over
// ranks before clock 0). A kernel step removes the token's topic (-1 in its
// word row and the totals: a decrement always matched by this rank's own
// earlier increment of that same assignment), samples, adds the new one.
// Stale replica counts are clamped at 0 when computing probabilities.
// Per clock the kernel groups its tokens by document (a counting sort), so
// the sparse sampler sets up each document once, and fetches each word's row
// from the view once (WordTopicSets: the row and its topic set); no
// allocation per token (lda_kernel_bench in tests/bench measures it).
//
// Evaluation in parts: held-out documents are dealt to compute ranks (every
// k-th); document completion estimates each one's topic mixture from its
// first half (eval_sweeps Gibbs sweeps with the trained counts fixed) and
// scores its second half: test_perplexity. Each rank also adds the
// log-likelihood of its training tokens under its n_dk and the model:
// train_log_likelihood (per token). The invariants of the counts ride along
// as further metrics (compute rank 0 checks the model it evaluates):
//   count_errors      words whose row does not sum to their training tokens,
//                     plus 1 if the topic totals do not sum to all training
//                     tokens (holds in every consistent view: a token's
//                     move changes one row and the totals by -1 and +1);
//   negative_counts   entries < 0 in either table;
//   assignment_mismatch  1 unless the counts equal those of every rank's
//                     current topic assignments (a fingerprint: sum over
//                     tokens of hash(word, topic) mod 2^32 against the same
//                     sum over the model's counts). Meaningful for the final
//                     model, which holds every rank's last clock; mid-run
//                     the model may lag other ranks' assignments.
//
// Immutable after construction; every method is const and thread-safe
// (framework/runtime/app.h); the mutable state is in LdaState.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/lda/corpus.h"
#include "apps/lda/lda_config.pb.h"
#include "apps/lda/sampler.h"
#include "apps/lda/word_topic_sets.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"

namespace stalelearn::apps::lda {

enum class SamplerKind { kSparse, kPlain };

struct LdaParams {
  LdaPriors priors;
  SamplerKind sampler = SamplerKind::kSparse;
  int eval_sweeps = 10;
  std::uint64_t seed = 0;  // held-out documents' completion sweeps
};

// Facets: local state, data-dependent initialisation, evaluation in parts,
// sample groups (documents).
class LdaApp final : public runtime::App,
                     public runtime::HasLocalState,
                     public runtime::InitializesFromData,
                     public runtime::EvaluatesInParts,
                     public runtime::GroupsSamples {
 public:
  // `train`/`test`: document indices into `corpus`.
  LdaApp(std::string dataset, TokenCorpus corpus, std::vector<std::int64_t> train, std::vector<std::int64_t> test,
         LdaParams params);

  std::string name() const override { return "lda"; }
  std::string dataset() const override { return dataset_; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return static_cast<std::int64_t>(token_word_.size()); }
  std::int64_t SampleGroups() const override { return static_cast<std::int64_t>(train_.size()); }
  runtime::SampleRange GroupSamples(std::int64_t group) const override;
  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo& info,
                                                        std::span<const std::int64_t> samples) const override;
  // Checkpoints: the topic assignments, document-topic counts and batch
  // number (lda_checkpoint.cc).
  Result<std::vector<std::byte>> SaveLocalState(const runtime::LocalState* state) const override;
  Status RestoreLocalState(std::span<const std::byte> bytes, runtime::LocalState* state) const override;
  void InitializeFromData(runtime::ModelView& model, runtime::KernelContext& ctx) const override;
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override;
  void UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                   runtime::KernelContext& ctx) const override;

  // {held-out log-likelihood, held-out tokens, training log-likelihood, training tokens}.
  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override;
  runtime::Evaluation CombineParts(std::span<const double> sums) const override;

  runtime::IntTable word_topic_table() const { return word_topic_; }
  runtime::IntTable totals_table() const { return totals_; }
  const LdaParams& params() const { return params_; }
  const TokenCorpus& corpus() const { return corpus_; }
  std::int32_t WordOf(std::int64_t sample) const { return token_word_[static_cast<std::size_t>(sample)]; }
  // Training tokens of each word (what its word_topic row must sum to).
  std::vector<std::int64_t> TrainingTokensPerWord() const;
  const std::vector<std::int64_t>& test_documents() const { return test_; }
  const std::vector<std::int64_t>& train_documents() const { return train_; }

  struct CountCheck {
    std::int64_t count_errors = 0;     // as count_errors above
    std::int64_t negative_counts = 0;  // entries < 0
    std::uint32_t fingerprint = 0;     // sum of count * hash(word, topic), mod 2^32
  };
  // Checks a full model (both tables) against the corpus.
  CountCheck CheckCounts(const runtime::TableSet& model) const;
  // The perplexity of the held-out second halves under the training tokens'
  // unigram frequencies (add-beta smoothed): the bar a topic model must beat.
  double UnigramPerplexity() const;

 private:
  // The kernels over the clock's tokens grouped by document (LdaState);
  // `shift` 1 plants kKernelTakesBackWrongCount.
  void UpdatePlain(int shift, runtime::ModelView& model, runtime::KernelContext& ctx) const;
  void UpdateSparse(int shift, runtime::ModelView& model, runtime::KernelContext& ctx) const;
  std::int32_t* WordRow(std::int32_t word, runtime::ModelView& model, WordTopicSets& lists) const;
  // Held-out document `doc`'s {log-likelihood of its second half, its tokens};
  // `phi`: word-major V x K, (n_wk + beta) / (n_k + V beta) of the model.
  std::pair<double, double> CompleteDocument(std::int64_t doc, std::span<const double> phi) const;

  std::string dataset_;
  TokenCorpus corpus_;
  std::vector<std::int64_t> train_;
  std::vector<std::int64_t> test_;
  LdaParams params_;
  runtime::TableList tables_;
  runtime::IntTable word_topic_;  // "word_topic": one row per word, width K
  runtime::IntTable totals_;      // "topic_totals": one row, width K
  std::vector<std::int32_t> token_word_;  // per training token
  std::vector<std::int32_t> token_doc_;   // per training token: index into train_
  std::vector<std::int64_t> doc_begin_;   // per training document + 1: first token
};

// Reads the token corpus, splits its documents (data.test_fraction, default
// 0.1, by a seeded shuffle with data.split_seed) and builds the app from the
// config's resolved lda section.
Result<std::unique_ptr<LdaApp>> LoadLdaApp(const proto::Config& config, const std::filesystem::path& file);

}  // namespace stalelearn::apps::lda
