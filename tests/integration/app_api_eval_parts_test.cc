// App API, evaluation in parts (EvaluatesInParts / EvaluatePart /
// CombineParts): each compute rank scores its share of a test set, the
// runtime adds the parts over ranks and the app combines the sums. The
// combined metric (a weighted mean: a ratio, so a missing or doubled part
// shows) must equal the whole-model evaluation of the same final model, for
// 1, 2 and 3 compute ranks, and the curve has one point per evaluation epoch.
#include <gtest/gtest.h>

#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;

constexpr std::int64_t kRows = 7;
constexpr std::int64_t kTestItems = 101;  // not a multiple of 2 or 3

// Training adds 1 + s mod 3 to row s mod kRows. Test item i reads row i mod
// kRows with weight 1 + i mod 4; the metric is the weighted mean of what the
// items read. Rank k scores the items i with i mod compute_ranks == k.
class WeightedMeanApp final : public runtime::SampleKernelApp, public runtime::EvaluatesInParts {
 public:
  explicit WeightedMeanApp(std::int64_t samples) : samples_(samples) {}

  std::string name() const override { return "weighted_mean"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({counts_.id, RowId{sample % kRows}});
  }
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext&) const override {
    model.Row(counts_, RowId{sample % kRows})[0] += static_cast<std::int32_t>(1 + sample % 3);
  }

  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override {
    return Score(model, ctx.info.rank.value, ctx.info.compute_ranks);
  }
  runtime::Evaluation CombineParts(std::span<const double> sums) const override {
    return {"weighted_mean", sums[1] > 0 ? sums[0] / sums[1] : -1.0, {{"items", sums[2]}}};
  }

  // The metric of the whole model on one rank, without parts.
  runtime::Evaluation WholeEvaluation(const runtime::TableSet& model) const {
    const std::vector<double> all = Score(model, 0, 1);
    return CombineParts(all);
  }

  runtime::TableSet ExpectedModel(int epochs) const {
    runtime::TableSet expected = model::MakeTableSet(Tables());
    for (std::int64_t s = 0; s < samples_; ++s) {
      expected[counts_.id.value].IntRow(s % kRows)[0] += static_cast<std::int32_t>(epochs * (1 + s % 3));
    }
    return expected;
  }

 private:
  // {sum of weight * value, sum of weights, items} over items i = rank (mod ranks).
  std::vector<double> Score(const runtime::TableSet& model, int rank, int ranks) const {
    double weighted = 0, weights = 0, items = 0;
    for (std::int64_t i = rank; i < kTestItems; i += ranks) {
      const double w = static_cast<double>(1 + i % 4);
      weighted += w * runtime::Row(model, counts_, i % kRows)[0];
      weights += w;
      items += 1;
    }
    return {weighted, weights, items};
  }

  std::int64_t samples_;
  runtime::TableList tables_;
  runtime::IntTable counts_ = tables_.AddInt("counts", kRows, 1);  // the one table
};

class EvaluationInParts : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(EvaluationInParts, CombinedPartsEqualTheWholeModelEvaluationAtEveryEvaluationEpoch) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 4, kEvalEvery = 2, kSamples = 90, kPerClock = 8;
  const WeightedMeanApp app(kSamples);
  proto::Config config = ApiConfig(c, kEpochs, kPerClock);
  config.mutable_training()->set_eval_every_epochs(kEvalEvery);
  const LocalRun run = RunLocal(config, app, WorldSize(c));
  const proto::Report& report = run.report();

  const runtime::TableSet final_model = app.ExpectedModel(kEpochs);
  ASSERT_EQ(report.model_checksum(), ChecksumOf(final_model)) << "the final model is not the exact counts";
  const runtime::Evaluation whole = app.WholeEvaluation(final_model);
  EXPECT_EQ(report.final().metric(), "weighted_mean");
  EXPECT_EQ(report.final().value(), whole.value) << "combined parts differ from the whole-model evaluation";
  EXPECT_EQ(report.final().metrics().at("items"), kTestItems) << "every test item scored exactly once";

  ASSERT_EQ(report.curve_size(), kEpochs / kEvalEvery) << "one curve point per evaluation epoch";
  for (int k = 0; k < report.curve_size(); ++k) {
    const proto::CurvePoint& point = report.curve(k);
    EXPECT_EQ(point.epoch(), (k + 1) * kEvalEvery);
    EXPECT_EQ(point.metrics().at("items"), kTestItems) << "epoch " << point.epoch();
    if (std::string_view(c.mode) == "ALLREDUCE") {
      // Every replica holds exactly the first `epoch` epochs at the evaluation.
      EXPECT_EQ(point.metric_value(), app.WholeEvaluation(app.ExpectedModel(point.epoch())).value)
          << "epoch " << point.epoch();
    }
  }
  EXPECT_EQ(report.curve(report.curve_size() - 1).metric_value(), report.final().value());
}

INSTANTIATE_TEST_SUITE_P(Ranks, EvaluationInParts,
                         ::testing::Values(ApiModeCase{"ssp1_1x1", "SSP", 1, 1, 1},
                                           ApiModeCase{"ssp1_2x1", "SSP", 1, 2, 1},
                                           ApiModeCase{"ssp1_3x1", "SSP", 1, 3, 1},
                                           ApiModeCase{"bsp_3x2", "BSP", 0, 3, 2},
                                           ApiModeCase{"direct_3x1", "DIRECT", 0, 3, 1},
                                           ApiModeCase{"allreduce_1", "ALLREDUCE", 0, 1, 0},
                                           ApiModeCase{"allreduce_2", "ALLREDUCE", 0, 2, 0},
                                           ApiModeCase{"allreduce_3", "ALLREDUCE", 0, 3, 0},
                                           ApiModeCase{"timing_ssp1_3x1", "SSP", 1, 3, 1, /*timing=*/true}),
                         ApiModeLabel());

}  // namespace
}  // namespace stalelearn::testing
