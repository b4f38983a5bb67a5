// apps/lr LoadLrApp: labels +1/-1 and 1/0 map to {1, 0}, any other label is
// a one-line error naming the file, and the train/test split is
// deterministic, disjoint and covers every row. On heart_scale (when
// deploy/fetch-data.sh heart_scale has fetched it) and on small files the
// test writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "apps/lr/datasets.h"
#include "apps/lr/lr_app.h"
#include "framework/core/error.h"
#include "framework/model/replica.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::apps::lr {
namespace {

using data::testing::ScratchDir;

proto::Config SplitConfig(std::uint64_t split_seed, double test_fraction) {
  proto::Config config;
  config.set_seed(7);
  config.mutable_data()->set_split_seed(split_seed);
  config.mutable_data()->set_test_fraction(test_fraction);
  return config;
}

std::filesystem::path FetchedHeartScale() {
  data::DatasetCatalog catalog;
  ThrowIfError(RegisterDatasets(catalog));
  return data::DatasetPath(*ValueOrThrow(catalog.Find("heart_scale")), data::testing::FetchedDataDir());
}

std::vector<float> Labels(const LrApp& app) { return app.data().labels; }

TEST(LoadLrApp, HeartScalePlusMinusLabelsBecomeOneAndZero) {
  const std::filesystem::path file = FetchedHeartScale();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh heart_scale";
  const data::SparseDataset raw = ValueOrThrow(data::ReadLibsvm(file));
  const std::unique_ptr<LrApp> app = ValueOrThrow(LoadLrApp(SplitConfig(3, 0.2), file));
  EXPECT_EQ(app->name(), "lr");
  EXPECT_EQ(app->features(), 13u);
  ASSERT_EQ(app->data().rows(), 270u);
  for (std::size_t r = 0; r < raw.rows(); ++r) {
    ASSERT_TRUE(raw.labels[r] == 1.0f || raw.labels[r] == -1.0f) << "heart_scale row " << r;
    EXPECT_EQ(app->data().labels[r], raw.labels[r] > 0 ? 1.0f : 0.0f) << "row " << r;
  }
  EXPECT_EQ(app->test_rows().size(), 54u) << "20% of 270 held out";
  EXPECT_EQ(app->TrainingSamples(), 216);
  // A sample touches its features' weights and the bias (the last row).
  std::vector<runtime::RowRef> rows;
  app->RowsOf(0, rows);
  const auto r0 = static_cast<std::size_t>(app->train_rows()[0]);
  EXPECT_EQ(rows.size(), raw.row_offsets[r0 + 1] - raw.row_offsets[r0] + 1);
  EXPECT_EQ(rows.back().row.value, 13);
}

TEST(LoadLrApp, ZeroOneLabelsAreKeptAndPlusMinusMapped) {
  const ScratchDir dir;
  const std::unique_ptr<LrApp> zero_one = ValueOrThrow(
      LoadLrApp(SplitConfig(1, 0.25), dir.Write("zero_one.libsvm", "1 1:0.5 3:1\n0 2:1\n0 1:1\n1 3:0.25\n")));
  EXPECT_EQ(Labels(*zero_one), (std::vector<float>{1, 0, 0, 1}));
  const std::unique_ptr<LrApp> plus_minus = ValueOrThrow(
      LoadLrApp(SplitConfig(1, 0.25), dir.Write("plus_minus.libsvm", "+1 1:0.5 3:1\n-1 2:1\n-1 1:1\n1 3:0.25\n")));
  EXPECT_EQ(Labels(*plus_minus), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(zero_one->features(), 3u);
  EXPECT_EQ(zero_one->dataset(), "zero_one.libsvm") << "without data.name the file names the data set";
}

TEST(LoadLrApp, LabelTwoIsAOneLineErrorNamingTheFile) {
  const ScratchDir dir;
  const std::filesystem::path file = dir.Write("three_classes.libsvm", "1 1:1\n0 2:1\n2 1:1 2:1\n");
  const Result<std::unique_ptr<LrApp>> app = LoadLrApp(SplitConfig(1, 0.2), file);
  ASSERT_FALSE(app.ok());
  EXPECT_EQ(app.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(app.status().message().find(file.string()), std::string::npos) << app.status().message();
  EXPECT_NE(app.status().message().find("label 2"), std::string::npos) << app.status().message();
  EXPECT_EQ(app.status().message().find('\n'), std::string::npos) << app.status().message();
}

TEST(LoadLrApp, SplitIsDeterministicDisjointAndCoversEveryRow) {
  const ScratchDir dir;
  std::string text;
  for (int r = 0; r < 97; ++r) text += std::to_string(r % 2) + " " + std::to_string(1 + r % 5) + ":1\n";
  const std::filesystem::path file = dir.Write("split.libsvm", text);
  const auto load = [&](std::uint64_t seed, double fraction) { return ValueOrThrow(LoadLrApp(SplitConfig(seed, fraction), file)); };

  const std::unique_ptr<LrApp> a = load(11, 0.2), b = load(11, 0.2), other_seed = load(12, 0.2), half = load(11, 0.5);
  EXPECT_EQ(a->train_rows(), b->train_rows()) << "same seed, same split";
  EXPECT_EQ(a->test_rows(), b->test_rows());
  EXPECT_NE(a->test_rows(), other_seed->test_rows()) << "the split seed chooses the test rows";
  EXPECT_EQ(a->test_rows().size(), 19u) << "round(0.2 * 97)";
  EXPECT_EQ(half->test_rows().size(), 49u) << "round(0.5 * 97)";
  for (const LrApp* app : {a.get(), other_seed.get(), half.get()}) {
    std::vector<std::int64_t> all = app->train_rows();
    all.insert(all.end(), app->test_rows().begin(), app->test_rows().end());
    std::ranges::sort(all);
    std::vector<std::int64_t> every(97);
    for (int r = 0; r < 97; ++r) every[static_cast<std::size_t>(r)] = r;
    EXPECT_EQ(all, every) << "train and test are disjoint and cover every row";
    EXPECT_EQ(app->TrainingSamples(), static_cast<std::int64_t>(app->train_rows().size()));
  }
  // Not simply the first rows: the split is a shuffle.
  EXPECT_GT(*std::ranges::max_element(a->test_rows()), 19) << "the test rows are not the first 19";
}

}  // namespace
}  // namespace stalelearn::apps::lr

namespace stalelearn::apps::lr {
namespace {

// One Update is one SGD step of the L2-regularised log-loss on the sample's
// nonzeros and the bias: w_j -= lr (g x_j + l2 w_j), bias -= lr g, with
// g = sigmoid(margin) - label. An l2 large enough to show (0.5): a kernel
// that dropped the L2 term, or flipped the gradient's sign, gives other weights.
TEST(LrApp, UpdateIsOneRegularisedLogLossStep) {
  data::SparseDataset data;
  data.labels = {1.0f};
  data.row_offsets = {0, 2};
  data.columns = {0, 2};
  data.values = {1.0f, 2.0f};
  data.num_columns = 3;
  const LrApp app("tiny", data, {0}, {}, LrParams{0.1f, 0.5f, false});
  model::Replica replica(app.Tables());
  auto& t = replica.mutable_tables();
  t[0].FloatRow(0)[0] = 0.5f;
  t[0].FloatRow(2)[0] = -0.25f;
  t[0].FloatRow(3)[0] = 0.125f;  // the bias (row num_columns)
  runtime::WorkCounters work;
  runtime::RandomStream random(1);
  runtime::KernelContext ctx{runtime::RankInfo{}, 0, 0, random, nullptr, work};
  app.Update(0, replica, ctx);
  const double margin = 0.5 * 1 + -0.25 * 2 + 0.125;  // 0.125
  const double g = 1 / (1 + std::exp(-margin)) - 1;
  EXPECT_FLOAT_EQ(t[0].FloatRow(0)[0], static_cast<float>(0.5 - 0.1 * (g * 1 + 0.5 * 0.5)));
  EXPECT_FLOAT_EQ(t[0].FloatRow(2)[0], static_cast<float>(-0.25 - 0.1 * (g * 2 + 0.5 * -0.25)));
  EXPECT_FLOAT_EQ(t[0].FloatRow(3)[0], static_cast<float>(0.125 - 0.1 * g));
  EXPECT_EQ(t[0].FloatRow(1)[0], 0.0f);  // not in the sample: untouched
}

}  // namespace
}  // namespace stalelearn::apps::lr
