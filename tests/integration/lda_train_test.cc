// apps/lda trained end to end with ranks as threads on the local backend.
//   - Invariants in every mode (BSP = SSP s=0, SSP s=2 with one and two
//     memory ranks, ASP, DIRECT, ALLREDUCE, SSP on the timing backend), on a
//     synthetic corpus: at every evaluation each word's counts sum to its
//     training tokens, the topic totals to all of them, and no count is
//     negative; the final counts equal those of every rank's final topic
//     assignments (exactly once, I4, for int32 counts under staleness).
//   - The planted defect kKernelTakesBackWrongCount (the kernel removes a
//     token's count from the next topic's slot) keeps every sum right but
//     drives counts negative: the same check reports it, so it can fail
//     (also in the planted-defect self-test's table, tests/selftest).
//   The bodies are in lda_checks.cc.
//   - Quality: on a corpus drawn from 4 planted topics, the trained model's
//     held-out perplexity beats the unigram model's by a wide margin, and a
//     model trained for too short a time to move does not; on Brown (when
//     fetched) apps/lda/brown.pbtxt's settings for 15 epochs under 3:1 beat
//     the unigram perplexity by >= 15%.
#include <fmt/format.h>
#include <gtest/gtest.h>


#include "apps/lda/datasets.h"
#include "apps/lda/lda_app.h"
#include "apps/lda/lda_planted_defects.h"
#include "apps/lda/register.h"
#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/core/planted_defect.h"
#include "framework/runtime/registries.h"
#include "tests/integration/app_api_support.h"
#include "tests/integration/lda_checks.h"
#include "tests/integration/train_support.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::testing {
namespace {

using apps::lda::LdaApp;

class LdaInvariants : public ::testing::TestWithParam<LdaModeCase> {};

TEST_P(LdaInvariants, CountsMatchTheTokensAndTheAssignmentsAndNeverGoNegative) {
  CheckLdaCountsExact(GetParam());
}

// The plain kernel (app.lda.sampler = "plain") keeps the same invariants: its
// bookkeeping (take back the old topic, add the new) is its own code.
TEST(LdaPlainSampler, CountsMatchTheTokensAndTheAssignmentsAndNeverGoNegative) {
  CheckLdaCountsExact({"ssp2_3x1_plain", "SSP", 2, 3, 1}, apps::lda::SamplerKind::kPlain);
}

INSTANTIATE_TEST_SUITE_P(EveryMode, LdaInvariants,
                         ::testing::Values(LdaModeCase{"bsp_2x1", "SSP", 0, 2, 1},
                                           LdaModeCase{"ssp2_3x1", "SSP", 2, 3, 1},
                                           LdaModeCase{"ssp2_2x2", "SSP", 2, 2, 2},
                                           LdaModeCase{"asp_3x1", "ASP", 0, 3, 1},
                                           LdaModeCase{"essp2_3x1", "ESSP", 2, 3, 1},
                                           LdaModeCase{"direct_2x1", "DIRECT", 0, 2, 1},
                                           LdaModeCase{"allreduce_3", "ALLREDUCE", 0, 3, 0},
                                           LdaModeCase{"timing_ssp2_2x1", "SSP", 2, 2, 1, /*timing=*/true}),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(LdaInvariantsSelfTest, AKernelThatTakesBackTheWrongCountIsCaught) {
  const std::unique_ptr<LdaApp> app = SyntheticLda();
  const proto::Config config = ApiConfig({"ssp2_2x1", "SSP", 2, 2, 1}, 2, 256);
  ScopedPlantedDefect planted(apps::lda::kKernelTakesBackWrongCount);
  const proto::Report report = RunLocal(config, *app, 3).report();
  EXPECT_GT(report.final().metrics().at("negative_counts"), 0);
  EXPECT_EQ(report.final().metrics().at("count_errors"), 0) << "the defect keeps every sum right";
  EXPECT_NE(LdaCountProblems(report).find(kLdaNegativeCountMessage), std::string::npos) << LdaCountProblems(report);
}

TEST(LdaQuality, PlantedTopicsBeatTheUnigramModelAndAnUntrainedModelDoesNot) {
  const std::unique_ptr<LdaApp> app = SyntheticLda();
  const double unigram = app->UnigramPerplexity();
  proto::Config config = ApiConfig({"ssp1_2x1", "SSP", 1, 2, 1}, /*epochs=*/30, 256);
  config.mutable_training()->set_eval_every_epochs(30);
  const double trained = RunLocal(config, *app, 3).report().final().value();
  // One sweep from random topics: the counts are still close to uniform.
  config.mutable_training()->set_epochs(1);
  config.mutable_training()->set_eval_every_epochs(1);
  const double untrained = RunLocal(config, *app, 3).report().final().value();
  // Each document mixes 2 of 4 topics of 30 words (+ shared ones): about
  // 40 likely words against the unigram model's 140.
  EXPECT_LT(trained, 0.6 * unigram) << "trained " << trained << ", unigram " << unigram;
  EXPECT_GT(untrained, 0.85 * unigram) << "untrained " << untrained << ", unigram " << unigram;
}

TEST(LdaQuality, BrownWithItsConfigBeatsTheUnigramModel) {
  data::DatasetCatalog catalog;
  ThrowIfError(apps::lda::RegisterDatasets(catalog));
  const std::filesystem::path file = data::DatasetPath(*ValueOrThrow(catalog.Find("brown")),
                                                       data::testing::FetchedDataDir());
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh brown";
  runtime::Registries registries;
  ThrowIfError(apps::lda::RegisterApp(registries));
  const std::vector<std::string> overrides = {"cluster.memory_ranks=1", "backend.name=local", "output.quiet=true",
                                              "training.epochs=15", "training.eval_every_epochs=15"};
  const proto::Config config = ValueOrThrow(
      config::LoadConfig(STALELEARN_SOURCE_DIR "/apps/lda/brown.pbtxt", overrides, ValueOrThrow(registries.Schema())));
  const std::unique_ptr<LdaApp> app = ValueOrThrow(apps::lda::LoadLdaApp(config, file));
  const double unigram = app->UnigramPerplexity();
  const proto::Report report = RunLocal(config, *app, /*world_size=*/4).report();
  EXPECT_EQ(report.compute_ranks(), 3);
  EXPECT_LT(report.final().value(), 0.85 * unigram) << "unigram perplexity " << unigram;
  EXPECT_EQ(LdaCountProblems(report), "");
}

}  // namespace
}  // namespace stalelearn::testing
