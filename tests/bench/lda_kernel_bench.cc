// The LDA app's Gibbs kernel (apps/lda/lda_app.cc, UpdateBatch) alone, one
// thread: tokens per CPU-second of the sparse (SparseLDA buckets) and the
// plain (O(K) reference) samplers, on a replica (model::Replica: what a
// compute rank trains on, touch tracking included) with the deltas drained
// at every clock, as a compute rank of apps/lda/brown.pbtxt sees it: a third
// of the training documents, 8192 tokens per clock, shuffled every epoch.
//
// The corpus is the Brown corpus when deploy/fetch-data.sh fetched it
// ($STALELEARN_DATA or ~/.cache/stalelearn), else a synthetic one of Brown's
// size (500 documents of ~780 tokens over 10,827 words, each document mixing
// 3 of 20 Zipf-shaped topics). Before timing, 5 sweeps take the counts from
// their random start towards the sparse rows of a trained model (the sparse
// sampler's cost depends on that sparsity). BM_LdaEvaluatePart times one
// compute rank's part of an evaluation on the same model.
//
//   build/tests/bench/lda_kernel_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "apps/lda/corpus.h"
#include "apps/lda/lda_app.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/model/replica.h"
#include "framework/runtime/random_stream.h"

namespace stalelearn::apps::lda {
namespace {

constexpr std::int64_t kTokensPerClock = 8192;
constexpr int kComputeRanks = 3;
constexpr int kWarmUpSweeps = 5;

TokenCorpus SyntheticBrown() {
  constexpr int kDocuments = 500, kWords = 10827, kTopics = 20, kTopicsPerDocument = 3, kMeanLength = 780;
  std::mt19937_64 random(17);
  // Each topic: a Zipf(1) distribution over its own random order of the words.
  std::vector<double> zipf(kWords);
  for (int r = 0; r < kWords; ++r) zipf[r] = 1.0 / (r + 1);
  std::discrete_distribution<int> rank_of(zipf.begin(), zipf.end());
  std::vector<std::vector<std::uint32_t>> word_at_rank(kTopics, std::vector<std::uint32_t>(kWords));
  for (auto& order : word_at_rank) {
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), random);
  }
  TokenCorpus corpus;
  for (int w = 0; w < kWords; ++w) corpus.vocabulary.push_back("w" + std::to_string(w));
  std::uniform_int_distribution<int> topic_of(0, kTopics - 1), length_of(kMeanLength / 2, 3 * kMeanLength / 2);
  for (int d = 0; d < kDocuments; ++d) {
    std::vector<int> mine(kTopicsPerDocument);
    for (int& t : mine) t = topic_of(random);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(length_of(random)));
    for (std::uint32_t& w : words) {
      w = word_at_rank[static_cast<std::size_t>(mine[random() % kTopicsPerDocument])][rank_of(random)];
    }
    corpus.document_names.push_back("d" + std::to_string(d));
    corpus.documents.push_back(std::move(words));
  }
  return corpus;
}

// Brown if fetched, else the synthetic stand-in; `label` says which.
TokenCorpus BrownSizedCorpus(std::string& label) {
  const char* data = std::getenv("STALELEARN_DATA");
  const char* home = std::getenv("HOME");
  const std::filesystem::path file =
      data::ResolveDataDir(data ? std::optional<std::string_view>(data) : std::nullopt,
                           home ? std::optional<std::string_view>(home) : std::nullopt) /
      "brown" / "brown.docs";
  if (std::filesystem::exists(file)) {
    label = "brown";
    return ValueOrThrow(ReadTokenCorpus(file));
  }
  label = "synthetic-brown";
  return SyntheticBrown();
}

// Compute rank 0 of 3 training on a replica, clock by clock.
class TrainingRank {
 public:
  TrainingRank(const LdaApp& app, std::span<const std::int64_t> mine)
      : app_(app),
        replica_(app_.Tables()),
        local_(app_.CreateLocalState(info_, mine)),
        order_(mine.begin(), mine.end()),
        at_(order_.size()) {
    runtime::RandomStream init_random = runtime::RandomStream::For(42, 0, -1);
    runtime::KernelContext init{info_, 0, -1, init_random, local_.get(), work_};
    app_.InitializeFromData(replica_, init);
    replica_.DrainDeltas([](model::TableId, model::RowId, std::span<const std::byte>) {});
    while (clock_ * kTokensPerClock < kWarmUpSweeps * static_cast<std::int64_t>(order_.size())) RunClock();
  }

