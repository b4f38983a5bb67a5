// App API, data-dependent initialisation (the InitializesFromData facet): every
// compute rank adds counts from its own samples before training; the sum over
// all ranks must be in every rank's model before its first training clock
// (protocol clock 1: clock 0 carries the initialisation), and in the final
// model exactly once. One rank initialises late (real time and, on the timing
// backend, charged compute), so a mode whose ShareInitialization does not
// wait for the others lets the early ranks see a partial sum.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;
constexpr std::int64_t kBuckets = 8;

struct OwnSamples final : runtime::LocalState {
  std::vector<std::int64_t> samples;
};

class InitSumApp final : public runtime::SampleKernelApp,
                         public runtime::HasLocalState,
                         public runtime::InitializesFromData {
 public:
  InitSumApp(std::int64_t samples, ProblemLog& problems) : samples_(samples), problems_(problems) {}

  std::string name() const override { return "init_sum"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }

  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo&,
                                                        std::span<const std::int64_t> samples) const override {
    auto state = std::make_unique<OwnSamples>();
    state->samples.assign(samples.begin(), samples.end());
    return state;
  }

  void InitializeFromData(runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    {
      std::lock_guard lock(mutex_);
      ++init_calls_;
    }
    if (ctx.clock != -1) problems_.Add(fmt::format("rank {}: initialisation at clock {}", ctx.info.rank.value, ctx.clock));
    const auto* state = dynamic_cast<const OwnSamples*>(ctx.state);
    if (state == nullptr) {
      problems_.Add(fmt::format("rank {}: no local state during initialisation", ctx.info.rank.value));
      return;
    }
    if (ctx.info.compute_ranks > 1 && ctx.info.rank.value == ctx.info.compute_ranks - 1) {
      // The last rank is late: the others must not start training before its counts are in.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ctx.work.flops += 1e12;
    }
    for (std::int64_t s : state->samples) {
      const std::span<std::int32_t> row = model.Row(init_, RowId{s % kBuckets});
      row[0] += 1;
      row[1] += static_cast<std::int32_t>(s);
    }
  }

  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({visits_.id, RowId{sample}});
    for (std::int64_t b = 0; b < kBuckets; ++b) rows.push_back({init_.id, RowId{b}});  // the first clock reads them all
  }

  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    if (ctx.clock < 1) problems_.Add(fmt::format("rank {}: training at protocol clock {}", ctx.info.rank.value, ctx.clock));
    if (ctx.clock == 1) CheckInitialisationIsWhole(model, ctx.info.rank.value);
    model.Row(visits_, RowId{sample})[0] += 1;
    ctx.work.flops += 1;
  }

  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double visits = 0;
    for (std::int64_t s = 0; s < samples_; ++s) visits += runtime::Row(model, visits_, s)[0];
    return {"visits", visits};
  }

  // Initialisation summed over all samples, plus `epochs` visits of each.
  runtime::TableSet ExpectedModel(int epochs) const {
    runtime::TableSet expected = model::MakeTableSet(Tables());
    for (std::int64_t s = 0; s < samples_; ++s) {
      expected[init_.id.value].IntRow(s % kBuckets)[0] += 1;
      expected[init_.id.value].IntRow(s % kBuckets)[1] += static_cast<std::int32_t>(s);
      expected[visits_.id.value].IntRow(s)[0] = epochs;
    }
    return expected;
  }

  int init_calls() const {
    std::lock_guard lock(mutex_);
    return init_calls_;
  }
  int first_clock_checks() const {
    std::lock_guard lock(mutex_);
    return first_clock_checks_;
  }

 private:
  void CheckInitialisationIsWhole(runtime::ModelView& model, int rank) const {
    const runtime::TableSet expected = ExpectedModel(0);
    for (std::int64_t b = 0; b < kBuckets; ++b) {
      const std::span<const std::int32_t> seen = model.Row(init_, RowId{b});
      const std::span<const std::int32_t> want = expected[init_.id.value].IntRow(b);
      if (seen[0] != want[0] || seen[1] != want[1]) {
        problems_.Add(fmt::format("rank {} at its first training clock: bucket {} = {{{}, {}}}, the sum over all "
                                  "ranks is {{{}, {}}}",
                                  rank, b, seen[0], seen[1], want[0], want[1]));
        return;
      }
    }
    std::lock_guard lock(mutex_);
    ++first_clock_checks_;
  }

  std::int64_t samples_;
  ProblemLog& problems_;
  runtime::TableList tables_;
  // kBuckets x {count, sum of sample ids}: written only by the initialisation
  runtime::IntTable init_ = tables_.AddInt("init", kBuckets, 2);
  runtime::IntTable visits_ = tables_.AddInt("visits", samples_, 1);  // one row per sample, +1 per visit
  mutable std::mutex mutex_;
  mutable int init_calls_ = 0;
  mutable int first_clock_checks_ = 0;
};

class DataInitialization : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(DataInitialization, FirstTrainingClockSeesEveryRanksCountsAndTheModelEndsExact) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 2, kSamples = 96, kPerClock = 8;
  ProblemLog problems;
  const InitSumApp app(kSamples, problems);
  const LocalRun run = RunLocal(ApiConfig(c, kEpochs, kPerClock), app, WorldSize(c));

  EXPECT_EQ(problems.Summary(), "");
  EXPECT_EQ(app.init_calls(), c.compute) << "InitializeFromData runs once per compute rank";
  EXPECT_GT(app.first_clock_checks(), 0) << "no kernel ran at protocol clock 1";
  EXPECT_EQ(run.report().model_checksum(), ChecksumOf(app.ExpectedModel(kEpochs)))
      << "the initialisation must be merged exactly once, beside every visit";
  EXPECT_EQ(run.report().final().value(), kSamples * kEpochs);
  for (const runtime::RankRun& rank : run.ranks) {
    if (rank.records.empty()) continue;  // a memory rank
    EXPECT_EQ(rank.records.front().clock, 1) << "clock 0 carries the initialisation";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, DataInitialization, ::testing::ValuesIn(EveryMode()), ApiModeLabel());

}  // namespace
}  // namespace stalelearn::testing
