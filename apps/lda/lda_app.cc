#include "apps/lda/lda_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "apps/lda/register.h"
#include "framework/core/config_loader.h"
#include "framework/core/planted_defect.h"

namespace stalelearn::apps::lda {
namespace {

// A compute rank's topic assignments and document-topic counts. Indexed by
// global training token / document so lookups need no map; entries of other
// ranks' tokens stay unused.
class LdaState final : public runtime::LocalState {
 public:
  LdaState(std::span<const std::int64_t> mine, std::size_t tokens, std::size_t documents, int topics,
           std::size_t words)
      : samples(mine.begin(), mine.end()),
        topic(tokens, -1),
        doc_topic(documents * static_cast<std::size_t>(topics)),
        word_stamp(words, -1),
        word_topics(words) {}

  std::vector<std::int64_t> samples;      // this rank's tokens
  std::vector<std::int32_t> topic;        // per training token
  std::vector<std::int32_t> doc_topic;    // per training document, K wide
  // Sparse sampler: the topics with n_wk > 0 in this batch's view of word w,
  // rebuilt the first time w appears in a batch (word_stamp != batch).
  std::int64_t batch = 0;
  std::vector<std::int64_t> word_stamp;
  std::vector<std::vector<std::int32_t>> word_topics;
};

LdaState& StateOf(runtime::KernelContext& ctx) { return *static_cast<LdaState*>(ctx.state); }

// The fingerprint's weight of one count: a 32-bit mix of its slot (slot =
// word * K + topic for word_topic, V * K + topic for the totals).
std::uint32_t SlotHash(std::uint64_t slot) {
  std::uint64_t z = (slot + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>(z ^ (z >> 31));
}

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

std::vector<std::int64_t> LdaApp::TrainingTokensPerWord() const {
  std::vector<std::int64_t> counts(corpus_.vocabulary.size());
  for (std::int32_t word : token_word_) counts[static_cast<std::size_t>(word)] += 1;
  return counts;
}

std::pair<double, double> LdaApp::CompleteDocument(std::int64_t doc, const runtime::TableSet& model,
                                                   std::span<const double> inverse_totals) const {
  const std::vector<std::uint32_t>& tokens = corpus_.documents[static_cast<std::size_t>(doc)];
  const std::size_t half = tokens.size() / 2;
  if (half == 0 || half == tokens.size()) return {0.0, 0.0};
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const double beta = params_.priors.beta, alpha = params_.priors.alpha;
  const model::RowBlock& word_topic = model[static_cast<std::size_t>(kWordTopic.value)];
  const auto phi = [&](std::uint32_t word, int k) {
    return (Clamped(word_topic.IntRow(word)[static_cast<std::size_t>(k)]) + beta) *
           inverse_totals[static_cast<std::size_t>(k)];
  };
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
      double total = 0;
      for (int k = 0; k < topics; ++k) {
        total += (doc_topic[static_cast<std::size_t>(k)] + alpha) * phi(tokens[t], k);
        cumulative[static_cast<std::size_t>(k)] = total;
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
    double p = 0;
    for (int k = 0; k < topics; ++k) p += mean_theta[static_cast<std::size_t>(k)] * phi(tokens[t], k);
    log_likelihood += std::log(p);
  }
  return {log_likelihood, static_cast<double>(tokens.size() - half)};
}

std::vector<double> LdaApp::EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const {
  const int topics = params_.priors.topics;
  const auto width = static_cast<std::size_t>(topics);
  const std::span<const std::int32_t> totals = model[static_cast<std::size_t>(kTotals.value)].IntRow(0);
  const double vocabulary_beta = params_.priors.vocabulary * params_.priors.beta;
  std::vector<double> inverse_totals(width);
  for (std::size_t k = 0; k < width; ++k) inverse_totals[k] = 1.0 / (Clamped(totals[k]) + vocabulary_beta);
  double test_ll = 0, test_tokens = 0;
  const auto ranks = static_cast<std::size_t>(std::max(1, ctx.info.compute_ranks));
  for (std::size_t i = static_cast<std::size_t>(ctx.info.rank.value); i < test_.size(); i += ranks) {
    const auto [ll, n] = CompleteDocument(test_[i], model, inverse_totals);
    test_ll += ll;
    test_tokens += n;
  }
  double train_ll = 0, train_tokens = 0;
  if (const auto* state = dynamic_cast<const LdaState*>(ctx.state)) {
    const model::RowBlock& word_topic = model[static_cast<std::size_t>(kWordTopic.value)];
    const double alpha = params_.priors.alpha, beta = params_.priors.beta;
    for (std::int64_t s : state->samples) {
      const auto i = static_cast<std::size_t>(s);
      const auto d = static_cast<std::size_t>(token_doc_[i]);
      const double length = static_cast<double>(doc_begin_[d + 1] - doc_begin_[d]);
      const std::span<const std::int32_t> row = word_topic.IntRow(token_word_[i]);
      double p = 0;
      for (std::size_t k = 0; k < width; ++k) {
        p += (state->doc_topic[d * width + k] + alpha) * (Clamped(row[k]) + beta) * inverse_totals[k];
      }
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
  const model::RowBlock& word_topic = model[static_cast<std::size_t>(kWordTopic.value)];
  CountCheck check;
  std::uint32_t fingerprint = 0;  // wraps: sums mod 2^32
  for (std::size_t w = 0; w < expected.size(); ++w) {
    const std::span<const std::int32_t> row = word_topic.IntRow(static_cast<std::int64_t>(w));
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < width; ++k) {
      sum += row[k];
      if (row[k] < 0) ++check.negative_counts;
      fingerprint += static_cast<std::uint32_t>(row[k]) * SlotHash(w * width + k);
    }
    if (sum != expected[w]) ++check.count_errors;
  }
  const std::span<const std::int32_t> totals = model[static_cast<std::size_t>(kTotals.value)].IntRow(0);
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