  // One clock: the kernel on the next 8192 tokens, then the deltas drained.
  std::int64_t RunClock() {
    if (at_ == order_.size()) {  // a new epoch
      std::shuffle(order_.begin(), order_.end(), shuffle_);
      at_ = 0;
    }
    const std::size_t n = std::min<std::size_t>(kTokensPerClock, order_.size() - at_);
    runtime::RandomStream random = runtime::RandomStream::For(42, 0, clock_);
    runtime::KernelContext context{info_, 0, clock_, random, local_.get(), work_};
    app_.UpdateBatch(std::span(order_).subspan(at_, n), replica_, context);
    replica_.DrainDeltas([](model::TableId, model::RowId, std::span<const std::byte>) {});
    at_ += n;
    ++clock_;
    return static_cast<std::int64_t>(n);
  }

  // This rank's evaluation part on its replica's model.
  std::vector<double> EvaluatePart() {
    if (model_.empty()) model_ = model::MakeTableSet(app_.Tables());
    replica_.CopyHeldRowsTo(model_);
    return app_.EvaluatePart(model_, runtime::EvalContext{info_, local_.get()});
  }

 private:
  const LdaApp& app_;
  const runtime::RankInfo info_{model::ComputeIndex{0}, kComputeRanks, 42};
  model::Replica replica_;
  std::unique_ptr<runtime::LocalState> local_;
  runtime::WorkCounters work_;
  std::vector<std::int64_t> order_;
  std::mt19937_64 shuffle_{3};
  std::int64_t clock_ = 0;
  std::size_t at_;
  model::TableSet model_;
};

// One app and warmed-up rank per (topics, sampler), built at the first use:
// google-benchmark calls a benchmark function several times, and each call
// goes on training the same rank.
struct Fixture {
  std::unique_ptr<LdaApp> app;
  std::vector<std::int64_t> mine;  // compute rank 0's tokens
  std::string corpus_label;
  std::unique_ptr<TrainingRank> rank;
};

Fixture& FixtureFor(int topics, SamplerKind sampler) {
  static std::map<std::pair<int, int>, Fixture> fixtures;
  static std::string label;
  static const TokenCorpus corpus = BrownSizedCorpus(label);
  Fixture& f = fixtures[{topics, static_cast<int>(sampler)}];
  if (f.app != nullptr) return f;
  f.corpus_label = label;
  std::vector<std::int64_t> train, test;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(corpus.documents.size()); ++d) {
    (d % 10 == 9 ? test : train).push_back(d);
  }
  LdaParams params;
  params.priors = {0.5, 0.1, static_cast<int>(corpus.vocabulary.size()), topics};
  params.sampler = sampler;
  f.app = std::make_unique<LdaApp>(f.corpus_label, corpus, std::move(train), std::move(test), params);
  for (std::int64_t g = 0; g < f.app->SampleGroups(); g += kComputeRanks) {
    const runtime::SampleRange range = f.app->GroupSamples(g);
    for (std::int64_t s = range.begin; s < range.end; ++s) f.mine.push_back(s);
  }
  f.rank = std::make_unique<TrainingRank>(*f.app, f.mine);
  return f;
}

// Args: topics, plain sampler (1) or sparse (0).
void BM_LdaKernel(benchmark::State& state) {
  const SamplerKind kind = state.range(1) != 0 ? SamplerKind::kPlain : SamplerKind::kSparse;
  const Fixture& f = FixtureFor(static_cast<int>(state.range(0)), kind);
  std::int64_t tokens = 0;
  for (auto _ : state) tokens += f.rank->RunClock();
  state.SetItemsProcessed(tokens);  // items_per_second: tokens per CPU-second
  state.SetLabel(f.corpus_label + (kind == SamplerKind::kPlain ? " plain" : " sparse"));
}

// One compute rank's part of an evaluation (lda_evaluation.cc: document
// completion of its share of the held-out documents with eval_sweeps 10,
// the training log-likelihood of its tokens, the count checks), after the
// warm-up. brown.pbtxt evaluates every 10 epochs: the time per iteration
// against 10 epochs' kernel time is the evaluation's share.
void BM_LdaEvaluatePart(benchmark::State& state) {
  const Fixture& f = FixtureFor(20, SamplerKind::kSparse);
  for (auto _ : state) benchmark::DoNotOptimize(f.rank->EvaluatePart());
  state.SetLabel(f.corpus_label);
}

BENCHMARK(BM_LdaKernel)
    ->Args({20, 0})
    ->Args({20, 1})
    ->Args({100, 0})
    ->Args({100, 1})
    ->ArgNames({"topics", "plain"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LdaEvaluatePart)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stalelearn::apps::lda

BENCHMARK_MAIN();
