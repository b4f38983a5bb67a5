// App API, evaluation parts that read ranges of the tables
// (EvaluatesInParts::PartRows): each compute rank gets just its rows of
// those tables from the memory ranks (the model's other rows are never
// read), in a 1-D split (one table whole) or a 2-D grid (both split), and the
// report's model checksum comes from the parts' digests.
//   - the combined metric equals the whole-model evaluation of the exact
//     final model, every row scored once, and the checksum is that model's,
//     though no rank read all of it;
//   - under a mode with memory ranks, no rank's model holds a row outside
//     its part (the read was partial), over range and hash partitioned
//     memory ranks;
//   - a run that stops early needs the whole model on one rank
//     (AppFacets::ForRun): it evaluates whole, with the same result;
//   - parts whose rows do not tile a table stop the run before it trains,
//     naming the table.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;

constexpr std::int64_t kSplitRows = 23;  // not a multiple of 2 or 3
constexpr std::int64_t kSharedRows = 5;

// Training adds 1 + s mod 3 to split row s mod kSplitRows and 1 to shared
// row s mod kSharedRows. Split row r is scored with weight 1 + r mod 4 as
// its count plus shared row r mod kSharedRows. Parts: with an odd count n,
// the shared table whole and the split table in n; with an even count, a
// grid of 2 shared parts x n/2 split parts. A part scores the split rows of
// its range whose shared row is in its range, counts the rows beyond its
// ranges that hold anything, and itself (the parts that were added up).
class OwnRowsApp final : public runtime::SampleKernelApp, public runtime::EvaluatesInParts {
 public:
  // `overlapping`: every part reads the same range of the split table, all
  // but its last row (parts that do not tile it: an app's error).
  explicit OwnRowsApp(std::int64_t samples, bool overlapping = false) : samples_(samples), overlapping_(overlapping) {}

  std::string name() const override { return "own_rows"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({split_.id, RowId{sample % kSplitRows}});
    rows.push_back({shared_.id, RowId{sample % kSharedRows}});
  }
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext&) const override {
    model.Row(split_, RowId{sample % kSplitRows})[0] += static_cast<std::int32_t>(1 + sample % 3);
    model.Row(shared_, RowId{sample % kSharedRows})[0] += 1;
  }

  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override {
    const model::RowRange split = ctx.part_rows[split_.id.value], shared = ctx.part_rows[shared_.id.value];
    const auto inside = [](const model::RowRange& range, std::int64_t r) { return r >= range.first && r < range.last; };
    double weighted = 0, weights = 0, rows = 0, beyond = 0;
    for (std::int64_t r = 0; r < kSplitRows; ++r) {
      const double value = runtime::Row(model, split_, r)[0];
      if (!inside(split, r)) beyond += value != 0 ? 1 : 0;
      if (!inside(split, r) || !inside(shared, r % kSharedRows)) continue;
      const double w = static_cast<double>(1 + r % 4);
      weighted += w * (value + runtime::Row(model, shared_, r % kSharedRows)[0]);
      weights += w;
      rows += 1;
    }
    for (std::int64_t r = 0; r < kSharedRows; ++r) {
      if (!inside(shared, r)) beyond += runtime::Row(model, shared_, r)[0] != 0 ? 1 : 0;
    }
    return {weighted, weights, rows, beyond, 1.0};
  }
  runtime::Evaluation CombineParts(std::span<const double> sums) const override {
    return {"weighted_mean",
            sums[1] > 0 ? sums[0] / sums[1] : -1.0,
            {{"rows", sums[2]}, {"beyond", sums[3]}, {"parts", sums[4]}}};
  }
  model::RowRange PartRows(runtime::TableId table, std::int64_t rows, int part, int parts) const override {
    if (overlapping_ && table == split_.id) return {0, rows - 1};
    if (parts % 2 != 0) return table == split_.id ? model::PartOfRows(rows, part, parts) : model::RowRange{0, rows};
    const int q = parts / 2;  // split parts
    return table == split_.id ? model::PartOfRows(rows, part % q, q) : model::PartOfRows(rows, part / q, 2);
  }

  runtime::TableSet ExpectedModel(int epochs) const {
    runtime::TableSet expected = model::MakeTableSet(Tables());
    for (std::int64_t s = 0; s < samples_; ++s) {
      expected[split_.id.value].IntRow(s % kSplitRows)[0] += static_cast<std::int32_t>(epochs * (1 + s % 3));
      expected[shared_.id.value].IntRow(s % kSharedRows)[0] += epochs;
    }
    return expected;
  }

 private:
  std::int64_t samples_;
  bool overlapping_;
  runtime::TableList tables_;
  runtime::IntTable shared_ = tables_.AddInt("shared", kSharedRows, 1);
  runtime::IntTable split_ = tables_.AddInt("split", kSplitRows, 1);
};

