// App API, sample groups (the GroupsSamples facet): groups of
// varying size are dealt whole to one compute rank (e.g. an LDA document's
// tokens), every sample is still visited exactly once per epoch, and every
// compute rank runs the same clocks (SSP lines clocks up across ranks).
// Every mode.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "tests/integration/app_api_support.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;

// Groups 0..groups-1 of sizes 1..5 (group g has 1 + (7g mod 5) samples),
// consecutive. The kernel counts visits and records who visited what when.
class GroupedApp final : public runtime::SampleKernelApp, public runtime::GroupsSamples {
 public:
  struct Visit {
    int rank;
    int epoch;
    std::int64_t sample;
  };

  explicit GroupedApp(std::int64_t groups) {
    starts_.push_back(0);
    for (std::int64_t g = 0; g < groups; ++g) starts_.push_back(starts_.back() + 1 + (7 * g) % 5);
    by_sample_ = tables_.AddInt("by_sample", TrainingSamples(), 1);  // sized by the groups above
  }

  std::string name() const override { return "grouped"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  std::int64_t TrainingSamples() const override { return starts_.back(); }
  std::int64_t SampleGroups() const override { return static_cast<std::int64_t>(starts_.size()) - 1; }
  runtime::SampleRange GroupSamples(std::int64_t group) const override {
    return {starts_[static_cast<std::size_t>(group)], starts_[static_cast<std::size_t>(group) + 1]};
  }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({by_sample_.id, RowId{sample}});
  }
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    model.Row(by_sample_, RowId{sample})[0] += 1;
    std::lock_guard lock(mutex_);
    visits_.push_back({ctx.info.rank.value, ctx.epoch, sample});
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double total = 0;
    for (std::int64_t s = 0; s < TrainingSamples(); ++s) total += runtime::Row(model, by_sample_, s)[0];
    return {"total", total};
  }

  std::vector<Visit> visits() const {
    std::lock_guard lock(mutex_);
    return visits_;
  }

 private:
  std::vector<std::int64_t> starts_;  // group g is [starts_[g], starts_[g + 1])
  runtime::TableList tables_;
  runtime::IntTable by_sample_;  // the one table: one row per sample
  mutable std::mutex mutex_;
  mutable std::vector<Visit> visits_;
};

class SampleGroups : public ::testing::TestWithParam<ApiModeCase> {};

TEST_P(SampleGroups, GroupsStayWholeOnOneRankEverySampleOncePerEpochAndClocksLineUp) {
  const ApiModeCase& c = GetParam();
  constexpr int kEpochs = 2, kPerClock = 4;
  const GroupedApp app(/*groups=*/40);
  const std::int64_t samples = app.TrainingSamples();
  const LocalRun run = RunLocal(ApiConfig(c, kEpochs, kPerClock), app, WorldSize(c));
  EXPECT_EQ(run.report().final().value(), static_cast<double>(samples * kEpochs));

  std::vector<int> owner(static_cast<std::size_t>(samples), -1);
  std::vector<std::vector<int>> visits(kEpochs, std::vector<int>(static_cast<std::size_t>(samples), 0));
  for (const GroupedApp::Visit& v : app.visits()) {
    int& o = owner[static_cast<std::size_t>(v.sample)];
    if (o == -1) o = v.rank;
    EXPECT_EQ(o, v.rank) << "sample " << v.sample << " visited by two ranks";
    ASSERT_GE(v.epoch, 0);
    ASSERT_LT(v.epoch, kEpochs);
    ++visits[static_cast<std::size_t>(v.epoch)][static_cast<std::size_t>(v.sample)];
  }
  for (int e = 0; e < kEpochs; ++e) {
    for (std::int64_t s = 0; s < samples; ++s) {
      EXPECT_EQ(visits[static_cast<std::size_t>(e)][static_cast<std::size_t>(s)], 1)
          << "sample " << s << " in epoch " << e;
    }
  }
  std::map<int, std::int64_t> share;  // rank -> samples
  for (std::int64_t g = 0; g < app.SampleGroups(); ++g) {
    const runtime::SampleRange range = app.GroupSamples(g);
    const int first = owner[static_cast<std::size_t>(range.begin)];
    for (std::int64_t s = range.begin; s < range.end; ++s) {
      EXPECT_EQ(owner[static_cast<std::size_t>(s)], first)
          << "group " << g << " [" << range.begin << ", " << range.end << ") is split between ranks";
    }
    share[first] += range.end - range.begin;
  }
  if (c.compute > 1) {
    EXPECT_EQ(static_cast<int>(share.size()), c.compute) << "a compute rank got no group";
  }

  // Every compute rank runs the clocks the largest share needs, numbered alike.
  std::int64_t largest = 0;
  for (const auto& [rank, n] : share) largest = std::max(largest, n);
  const std::int64_t clocks = kEpochs * ((largest + kPerClock - 1) / kPerClock);
  for (const runtime::RankRun& rank : run.ranks) {
    if (rank.records.empty()) continue;  // a memory rank
    ASSERT_EQ(static_cast<std::int64_t>(rank.records.size()), clocks) << "compute rank " << rank.records[0].rank.value;
    for (std::int64_t k = 0; k < clocks; ++k) EXPECT_EQ(rank.records[static_cast<std::size_t>(k)].clock, k);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SampleGroups, ::testing::ValuesIn(EveryMode()), ApiModeLabel());

}  // namespace
}  // namespace stalelearn::testing
