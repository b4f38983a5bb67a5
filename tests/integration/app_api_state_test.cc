// App API, what a compute rank's kernel is given: its local state
// (HasLocalState::CreateLocalState, built from exactly this rank's samples,
// the same object at every clock and in evaluation in parts) and its samples
// in one mini-batch per clock (App::UpdateBatch, the core's kernel).
// Every mode.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "framework/runtime/sample_schedule.h"
#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;

// ---- local state ----

struct RankSamples final : runtime::LocalState {
  int rank = -1;
  std::vector<std::int64_t> samples;  // sorted
  std::int64_t visited = 0;           // kernel calls' samples so far
};

// Which state object each rank was given at creation, and a copy of its
// samples (the states themselves end with the run).
class CreatedStates {
 public:
  struct Created {
    const RankSamples* state;  // for identity checks during the run only
    int rank;
    std::vector<std::int64_t> samples;
  };

  void Add(int rank, const RankSamples* state) {
    std::lock_guard lock(mutex_);
    created_[rank].push_back({state, state->rank, state->samples});
  }
  // The state rank `rank` was created with (nullptr unless exactly once).
  const RankSamples* Of(int rank) const {
    std::lock_guard lock(mutex_);
    const auto it = created_.find(rank);
    return it != created_.end() && it->second.size() == 1 ? it->second.front().state : nullptr;
  }
  std::map<int, std::vector<Created>> all() const {
    std::lock_guard lock(mutex_);
    return created_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<int, std::vector<Created>> created_;
};

// Counts visits per sample; keeps per-rank state and evaluates in parts
// {samples visited by this rank's kernel, samples it owns, visits of those
// samples in the model}.
class StateApp final : public runtime::SampleKernelApp,
                       public runtime::HasLocalState,
                       public runtime::EvaluatesInParts {
 public:
  StateApp(std::int64_t samples, ProblemLog& problems, CreatedStates& created)
      : samples_(samples), problems_(problems), created_(created) {}

  std::string name() const override { return "state"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({by_sample_.id, RowId{sample}});
  }

  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo& info,
                                                        std::span<const std::int64_t> samples) const override {
    auto state = std::make_unique<RankSamples>();
    state->rank = info.rank.value;
    state->samples.assign(samples.begin(), samples.end());
    std::ranges::sort(state->samples);
    created_.Add(info.rank.value, state.get());
    return state;
  }

  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    auto* state = dynamic_cast<RankSamples*>(ctx.state);
    const int rank = ctx.info.rank.value;
    if (state == nullptr || state != created_.Of(rank)) {
      problems_.Add(fmt::format("rank {} clock {}: the kernel got a state other than the one created", rank, ctx.clock));
      return;
    }
    if (!std::ranges::binary_search(state->samples, sample)) {
      problems_.Add(fmt::format("rank {} visited sample {}, not among the samples its state was built from", rank,
                                sample));
    }
    ++state->visited;
    model.Row(by_sample_, RowId{sample})[0] += 1;
  }

  std::vector<double> EvaluatePart(const runtime::TableSet& model, const runtime::EvalContext& ctx) const override {
    const auto* state = dynamic_cast<const RankSamples*>(ctx.state);
    if (state == nullptr || state != created_.Of(ctx.info.rank.value)) {
      problems_.Add(fmt::format("rank {}: evaluation got a state other than the one created", ctx.info.rank.value));
      return {0, 0, 0};
    }
    double in_model = 0;
    for (std::int64_t s : state->samples) in_model += runtime::Row(model, by_sample_, s)[0];
    return {static_cast<double>(state->visited), static_cast<double>(state->samples.size()), in_model};
  }
  runtime::Evaluation CombineParts(std::span<const double> sums) const override {
    return {"visited", sums[0], {{"owned", sums[1]}, {"in_model", sums[2]}}};
  }

 private:
  std::int64_t samples_;
  ProblemLog& problems_;
  CreatedStates& created_;
  runtime::TableList tables_;
  runtime::IntTable by_sample_ = tables_.AddInt("by_sample", samples_, 1);  // the one table
};

