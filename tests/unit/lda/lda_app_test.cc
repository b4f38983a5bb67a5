// The lda app's loading and checks: config defaults and validation, the
// seed-fixed 10% document split, sample groups (a document's tokens stay
// together), the count checker on hand-made models (a negative count or a
// wrong row sum is reported), and the unigram baseline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "apps/lda/lda_app.h"
#include "apps/lda/register.h"
#include "framework/core/error.h"
#include "framework/model/row_block.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::apps::lda {
namespace {

// 20 documents "dN w0 w1 ... w(N mod 4)": word ids 0..3.
std::filesystem::path WriteCorpus(const data::testing::ScratchDir& dir) {
  std::string text = "# test corpus\n";
  for (int d = 0; d < 20; ++d) {
    text += "d" + std::to_string(d);
    for (int t = 0; t <= d % 4; ++t) text += " " + std::to_string(t);
    text += '\n';
  }
  dir.Write("t.vocab", "a\nb\nc\nd\n");
  return dir.Write("t.docs", text);
}

proto::Config ConfigWith(std::uint64_t split_seed, int topics = 3) {
  proto::Config config;
  config.mutable_data()->set_split_seed(split_seed);
  LdaConfig lda;
  lda.set_topics(topics);
  config.mutable_app()->set_name("lda");
  config.mutable_app()->mutable_params()->PackFrom(lda);
  return config;
}

TEST(LdaApp, ResolveConfigFillsDefaultsAndRejectsBadValues) {
  LdaConfig lda;
  proto::Config config;
  ASSERT_TRUE(ResolveConfig(lda, config).ok());
  EXPECT_EQ(lda.topics(), 20);
  EXPECT_EQ(lda.sampler(), "sparse");
  EXPECT_EQ(config.data().name(), "brown");
  for (auto spoil : std::vector<void (*)(LdaConfig&)>{
           [](LdaConfig& c) { c.set_topics(-1); }, [](LdaConfig& c) { c.set_alpha(-0.5); },
           [](LdaConfig& c) { c.set_beta(-1); }, [](LdaConfig& c) { c.set_sampler("fast"); },
           [](LdaConfig& c) { c.set_eval_sweeps(-2); }}) {
    LdaConfig bad;
    spoil(bad);
    const Status status = ResolveConfig(bad, config);
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("app.lda."), std::string::npos) << status.ToString();
  }
}

TEST(LdaApp, HoldsOutTenPercentOfTheDocumentsBySeed) {
  data::testing::ScratchDir dir;
  const std::filesystem::path file = WriteCorpus(dir);
  const auto a = ValueOrThrow(LoadLdaApp(ConfigWith(1), file));
  const auto again = ValueOrThrow(LoadLdaApp(ConfigWith(1), file));
  const auto other = ValueOrThrow(LoadLdaApp(ConfigWith(2), file));
  EXPECT_EQ(a->test_documents().size(), 2u);
  EXPECT_EQ(a->train_documents().size(), 18u);
  EXPECT_EQ(a->test_documents(), again->test_documents());
  EXPECT_NE(a->test_documents(), other->test_documents());
  std::int64_t tokens = 0;
  for (std::int64_t d : a->train_documents()) tokens += d % 4 + 1;
  EXPECT_EQ(a->TrainingSamples(), tokens);
  // Each training document is a sample group of its tokens, in order.
  ASSERT_EQ(a->SampleGroups(), 18);
  std::int64_t next = 0;
  for (std::int64_t g = 0; g < a->SampleGroups(); ++g) {
    const runtime::SampleRange range = a->GroupSamples(g);
    EXPECT_EQ(range.begin, next);
    EXPECT_EQ(range.end - range.begin, a->train_documents()[g] % 4 + 1);
    next = range.end;
  }
  EXPECT_EQ(next, tokens);
}

TEST(LdaApp, CountCheckReportsWrongSumsAndNegativeCounts) {
  data::testing::ScratchDir dir;
  const auto app = ValueOrThrow(LoadLdaApp(ConfigWith(1), WriteCorpus(dir)));
  model::TableSet model = model::MakeTableSet(app->Tables());
  // A consistent model: every token in topic (word mod 3).
  const std::vector<std::int64_t> per_word = app->TrainingTokensPerWord();
  for (std::size_t w = 0; w < per_word.size(); ++w) {
    model[0].IntRow(static_cast<std::int64_t>(w))[w % 3] = static_cast<std::int32_t>(per_word[w]);
    model[1].IntRow(0)[w % 3] += static_cast<std::int32_t>(per_word[w]);
  }
  const LdaApp::CountCheck good = app->CheckCounts(model);
  EXPECT_EQ(good.count_errors, 0);
  EXPECT_EQ(good.negative_counts, 0);
  // Move one count of word 0 to another topic and take one from a third:
  // the row still sums right, but one entry is -1.
  model::TableSet negative = model;
  negative[0].IntRow(0)[1] += 1;
  negative[0].IntRow(0)[2] -= 1;
  const LdaApp::CountCheck caught = app->CheckCounts(negative);
  EXPECT_EQ(caught.count_errors, 0);
  EXPECT_EQ(caught.negative_counts, 1);
  EXPECT_NE(caught.fingerprint, good.fingerprint);
  // A lost count: word 1's row and the totals are one short.
  model::TableSet lost = model;
  lost[0].IntRow(1)[1] -= 1;
  lost[1].IntRow(0)[1] -= 1;
  EXPECT_EQ(app->CheckCounts(lost).count_errors, 2);
}

TEST(LdaApp, UnigramPerplexityScoresTheSecondHalvesByTrainingFrequencies) {
  data::testing::ScratchDir dir;
  const auto app = ValueOrThrow(LoadLdaApp(ConfigWith(1), WriteCorpus(dir)));
  // Independently: document d holds words 0..d mod 4; the default beta is 0.1.
  std::vector<double> counts(4);
  double tokens = 0;
  for (std::int64_t d : app->train_documents()) {
    for (int w = 0; w <= d % 4; ++w) counts[w] += 1, tokens += 1;
  }
  double log_likelihood = 0, scored = 0;
  for (std::int64_t d : app->test_documents()) {
    const int length = static_cast<int>(d % 4) + 1;
    for (int w = length / 2; length / 2 > 0 && w < length; ++w) {
      log_likelihood += std::log((counts[w] + 0.1) / (tokens + 0.4));
      scored += 1;
    }
  }
  ASSERT_GT(scored, 0) << "the split left no held-out document of two or more tokens";
  EXPECT_NEAR(app->UnigramPerplexity(), std::exp(-log_likelihood / scored), 1e-9);
}

TEST(LdaApp, MissingOrBadCorpusIsAnError) {
  data::testing::ScratchDir dir;
  EXPECT_FALSE(LoadLdaApp(ConfigWith(1), dir.path() / "none.docs").ok());
  EXPECT_FALSE(LoadLdaApp(ConfigWith(1), dir.Write("one.docs", "only 0 1\n")).ok());
}

}  // namespace
}  // namespace stalelearn::apps::lda
