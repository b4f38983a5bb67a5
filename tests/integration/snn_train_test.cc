// apps/snn trained end to end with ranks as threads on the local backend
// (2 compute + 1 memory rank, SSP, Adam merged on the memory rank), with
// apps/snn/mnist.pbtxt's settings on a small network and a subset of MNIST so
// it stays cheap: 6,000 training images, 1 epoch, scored on 500 test images.
// The trained network must clear 0.8 test accuracy and beat the same run with
// a memory-side step too small to move the weights (an untrained network
// scores about chance, 0.1) by 0.4; the report carries the observed activity,
// below the configured cap. A kernel that computes no gradient, or ships
// nothing, scores like the untrained one. Skipped when MNIST is not fetched.
#include <gtest/gtest.h>

#include "apps/snn/datasets.h"
#include "apps/snn/register.h"
#include "apps/snn/snn_app.h"
#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/runtime/registries.h"
#include "tests/integration/train_support.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::testing {
namespace {

proto::Report TrainSmallMnist(const std::filesystem::path& file, const std::string& merge_learning_rate) {
  runtime::Registries registries;
  ThrowIfError(apps::snn::RegisterApp(registries));
  const std::vector<std::string> overrides = {
      "cluster.memory_ranks=1", "backend.name=local", "output.quiet=true", "training.epochs=1",
      "training.samples_per_clock=32", "app.snn.train_limit=6000", "app.snn.test_limit=500",
      "app.snn.steps=10", "app.snn.hidden=64", "merge.*.adam.learning_rate=" + merge_learning_rate};
  const proto::Config config = ValueOrThrow(
      config::LoadConfig(STALELEARN_SOURCE_DIR "/apps/snn/mnist.pbtxt", overrides, ValueOrThrow(registries.Schema())));
  const std::unique_ptr<apps::snn::SnnApp> app = ValueOrThrow(apps::snn::LoadSnnApp(config, file));
  return RunLocal(config, *app, /*world_size=*/3).report();
}

TEST(SnnTraining, SmallMnistRunBeatsAnUntrainedNetwork) {
  data::DatasetCatalog catalog;
  ThrowIfError(apps::snn::RegisterDatasets(catalog));
  const auto file = data::DatasetPath(*ValueOrThrow(catalog.Find("mnist")), data::testing::FetchedDataDir());
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh mnist";
  const proto::Report trained = TrainSmallMnist(file, "0.003");
  const proto::Report untrained = TrainSmallMnist(file, "1e-9");
  EXPECT_EQ(trained.final().metric(), "test_accuracy");
  EXPECT_GE(trained.final().value(), 0.8) << "untrained " << untrained.final().value();
  EXPECT_GE(trained.final().value(), untrained.final().value() + 0.4)
      << "trained " << trained.final().value() << ", untrained " << untrained.final().value();
  const double activity = trained.final().metrics().at("activity");
  EXPECT_GT(activity, 0);
  EXPECT_LE(activity, 7.0 / 64) << "mnist.pbtxt caps hidden activity at 0.1: ceil(0.1 * 64) = 7 of 64 neurons per step";
}

}  // namespace
}  // namespace stalelearn::testing
