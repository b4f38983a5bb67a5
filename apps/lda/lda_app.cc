#include "apps/lda/lda_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "apps/lda/lda_state.h"
#include "apps/lda/register.h"
#include "framework/core/config_loader.h"
#include "framework/core/planted_defect.h"

namespace stalelearn::apps::lda {
namespace {

using internal::LdaState;
using internal::StateOf;

// Which slot of the word's row the kernel takes the token's old topic from:
// the old topic itself, or (planted defect, self-tests only) the next one.
int TakenBack(int old_topic, int topics) {
  return DefectPlanted(PlantedDefect::kKernelTakesBackWrongCount) ? (old_topic + 1) % topics : old_topic;
}

}  // namespace

LdaApp::LdaApp(std::string dataset, TokenCorpus corpus, std::vector<std::int64_t> train,
               std::vector<std::int64_t> test, LdaParams params)
    : dataset_(std::move(dataset)),
      corpus_(std::move(corpus)),
      train_(std::move(train)),
      test_(std::move(test)),
      params_(params) {
  params_.priors.vocabulary = static_cast<int>(corpus_.vocabulary.size());
  doc_begin_.push_back(0);
  for (std::size_t d = 0; d < train_.size(); ++d) {
    for (std::uint32_t word : corpus_.documents[static_cast<std::size_t>(train_[d])]) {
      token_word_.push_back(static_cast<std::int32_t>(word));
      token_doc_.push_back(static_cast<std::int32_t>(d));
    }
    doc_begin_.push_back(static_cast<std::int64_t>(token_word_.size()));
  }
}

std::vector<runtime::TableSpec> LdaApp::Tables() const {
  const int topics = params_.priors.topics;
  return {{"word_topic", runtime::ElementType::kInt32, static_cast<std::int64_t>(corpus_.vocabulary.size()), topics},
          {"topic_totals", runtime::ElementType::kInt32, 1, topics}};
}

runtime::SampleRange LdaApp::GroupSamples(std::int64_t group) const {
  return {doc_begin_[static_cast<std::size_t>(group)], doc_begin_[static_cast<std::size_t>(group) + 1]};
}

std::unique_ptr<runtime::LocalState> LdaApp::CreateLocalState(const runtime::RankInfo&,
                                                              std::span<const std::int64_t> samples) const {
  return std::make_unique<LdaState>(samples, token_word_.size(), train_.size(), params_.priors.topics,
                                    corpus_.vocabulary.size());
}

void LdaApp::InitializeFromData(runtime::ModelView& model, runtime::KernelContext& ctx) const {
  LdaState& state = StateOf(ctx);
  const int topics = params_.priors.topics;
  const std::span<std::int32_t> totals = model.IntRow(kTotals, runtime::RowId{0});
  for (std::int64_t s : state.samples) {
    const auto k = static_cast<std::int32_t>(ctx.random.Below(topics));
    const auto i = static_cast<std::size_t>(s);
    state.topic[i] = k;
    state.doc_topic[static_cast<std::size_t>(token_doc_[i]) * static_cast<std::size_t>(topics) +
                    static_cast<std::size_t>(k)] += 1;
    model.IntRow(kWordTopic, runtime::RowId{token_word_[i]})[k] += 1;
    totals[k] += 1;
  }
  ctx.work.random_row_accesses += static_cast<std::int64_t>(state.samples.size());
}

void LdaApp::RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const {
  rows.push_back({kWordTopic, runtime::RowId{token_word_[static_cast<std::size_t>(sample)]}});
  rows.push_back({kTotals, runtime::RowId{0}});
}

void LdaApp::UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                         runtime::KernelContext& ctx) const {
  // Tokens are numbered document by document: sorting groups each document's
  // tokens (any visiting order is a valid Gibbs scan), so the sparse sampler
  // sets up a document once per batch.
  std::vector<std::int64_t> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  if (params_.sampler == SamplerKind::kPlain) {
    UpdatePlain(sorted, model, ctx);
  } else {
    UpdateSparse(sorted, model, ctx);
  }
  const auto n = static_cast<std::int64_t>(samples.size());
  ctx.work.random_row_accesses += 2 * n;
  ctx.work.bytes += 16 * n;
}

void LdaApp::UpdatePlain(std::span<const std::int64_t> sorted, runtime::ModelView& model,
                         runtime::KernelContext& ctx) const {
  LdaState& state = StateOf(ctx);
  const int topics = params_.priors.topics;
  const std::span<std::int32_t> totals = model.IntRow(kTotals, runtime::RowId{0});
  std::vector<double> scratch;
  for (std::int64_t s : sorted) {
    const auto i = static_cast<std::size_t>(s);
    const std::span<std::int32_t> word_row = model.IntRow(kWordTopic, runtime::RowId{token_word_[i]});
    const std::span<std::int32_t> doc_row(
        state.doc_topic.data() + static_cast<std::size_t>(token_doc_[i]) * static_cast<std::size_t>(topics),
        static_cast<std::size_t>(topics));
    const std::int32_t old_topic = state.topic[i];
    word_row[TakenBack(old_topic, topics)] -= 1;  // matched by this rank's increment of the same assignment
    totals[old_topic] -= 1;
    doc_row[old_topic] -= 1;
    const int k = SamplePlain(params_.priors, word_row, totals, doc_row, ctx.random.Uniform(), scratch);
    word_row[k] += 1;
    totals[k] += 1;
    doc_row[k] += 1;
    state.topic[i] = k;
  }
  ctx.work.flops += static_cast<double>(sorted.size()) * 6.0 * topics;
}

