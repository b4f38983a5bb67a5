#include "apps/lda/lda_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "apps/lda/lda_state.h"
#include "apps/lda/register.h"
#include "framework/core/config_loader.h"
#include "apps/lda/lda_planted_defects.h"

namespace stalelearn::apps::lda {
namespace {

using internal::LdaState;
using internal::StateOf;

// Which slot of the word's row the kernel takes the token's old topic from:
// the old topic itself, or (planted defect, self-tests only) the next one.
// `shift` is 0, or 1 with the defect planted.
int TakenBack(int old_topic, int shift, int topics) {
  const int slot = old_topic + shift;
  return slot == topics ? 0 : slot;
}

// Groups a clock's tokens by document into state.grouped etc. (lda_state.h):
// a counting sort, O(tokens) with no allocation once the scratch has grown.
// Any visiting order is a valid Gibbs scan; grouping lets the sparse sampler
// set up each document once per clock.
void GroupByDocument(std::span<const std::int64_t> samples, std::span<const std::int32_t> token_doc,
                     LdaState& state) {
  std::vector<std::int64_t>& count = state.tokens_of_doc;
  state.group_doc.clear();
  for (std::int64_t s : samples) {
    const std::int32_t doc = token_doc[static_cast<std::size_t>(s)];
    if (count[static_cast<std::size_t>(doc)]++ == 0) state.group_doc.push_back(doc);
  }
  state.group_begin.clear();
  std::int64_t at = 0;
  for (std::int32_t doc : state.group_doc) {
    state.group_begin.push_back(at);
    std::int64_t& slot = count[static_cast<std::size_t>(doc)];
    at += std::exchange(slot, at);  // from now on: where the document's next token goes
  }
  state.group_begin.push_back(at);
  state.grouped.resize(samples.size());
  for (std::int64_t s : samples) {
    std::int64_t& next = count[static_cast<std::size_t>(token_doc[static_cast<std::size_t>(s)])];
    state.grouped[static_cast<std::size_t>(next++)] = s;
  }
  for (std::int32_t doc : state.group_doc) count[static_cast<std::size_t>(doc)] = 0;
}

}  // namespace

LdaApp::LdaApp(std::string dataset, TokenCorpus corpus, std::vector<std::int64_t> train,
               std::vector<std::int64_t> test, LdaParams params)
    : dataset_(std::move(dataset)),
      corpus_(std::move(corpus)),
      train_(std::move(train)),
      test_(std::move(test)),
      params_(params),
      word_topic_(tables_.AddInt("word_topic", static_cast<std::int64_t>(corpus_.vocabulary.size()),
                                 params_.priors.topics)),
      totals_(tables_.AddInt("topic_totals", 1, params_.priors.topics)) {
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
  const std::span<std::int32_t> totals = model.Row(totals_, runtime::RowId{0});
  for (std::int64_t s : state.samples) {
    const auto k = static_cast<std::int32_t>(ctx.random.Below(topics));
    const auto i = static_cast<std::size_t>(s);
    state.topic[i] = k;
    state.doc_topic[static_cast<std::size_t>(token_doc_[i]) * static_cast<std::size_t>(topics) +
                    static_cast<std::size_t>(k)] += 1;
    model.Row(word_topic_, runtime::RowId{token_word_[i]})[k] += 1;
    totals[k] += 1;
  }
  ctx.work.random_row_accesses += static_cast<std::int64_t>(state.samples.size());
}

void LdaApp::RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const {
  rows.push_back({word_topic_.id, runtime::RowId{token_word_[static_cast<std::size_t>(sample)]}});
  rows.push_back({totals_.id, runtime::RowId{0}});
}

void LdaApp::UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                         runtime::KernelContext& ctx) const {
  LdaState& state = StateOf(ctx);
  GroupByDocument(samples, token_doc_, state);
  state.word_topics.NextClock();
  // Planted defects are set before a run starts: one look per clock.
  const int shift = DefectPlanted(kKernelTakesBackWrongCount) ? 1 : 0;
  if (params_.sampler == SamplerKind::kPlain) {
    UpdatePlain(shift, model, ctx);
  } else {
    UpdateSparse(shift, model, ctx);
  }
  const auto n = static_cast<std::int64_t>(samples.size());
  ctx.work.random_row_accesses += 2 * n;
  ctx.work.bytes += 16 * n;
}

