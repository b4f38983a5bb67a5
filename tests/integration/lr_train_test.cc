// apps/lr trained end to end with ranks as threads on the local backend:
//   - heart_scale (SSP s=1, 2 compute + 1 memory rank): the trained model
//     beats two baselines measured in the same test, the majority class and
//     the same run with a learning rate too small to move the weights, by
//     margins a working kernel clears easily (measured: accuracy 0.870
//     against a majority of 0.556 and the same 0.87 for the tiny rate, whose
//     weights still point the right way; test log-loss 0.31-0.33 against
//     0.69). An LR kernel that never updates the weights predicts one class
//     (accuracy = that class's share) with log-loss log 2.
//   - spam with apps/lr/spam.pbtxt's settings under 3:1: test accuracy >= 0.98
//     (measured 0.9868-0.9934 over 25 runs; the majority class is 0.69, a
//     learning rate of 1e-6 gives 0.70).
// Skipped with the fetch command when the data set is not fetched.
#include <gtest/gtest.h>

#include <cmath>

#include "apps/lr/datasets.h"
#include "apps/lr/lr_app.h"
#include "apps/lr/register.h"
#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/runtime/registries.h"
#include "tests/integration/train_support.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::testing {
namespace {

std::filesystem::path FetchedLrDataset(const std::string& name) {
  data::DatasetCatalog catalog;
  ThrowIfError(apps::lr::RegisterDatasets(catalog));
  return data::DatasetPath(*ValueOrThrow(catalog.Find(name)), data::testing::FetchedDataDir());
}

void SetLearningRate(proto::Config& config, float learning_rate) {
  apps::lr::LrConfig lr;
  lr.set_learning_rate(learning_rate);
  config.mutable_app()->mutable_params()->PackFrom(lr);
}

// The share of the most frequent label in the app's test set.
double MajorityClassAccuracy(const apps::lr::LrApp& app) {
  double ones = 0;
  for (std::int64_t r : app.test_rows()) ones += app.data().labels[static_cast<std::size_t>(r)];
  const double share = ones / static_cast<double>(app.test_rows().size());
  return std::max(share, 1 - share);
}

struct Scores {
  double accuracy;
  double log_loss;
};

Scores Train(const proto::Config& config, const std::filesystem::path& file, int world_size) {
  const std::unique_ptr<apps::lr::LrApp> app = ValueOrThrow(apps::lr::LoadLrApp(config, file));
  const proto::Report report = RunLocal(config, *app, world_size).report();
  EXPECT_EQ(report.final().metric(), "test_accuracy");
  return {report.final().value(), report.final().metrics().at("test_log_loss")};
}

TEST(LrTraining, HeartScaleBeatsTheMajorityClassAndAnUntrainedModel) {
  const std::filesystem::path file = FetchedLrDataset("heart_scale");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh heart_scale";
  proto::Config config = TestConfig("SSP", 1, /*memory_ranks=*/1, /*epochs=*/20, /*samples_per_clock=*/16);
  config.mutable_data()->set_name("heart_scale");
  config.mutable_data()->set_test_fraction(0.2);
  SetLearningRate(config, 0.05f);
  const double majority = MajorityClassAccuracy(*ValueOrThrow(apps::lr::LoadLrApp(config, file)));
  const Scores trained = Train(config, file, 3);
  SetLearningRate(config, 1e-6f);
  const Scores untrained = Train(config, file, 3);

  EXPECT_GE(trained.accuracy, majority + 0.15)
      << "trained " << trained.accuracy << ", majority class " << majority;
  EXPECT_LE(trained.log_loss, untrained.log_loss - 0.2)
      << "trained log-loss " << trained.log_loss << ", with learning rate 1e-6 " << untrained.log_loss;
  EXPECT_NEAR(untrained.log_loss, std::log(2.0), 0.05) << "a learning rate of 1e-6 barely moves the weights";
}

TEST(LrTraining, SpamWithItsConfigReaches098UnderThreeComputeRanks) {
  const std::filesystem::path file = FetchedLrDataset("spam");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh spam";
  runtime::Registries registries;
  ThrowIfError(apps::lr::RegisterApp(registries));
  const std::vector<std::string> overrides = {"cluster.memory_ranks=1", "backend.name=local", "output.quiet=true"};
  const proto::Config config = ValueOrThrow(
      config::LoadConfig(STALELEARN_SOURCE_DIR "/apps/lr/spam.pbtxt", overrides, ValueOrThrow(registries.Schema())));
  const std::unique_ptr<apps::lr::LrApp> app = ValueOrThrow(apps::lr::LoadLrApp(config, file));
  const proto::Report report = RunLocal(config, *app, /*world_size=*/4).report();
  EXPECT_EQ(report.compute_ranks(), 3);
  EXPECT_EQ(report.curve_size(), config.training().epochs());
  EXPECT_GE(report.final().value(), 0.98) << "test accuracy; the majority class is " << MajorityClassAccuracy(*app);
  // Log-loss catches an overconfident model that accuracy misses: at the
  // config's former rate (0.2) the summed stale steps overshot and log-loss
  // ended at 0.6-0.9 on a loaded machine (zero weights give ln 2 = 0.69),
  // with accuracy still 0.985. At 0.05: 0.03-0.07 seen, loaded or not.
  EXPECT_LT(report.final().metrics().at("test_log_loss"), 0.3);
}

}  // namespace
}  // namespace stalelearn::testing