void LdaApp::UpdateSparse(std::span<const std::int64_t> sorted, runtime::ModelView& model,
                          runtime::KernelContext& ctx) const {
  LdaState& state = StateOf(ctx);
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const std::int64_t batch = ++state.batch;
  const std::span<std::int32_t> totals = model.IntRow(kTotals, runtime::RowId{0});
  SparseTopicSampler sampler(params_.priors);
  sampler.BeginBatch(totals);
  std::int32_t current_doc = -1;
  double work = topics;
  for (std::int64_t s : sorted) {
    const auto i = static_cast<std::size_t>(s);
    const std::int32_t word = token_word_[i];
    const std::span<std::int32_t> word_row = model.IntRow(kWordTopic, runtime::RowId{word});
    const std::span<std::int32_t> doc_row(state.doc_topic.data() + static_cast<std::size_t>(token_doc_[i]) * width,
                                          width);
    if (token_doc_[i] != current_doc) {
      current_doc = token_doc_[i];
      sampler.BeginDocument(doc_row, totals);
      work += topics;
    }
    std::vector<std::int32_t>& word_topics = state.word_topics[static_cast<std::size_t>(word)];
    if (state.word_stamp[static_cast<std::size_t>(word)] != batch) {
      // The view's row may have changed since the last batch (refresh): list
      // its present topics afresh; within the batch only this rank changes it.
      state.word_stamp[static_cast<std::size_t>(word)] = batch;
      word_topics.clear();
      for (int k = 0; k < topics; ++k) {
        if (word_row[k] > 0) word_topics.push_back(k);
      }
      work += topics / 4.0;  // an integer compare, not a division
    }
    const std::int32_t old_topic = state.topic[i];
    word_row[TakenBack(old_topic, topics)] -= 1;  // matched by this rank's increment of the same assignment
    totals[old_topic] -= 1;
    doc_row[old_topic] -= 1;
    sampler.TopicChanged(old_topic, doc_row, totals);
    const int k = sampler.Sample(word_row, word_topics, doc_row, ctx.random.Uniform());
    word_row[k] += 1;
    totals[k] += 1;
    doc_row[k] += 1;
    sampler.TopicChanged(k, doc_row, totals);
    if (word_row[k] > 0 && std::find(word_topics.begin(), word_topics.end(), k) == word_topics.end()) {
      word_topics.push_back(k);
    }
    state.topic[i] = k;
    work += 2.0 * static_cast<double>(word_topics.size()) + 20;
  }
  ctx.work.flops += work;
}

Result<std::unique_ptr<LdaApp>> LoadLdaApp(const proto::Config& config, const std::filesystem::path& file) {
  STALELEARN_ASSIGN_OR_RETURN(LdaConfig lda, config::UnpackAppParams<LdaConfig>(config));
  proto::Config scratch;  // a config built in code may carry no resolved section
  STALELEARN_RETURN_IF_ERROR(ResolveConfig(lda, scratch));
  STALELEARN_ASSIGN_OR_RETURN(TokenCorpus corpus, ReadTokenCorpus(file));
  const std::size_t documents = corpus.documents.size();
  if (documents < 2) return InvalidArgument(fmt::format("{}: needs at least 2 documents", file.string()));
  // Deterministic split: a seeded shuffle of the documents, the first
  // test_fraction of it held out (at least one document each side).
  std::vector<std::int64_t> order(documents);
  std::iota(order.begin(), order.end(), 0);
  runtime::RandomStream random(config.data().split_seed() ^ 0x6C6461ull);
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<std::size_t>(random.Below(static_cast<std::int64_t>(i)))]);
  }
  const double fraction = config.data().test_fraction() > 0 ? config.data().test_fraction() : 0.1;
  const auto held =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::llround(fraction * documents)), 1, documents - 1);
  std::vector<std::int64_t> test(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held));
  std::vector<std::int64_t> train(order.begin() + static_cast<std::ptrdiff_t>(held), order.end());
  std::ranges::sort(test);
  std::ranges::sort(train);
  LdaParams params;
  params.priors = {lda.alpha(), lda.beta(), static_cast<int>(corpus.vocabulary.size()), lda.topics()};
  params.sampler = lda.sampler() == "plain" ? SamplerKind::kPlain : SamplerKind::kSparse;
  params.eval_sweeps = lda.eval_sweeps();
  params.seed = config.seed();
  const std::string dataset = config.data().name().empty() ? file.filename().string() : config.data().name();
  return std::make_unique<LdaApp>(dataset, std::move(corpus), std::move(train), std::move(test), params);
}

}  // namespace stalelearn::apps::lda