class PerRankState : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(PerRankState, BuiltFromThisRanksSamplesAndHandedToEveryKernelAndEvaluation) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 3, kSamples = 100, kPerClock = 8;
  ProblemLog problems;
  CreatedStates created;
  const StateApp app(kSamples, problems, created);
  const LocalRun run = RunLocal(ApiConfig(c, kEpochs, kPerClock), app, WorldSize(c));
  EXPECT_EQ(problems.Summary(), "");

  // One state per compute rank; their samples are disjoint and cover all.
  const auto all = created.all();
  ASSERT_EQ(static_cast<int>(all.size()), c.compute);
  std::vector<int> owners(kSamples, 0);
  for (const auto& [rank, states] : all) {
    ASSERT_EQ(states.size(), 1u) << "rank " << rank << " created its state " << states.size() << " times";
    EXPECT_EQ(states.front().rank, rank);
    for (std::int64_t s : states.front().samples) ++owners[static_cast<std::size_t>(s)];
  }
  for (int s = 0; s < kSamples; ++s) EXPECT_EQ(owners[static_cast<std::size_t>(s)], 1) << "sample " << s;

  // The parts read each rank's state as its kernel left it after each epoch.
  const proto::Report& report = run.report();
  ASSERT_EQ(report.curve_size(), kEpochs);
  for (int e = 1; e <= kEpochs; ++e) {
    const proto::CurvePoint& point = report.curve(e - 1);
    EXPECT_EQ(point.epoch(), e);
    EXPECT_EQ(point.metric_value(), kSamples * e) << "samples visited by the end of epoch " << e;
    EXPECT_EQ(point.metrics().at("owned"), kSamples);
  }
  EXPECT_EQ(report.final().metrics().at("in_model"), kSamples * kEpochs);
}

INSTANTIATE_TEST_SUITE_P(Modes, PerRankState, ::testing::ValuesIn(EveryMode()), ApiModeLabel());

// ---- mini-batch kernel ----

// A mini-batch kernel (App::UpdateBatch); records each call.
class BatchApp final : public runtime::App {
 public:
  struct Call {
    int rank;
    std::int64_t clock;
    std::vector<std::int64_t> samples;
  };

  explicit BatchApp(std::int64_t samples) : samples_(samples) {}

  std::string name() const override { return "batch"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({by_sample_.id, RowId{sample}});
  }
  void UpdateBatch(std::span<const std::int64_t> samples, runtime::ModelView& model,
                   runtime::KernelContext& ctx) const override {
    for (std::int64_t s : samples) model.Row(by_sample_, RowId{s})[0] += 1;
    std::lock_guard lock(mutex_);
    calls_.push_back({ctx.info.rank.value, ctx.clock, {samples.begin(), samples.end()}});
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double total = 0;
    for (std::int64_t s = 0; s < samples_; ++s) total += runtime::Row(model, by_sample_, s)[0];
    return {"total", total};
  }

  std::vector<Call> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::int64_t samples_;
  runtime::TableList tables_;
  runtime::IntTable by_sample_ = tables_.AddInt("by_sample", samples_, 1);  // the one table
  mutable std::mutex mutex_;
  mutable std::vector<Call> calls_;
};

class MiniBatch : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(MiniBatch, AnAppOverridingOnlyUpdateBatchGetsEachClocksSamplesInOneCall) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 2, kSamples = 100, kPerClock = 8;  // shares of 100 leave short last clocks
  const BatchApp app(kSamples);
  const proto::Config config = ApiConfig(c, kEpochs, kPerClock);
  const LocalRun run = RunLocal(config, app, WorldSize(c));
  EXPECT_EQ(run.report().final().value(), kSamples * kEpochs);

  std::map<std::pair<int, std::int64_t>, std::vector<std::int64_t>> by_clock;  // (rank, clock) -> samples
  for (const BatchApp::Call& call : app.calls()) {
    const bool fresh = by_clock.emplace(std::pair(call.rank, call.clock), call.samples).second;
    EXPECT_TRUE(fresh) << "rank " << call.rank << " got clock " << call.clock << " in more than one call";
  }
  // What each rank's schedule deals to each clock, one call per non-empty clock.
  std::size_t expected_calls = 0;
  for (int rank = 0; rank < c.compute; ++rank) {
    const runtime::SampleSchedule schedule(app, c.compute, rank, kPerClock, config.seed());
    for (int e = 0; e < kEpochs; ++e) {
      const std::vector<std::int64_t> order = schedule.EpochOrder(e);
      for (std::int64_t k = 0; k < schedule.clocks_per_epoch(); ++k) {
        const std::span<const std::int64_t> want = schedule.ClockSamples(order, k);
        if (want.empty()) continue;
        ++expected_calls;
        const std::int64_t clock = e * schedule.clocks_per_epoch() + k;
        const auto it = by_clock.find({rank, clock});
        ASSERT_NE(it, by_clock.end()) << "rank " << rank << " clock " << clock << ": no call";
        EXPECT_EQ(it->second, std::vector<std::int64_t>(want.begin(), want.end()))
            << "rank " << rank << " clock " << clock;
      }
    }
  }
  EXPECT_EQ(by_clock.size(), expected_calls);
}

INSTANTIATE_TEST_SUITE_P(Modes, MiniBatch, ::testing::ValuesIn(EveryMode()), ApiModeLabel());

}  // namespace
}  // namespace stalelearn::testing
