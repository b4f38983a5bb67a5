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
// sampler's cost depends on that sparsity).
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

struct Fixture {
  std::unique_ptr<LdaApp> app;
  std::vector<std::int64_t> mine;  // compute rank 0's tokens
  std::string corpus_label;
};

// One app per (topics, sampler), built once: the corpus is read or drawn once.
const Fixture& FixtureFor(int topics, SamplerKind sampler) {
  static std::map<std::pair<int, int>, Fixture> fixtures;
  Fixture& f = fixtures[{topics, static_cast<int>(sampler)}];
  if (f.app != nullptr) return f;
  TokenCorpus corpus = BrownSizedCorpus(f.corpus_label);
  std::vector<std::int64_t> train, test;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(corpus.documents.size()); ++d) {
    (d % 10 == 9 ? test : train).push_back(d);
  }
  LdaParams params;
  params.priors = {0.5, 0.1, static_cast<int>(corpus.vocabulary.size()), topics};
  params.sampler = sampler;
  f.app = std::make_unique<LdaApp>(f.corpus_label, std::move(corpus), std::move(train), std::move(test), params);
  for (std::int64_t g = 0; g < f.app->SampleGroups(); g += kComputeRanks) {
    const runtime::SampleRange range = f.app->GroupSamples(g);
    for (std::int64_t s = range.begin; s < range.end; ++s) f.mine.push_back(s);
  }
  return f;
}

// Args: topics, plain sampler (1) or sparse (0).
void BM_LdaKernel(benchmark::State& state) {
  const auto topics = static_cast<int>(state.range(0));
  const SamplerKind kind = state.range(1) != 0 ? SamplerKind::kPlain : SamplerKind::kSparse;
  const Fixture& f = FixtureFor(topics, kind);
  const LdaApp& app = *f.app;
  model::Replica replica(app.Tables());
  const runtime::RankInfo info{model::ComputeIndex{0}, kComputeRanks, 42};
  std::unique_ptr<runtime::LocalState> local = app.CreateLocalState(info, f.mine);
  runtime::WorkCounters work;
  runtime::RandomStream init_random = runtime::RandomStream::For(42, 0, -1);
  runtime::KernelContext init{info, 0, -1, init_random, local.get(), work};
  app.InitializeFromData(replica, init);
  replica.DrainDeltas([](model::TableId, model::RowId, std::span<const std::byte>) {});

  std::vector<std::int64_t> order = f.mine;
  std::mt19937_64 shuffle(3);
  std::int64_t clock = 0;
  std::size_t at = order.size();
  const auto run_clock = [&] {
    if (at == order.size()) {  // a new epoch
      std::shuffle(order.begin(), order.end(), shuffle);
      at = 0;
    }
    const std::size_t n = std::min<std::size_t>(kTokensPerClock, order.size() - at);
    runtime::RandomStream random = runtime::RandomStream::For(42, 0, clock);
    runtime::KernelContext context{info, 0, clock, random, local.get(), work};
    app.UpdateBatch(std::span(order).subspan(at, n), replica, context);
    replica.DrainDeltas([](model::TableId, model::RowId, std::span<const std::byte>) {});
    at += n;
    ++clock;
    return static_cast<std::int64_t>(n);
  };
  while (clock * kTokensPerClock < kWarmUpSweeps * static_cast<std::int64_t>(order.size())) run_clock();

  std::int64_t tokens = 0;
  for (auto _ : state) tokens += run_clock();
  state.SetItemsProcessed(tokens);  // items_per_second: tokens per CPU-second
  state.SetLabel(f.corpus_label + (kind == SamplerKind::kPlain ? " plain" : " sparse"));
}

BENCHMARK(BM_LdaKernel)
    ->Args({20, 0})
    ->Args({20, 1})
    ->Args({100, 0})
    ->Args({100, 1})
    ->ArgNames({"topics", "plain"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace stalelearn::apps::lda

BENCHMARK_MAIN();