// The word's row in this clock's view (fetched from the view once a clock).
std::int32_t* LdaApp::WordRow(std::int32_t word, runtime::ModelView& model, WordTopicSets& sets) const {
  std::int32_t* row = sets.Row(word);
  if (row != nullptr) [[likely]] return row;
  return sets.Fill(word, model.Row(word_topic_, runtime::RowId{word}));
}

void LdaApp::UpdatePlain(int shift, runtime::ModelView& model, runtime::KernelContext& ctx) const {
  LdaState& state = StateOf(ctx);
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const std::span<std::int32_t> totals = model.Row(totals_, runtime::RowId{0});
  std::vector<double> scratch(width);
  for (std::size_t g = 0; g + 1 < state.group_begin.size(); ++g) {
    std::int32_t* doc_row = state.doc_topic.data() + static_cast<std::size_t>(state.group_doc[g]) * width;
    for (auto i = state.group_begin[g]; i < state.group_begin[g + 1]; ++i) {
      const auto t = static_cast<std::size_t>(state.grouped[static_cast<std::size_t>(i)]);
      const std::int32_t word = token_word_[t];
      std::int32_t* word_row = state.word_topics.Row(word);
      if (word_row == nullptr) {  // the clock's first token of the word
        word_row = state.word_topics.Remember(word, model.Row(word_topic_, runtime::RowId{word}));
      }
      const std::int32_t old_topic = state.topic[t];
      word_row[TakenBack(old_topic, shift, topics)] -= 1;  // matched by this rank's increment of the same assignment
      totals[old_topic] -= 1;
      doc_row[old_topic] -= 1;
      const int k = SamplePlain(params_.priors, {word_row, width}, totals, {doc_row, width}, ctx.random.Uniform(),
                                scratch);
      word_row[k] += 1;
      totals[k] += 1;
      doc_row[k] += 1;
      state.topic[t] = k;
    }
  }
  ctx.work.flops += static_cast<double>(state.grouped.size()) * 6.0 * topics;
}

void LdaApp::UpdateSparse(int shift, runtime::ModelView& model, runtime::KernelContext& ctx) const {
  LdaState& state = StateOf(ctx);
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const std::span<std::int32_t> totals = model.Row(totals_, runtime::RowId{0});
  WordTopicSets& sets = state.word_topics;
  SparseTopicSampler sampler(params_.priors);
  sampler.BeginBatch(totals);
  double work = topics;
  for (std::size_t g = 0; g + 1 < state.group_begin.size(); ++g) {
    const std::span<std::int32_t> doc_row(
        state.doc_topic.data() + static_cast<std::size_t>(state.group_doc[g]) * width, width);
    sampler.BeginDocument(doc_row, totals);
    work += topics;
    for (auto i = state.group_begin[g]; i < state.group_begin[g + 1]; ++i) {
      const auto t = static_cast<std::size_t>(state.grouped[static_cast<std::size_t>(i)]);
      const std::int32_t word = token_word_[t];
      std::int32_t* word_row = WordRow(word, model, sets);
      const std::int32_t old_topic = state.topic[t];
      const int taken = TakenBack(old_topic, shift, topics);
      sets.Decremented(word, taken, --word_row[taken]);  // matched by this rank's increment of the same assignment
      totals[old_topic] -= 1;
      doc_row[old_topic] -= 1;
      sampler.Removed(old_topic, doc_row[old_topic], totals[old_topic]);
      const int k = sampler.Sample(word_row, sets.Topics(word), ctx.random.Uniform());
      sets.Incremented(word, k, ++word_row[k]);
      totals[k] += 1;
      doc_row[k] += 1;
      sampler.Added(k, doc_row[k], totals[k]);
      state.topic[t] = k;
    }
  }
  // Per token: the set walk (a multiply-add and a compare per topic in the
  // word's set) and ~20 for the two cache updates.
  ctx.work.flops += work + 2.0 * static_cast<double>(sampler.word_terms_walked()) +
                    20.0 * static_cast<double>(state.grouped.size());
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