struct OwnRowsCase {
  ApiModeCase mode;
  bool hash = false;
};
void PrintTo(const OwnRowsCase& c, std::ostream* os) { *os << c.mode.label << (c.hash ? "_hash" : ""); }

class EvaluationOfOwnRows : public ::testing::TestWithParam<OwnRowsCase> {};

TEST_P(EvaluationOfOwnRows, PartsReadOnlyTheirRowsAndAddUpToTheWholeModelsMetricAndChecksum) {
  const OwnRowsCase& c = GetParam();
  constexpr int kEpochs = 3, kSamples = 70, kPerClock = 8;
  const OwnRowsApp app(kSamples);
  proto::Config config = ApiConfig(c.mode, kEpochs, kPerClock);
  if (c.hash) config.mutable_cluster()->set_partitioning(proto::HASH);
  const proto::Report report = RunLocal(config, app, WorldSize(c.mode)).report();

  const runtime::TableSet final_model = app.ExpectedModel(kEpochs);
  EXPECT_EQ(report.model_checksum(), ChecksumOf(final_model)) << "the parts' digests do not add up to the model's";
  const runtime::Evaluation whole = app.Evaluate(final_model);
  EXPECT_EQ(report.final().value(), whole.value) << "combined parts differ from the whole-model evaluation";
  EXPECT_EQ(report.final().metrics().at("rows"), kSplitRows) << "every split row scored exactly once, in one cell";
  EXPECT_EQ(report.final().metrics().at("parts"), c.mode.compute) << "one part per compute rank";
  if (c.mode.memory > 0) {
    EXPECT_EQ(report.final().metrics().at("beyond"), 0) << "a rank read split rows beyond its part";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, EvaluationOfOwnRows,
    ::testing::Values(OwnRowsCase{{"ssp1_1x1", "SSP", 1, 1, 1}}, OwnRowsCase{{"ssp1_2x1", "SSP", 1, 2, 1}},
                      OwnRowsCase{{"ssp1_3x2", "SSP", 1, 3, 2}}, OwnRowsCase{{"ssp1_3x2", "SSP", 1, 3, 2}, true},
                      OwnRowsCase{{"bsp_2x3", "BSP", 0, 2, 3}, true}, OwnRowsCase{{"direct_3x2", "DIRECT", 0, 3, 2}},
                      OwnRowsCase{{"ssp1_4x2", "SSP", 1, 4, 2}}, OwnRowsCase{{"direct_6x3", "DIRECT", 0, 6, 3}, true},
                      OwnRowsCase{{"allreduce_2", "ALLREDUCE", 0, 2, 0}},
                      OwnRowsCase{{"timing_ssp1_3x2", "SSP", 1, 3, 2, /*timing=*/true}}),
    [](const ::testing::TestParamInfo<OwnRowsCase>& info) {
      return std::string(info.param.mode.label) + (info.param.hash ? "_hash" : "");
    });

TEST(EvaluationOfOwnRows, ARunThatStopsEarlyEvaluatesTheWholeModelOnOneRank) {
  constexpr int kEpochs = 3, kSamples = 70, kPerClock = 8;
  const OwnRowsApp app(kSamples);
  proto::Config config = ApiConfig({"ssp1_3x2", "SSP", 1, 3, 2}, kEpochs, kPerClock);
  config.mutable_training()->mutable_early_stopping()->set_patience(5);  // never stops: the metric only grows
  const proto::Report report = RunLocal(config, app, 5).report();
  const runtime::TableSet final_model = app.ExpectedModel(kEpochs);
  EXPECT_EQ(report.model_checksum(), ChecksumOf(final_model));
  EXPECT_EQ(report.final().value(), app.Evaluate(final_model).value);
  EXPECT_EQ(report.final().metrics().at("parts"), 1) << "evaluated in parts: early stopping needs the whole model";
  EXPECT_EQ(report.final().metrics().at("rows"), kSplitRows) << "evaluated whole, every row is its own";
  EXPECT_EQ(report.final().metrics().at("beyond"), 0);
}

TEST(EvaluationOfOwnRows, PartsThatDoNotTileATableStopTheRunBeforeItTrainsNamingTheTable) {
  const OwnRowsApp app(70, /*overlapping=*/true);
  const proto::Config config = ApiConfig({"ssp1_2x1", "SSP", 1, 2, 1}, 3, 8);
  try {
    (void)RunLocal(config, app, 3);
    ADD_FAILURE() << "the run went on with parts that leave a row out";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows of table 'split' do not tile it over 2 compute ranks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace stalelearn::testing
