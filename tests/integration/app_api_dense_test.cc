// App API, dense tables (TableSpec::dense): a float table whose every row
// changes every clock trains to exactly the same model declared dense (no
// touch log, shipped whole, fetched whole by DIRECT) as declared sparse
// (every row named in RowsOf). The deltas are small integers, so float sums
// are exact in any merge order. The rows start at non-zero values and the
// kernel checks it never reads less than them (a table not fetched, or not
// refreshed, reads zeros).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;
using runtime::TableId;

constexpr std::int64_t kRows = 6;
constexpr std::int32_t kWidth = 3;

float InitialValue(std::int64_t row, std::int32_t i) { return static_cast<float>(100 + 10 * row + i); }
float Increment(std::int64_t sample, std::int64_t row, std::int32_t i) { return static_cast<float>((sample + row + i) % 3); }

class EveryRowApp final : public runtime::SampleKernelApp {
 public:
  EveryRowApp(std::int64_t samples, bool dense, ProblemLog& problems)
      : samples_(samples),
        dense_(dense),
        problems_(problems),
        weights_(tables_.AddFloat("weights", kRows, kWidth, dense)) {}

  std::string name() const override { return "every_row"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  void InitRow(TableId, RowId row, runtime::RowValues row_values) const override {
    const std::span<float> values = row_values.floats();
    for (std::int32_t i = 0; i < kWidth; ++i) values[static_cast<std::size_t>(i)] = InitialValue(row.value, i);
  }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t, std::vector<runtime::RowRef>& rows) const override {
    if (dense_) return;  // dense tables are always fetched whole
    for (std::int64_t r = 0; r < kRows; ++r) rows.push_back({weights_.id, RowId{r}});
  }
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    for (std::int64_t r = 0; r < kRows; ++r) {
      const std::span<float> row = model.Row(weights_, RowId{r});
      for (std::int32_t i = 0; i < kWidth; ++i) {
        float& x = row[static_cast<std::size_t>(i)];
        if (x < InitialValue(r, i)) {
          problems_.Add(fmt::format("rank {} clock {}: row {}[{}] reads {}, below its initial value {}",
                                    ctx.info.rank.value, ctx.clock, r, i, x, InitialValue(r, i)));
        }
        x += Increment(sample, r, i);
      }
    }
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double total = 0;
    for (std::int64_t r = 0; r < kRows; ++r) {
      for (float x : runtime::Row(model, weights_, r)) total += x;
    }
    return {"sum", total};
  }

  runtime::TableSet ExpectedModel(int epochs) const {
    runtime::TableSet expected = model::MakeTableSet(Tables());
    for (std::int64_t r = 0; r < kRows; ++r) {
      for (std::int32_t i = 0; i < kWidth; ++i) {
        float x = InitialValue(r, i);
        for (std::int64_t s = 0; s < samples_; ++s) x += static_cast<float>(epochs) * Increment(s, r, i);
        expected[weights_.id.value].FloatRow(r)[static_cast<std::size_t>(i)] = x;
      }
    }
    return expected;
  }

 private:
  std::int64_t samples_;
  bool dense_;
  ProblemLog& problems_;
  runtime::TableList tables_;  // "weights": the one table
  runtime::FloatTable weights_;
};

class DenseTables : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(DenseTables, TrainToTheSameExactModelAsTheSameTableDeclaredSparse) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 2, kSamples = 96, kPerClock = 8;
  const proto::Config config = ApiConfig(c, kEpochs, kPerClock);
  std::string checksums[2];
  for (const bool dense : {false, true}) {
    ProblemLog problems;
    const EveryRowApp app(kSamples, dense, problems);
    const LocalRun run = RunLocal(config, app, WorldSize(c));
    EXPECT_EQ(problems.Summary(), "") << (dense ? "dense" : "sparse");
    checksums[dense ? 1 : 0] = run.report().model_checksum();
    EXPECT_EQ(run.report().model_checksum(), ChecksumOf(app.ExpectedModel(kEpochs)))
        << (dense ? "dense" : "sparse") << ": final sum " << run.report().final().value() << ", expected "
        << app.Evaluate(app.ExpectedModel(kEpochs)).value;
  }
  EXPECT_EQ(checksums[1], checksums[0]) << "dense and sparse declarations trained different models";
}

INSTANTIATE_TEST_SUITE_P(Modes, DenseTables,
                         ::testing::Values(ApiModeCase{"ssp1_2x1", "SSP", 1, 2, 1}, ApiModeCase{"bsp_2x2", "BSP", 0, 2, 2},
                                           ApiModeCase{"direct_2x1", "DIRECT", 0, 2, 1},
                                           ApiModeCase{"allreduce_3", "ALLREDUCE", 0, 3, 0},
                                           ApiModeCase{"timing_ssp1_2x1", "SSP", 1, 2, 1, /*timing=*/true}),
                         ApiModeLabel());

}  // namespace
}  // namespace stalelearn::testing
