// App API, the kernel's random stream (KernelContext::random): seeded from
// (seed, rank, clock), so two runs draw the same numbers at the same rank and
// clock whatever the thread timing, and a model built from the draws is the
// same bits. On the local backend the draws are integers (float sums exact in
// any merge order); on the timing backend they are uniform fractions, whose
// float sums depend on the merge order, which the virtual-time scheduler
// repeats.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "framework/runtime/random_stream.h"
#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;

constexpr std::int64_t kRows = 16;
constexpr std::int64_t kIntegerRange = 1000;

using DrawsByClock = std::map<std::pair<int, std::int64_t>, std::vector<double>>;  // (rank, clock) -> draws

// Adds one draw per sample to row sample % kRows of a float table.
class RandomSumApp final : public runtime::SampleKernelApp {
 public:
  RandomSumApp(std::int64_t samples, bool integer_draws)
      : samples_(samples), integer_(integer_draws), sums_(tables_.AddFloat("sums", kRows, 1)) {}

  std::string name() const override { return "random_sum"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({sums_.id, RowId{sample % kRows}});
  }
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    const double draw = integer_ ? static_cast<double>(ctx.random.Below(kIntegerRange)) : ctx.random.Uniform();
    model.Row(sums_, RowId{sample % kRows})[0] += static_cast<float>(draw);
    std::lock_guard lock(mutex_);
    draws_[{ctx.info.rank.value, ctx.clock}].push_back(draw);
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double total = 0;
    for (std::int64_t r = 0; r < kRows; ++r) total += runtime::Row(model, sums_, r)[0];
    return {"sum", total};
  }

  // The draws of the last run (and forgets them).
  DrawsByClock TakeDraws() const {
    std::lock_guard lock(mutex_);
    return std::exchange(draws_, {});
  }

 private:
  std::int64_t samples_;
  bool integer_;
  runtime::TableList tables_;
  runtime::FloatTable sums_;
  mutable std::mutex mutex_;
  mutable DrawsByClock draws_;
};

class KernelRandomStream : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(KernelRandomStream, SameDrawsPerRankAndClockAndSameModelBitsOnEveryRun) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 2, kSamples = 192, kPerClock = 16;
  const bool integer_draws = !c.timing;
  const RandomSumApp app(kSamples, integer_draws);
  proto::Config config = ApiConfig(c, kEpochs, kPerClock);

  const std::string first = RunLocal(config, app, WorldSize(c)).report().model_checksum();
  const DrawsByClock draws = app.TakeDraws();
  const std::string second = RunLocal(config, app, WorldSize(c)).report().model_checksum();
  const DrawsByClock again = app.TakeDraws();
  EXPECT_EQ(again.size(), draws.size()) << "kernel calls per (rank, clock) differ between two runs";
  for (const auto& [at, values] : draws) {
    const auto it = again.find(at);
    if (it == again.end() || it->second != values) {
      ADD_FAILURE() << "rank " << at.first << " clock " << at.second
                    << " drew other numbers (or none) in a second run";
      break;
    }
  }
  EXPECT_EQ(second, first) << "the model built from the draws differs between two runs";

  // The stream is the documented one of (seed, rank, clock), fresh per kernel call.
  std::set<double> first_draws;
  for (const auto& [at, values] : draws) {
    const auto [rank, clock] = at;
    runtime::RandomStream replay = runtime::RandomStream::For(config.seed(), rank, clock);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double want = integer_draws ? static_cast<double>(replay.Below(kIntegerRange)) : replay.Uniform();
      ASSERT_EQ(values[i], want) << "rank " << rank << " clock " << clock << " draw " << i;
    }
    first_draws.insert(values.front());
  }
  EXPECT_GE(first_draws.size(), draws.size() * 3 / 4) << "the streams of different (rank, clock) repeat";

  config.set_seed(config.seed() + 1);
  EXPECT_NE(RunLocal(config, app, WorldSize(c)).report().model_checksum(), first) << "the draws ignore the seed";
}

INSTANTIATE_TEST_SUITE_P(Modes, KernelRandomStream, ::testing::ValuesIn(EveryMode()), ApiModeLabel());

}  // namespace
}  // namespace stalelearn::testing
