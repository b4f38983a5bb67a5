// EarlyStopping on hand-made curve points: the best evaluation by the
// metric's direction, the patience, min_delta, a further metric, and a
// metric the app does not report.
#include "framework/model/model_checksum.h"
#include "framework/runtime/early_stopping.h"

#include <gtest/gtest.h>

#include "framework/model/hash64.h"
#include "framework/model/row_block.h"

namespace stalelearn::runtime {
namespace {

proto::CurvePoint Point(double value, double extra = 0) {
  proto::CurvePoint point;
  point.set_metric_value(value);
  (*point.mutable_metrics())["test_log_loss"] = extra;
  return point;
}

// A one-row model holding `x`: each evaluated model has its own checksum.
TableSet Model(float x) {
  TableSet model = model::MakeTableSet({{"w", model::ElementType::kFloat32, 1, 1}});
  model[0].FloatRow(0)[0] = x;
  return model;
}

proto::EarlyStoppingConfig Config(int patience, double min_delta = 0, std::string metric = "",
                                  std::string direction = "") {
  proto::EarlyStoppingConfig config;
  config.set_patience(patience);
  config.set_min_delta(min_delta);
  config.set_metric(std::move(metric));
  config.set_direction(std::move(direction));
  return config;
}

TEST(EarlyStopping, KeepsTheLowestRmseAndStopsAfterThePatience) {
  EarlyStopping early(Config(2));
  const double rmse[] = {0.95, 0.90, 0.88, 0.89, 0.885};
  std::vector<bool> stops;
  for (int e = 0; e < 5; ++e) stops.push_back(*early.Observe(e + 1, Point(rmse[e]), "test_rmse", Model(rmse[e])));
  EXPECT_EQ(stops, (std::vector<bool>{false, false, false, false, true}));
  ASSERT_TRUE(early.best().has_value());
  EXPECT_EQ(early.best()->epoch(), 3);
  EXPECT_EQ(early.best()->value(), 0.88);
  EXPECT_EQ(early.best()->metric(), "test_rmse");
  EXPECT_EQ(early.best()->model_checksum(), model::HexDigest(model::ModelChecksum(Model(0.88f))))
      << "the best names the model it evaluated, not the last";
  EXPECT_FALSE(*early.Observe(6, Point(0.9), "test_rmse", Model(0.9f))) << "asks for the stop once";
}

TEST(EarlyStopping, AnImprovementResetsThePatience) {
  EarlyStopping early(Config(2));
  EXPECT_FALSE(*early.Observe(1, Point(0.9), "test_rmse", Model(1)));
  EXPECT_FALSE(*early.Observe(2, Point(0.95), "test_rmse", Model(2)));
  EXPECT_FALSE(*early.Observe(3, Point(0.85), "test_rmse", Model(3)));
  EXPECT_EQ(early.evaluations_since_best(), 0);
  EXPECT_FALSE(*early.Observe(4, Point(0.86), "test_rmse", Model(4)));
  EXPECT_TRUE(*early.Observe(5, Point(0.87), "test_rmse", Model(5)));
}

TEST(EarlyStopping, AccuracyIsBetterHigherAndMinDeltaMustBeBeaten) {
  EarlyStopping early(Config(1, /*min_delta=*/0.01));
  EXPECT_FALSE(*early.Observe(1, Point(0.90), "test_accuracy", Model(1)));
  EXPECT_TRUE(*early.Observe(2, Point(0.905), "test_accuracy", Model(2))) << "0.005 better is not 0.01 better";
  EXPECT_EQ(early.best()->value(), 0.90);
  EXPECT_TRUE(HigherIsBetter(Config(0), "test_accuracy"));
  EXPECT_FALSE(HigherIsBetter(Config(0), "perplexity"));
  EXPECT_TRUE(HigherIsBetter(Config(0, 0, "", "max"), "perplexity"));
  EXPECT_FALSE(HigherIsBetter(Config(0, 0, "", "min"), "test_accuracy"));
}

TEST(EarlyStopping, PatienceZeroNeverStopsButKeepsTheBest) {
  EarlyStopping early(Config(0));
  for (int e = 1; e <= 10; ++e) EXPECT_FALSE(*early.Observe(e, Point(0.5 + e), "loss", Model(e)));
  EXPECT_EQ(early.best()->epoch(), 1);
}

TEST(EarlyStopping, WatchesAFurtherMetricAndNamesAMissingOne) {
  EarlyStopping early(Config(1, 0, "test_log_loss"));
  EXPECT_FALSE(*early.Observe(1, Point(0.99, 0.2), "test_accuracy", Model(1)));
  EXPECT_TRUE(*early.Observe(2, Point(0.995, 0.3), "test_accuracy", Model(2))) << "log loss rose";
  EXPECT_EQ(early.best()->metric(), "test_log_loss");

  EarlyStopping missing(Config(1, 0, "auc"));
  const Result<bool> r = missing.Observe(1, Point(0.9), "test_accuracy", Model(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no metric 'auc' (it reports: test_accuracy, test_log_loss)"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace stalelearn::runtime
