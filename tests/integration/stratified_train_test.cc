// Stratified scheduling end to end (training.locality = "stratified",
// framework/README.md "Locality"): a compute rank's replica keeps only its
// current stripe of items fresh (ReplicaRefresher::FocusRows). A counting
// app checks, at every read of an item row in clock t, that the replica
// holds every increment any rank made to it in clocks <= t - s - 1 (the
// staleness bound, I1, on the rows the kernel reads) and all of its own
// (read-your-writes, I2); the final model holds each increment once (I4).
// Dealt by user, only one rank writes each user row: refreshes then read only
// the metas once a focus has settled (ReplicaRefresher::ReadsRecords), and
// the same checks hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "framework/core/error.h"
#include "framework/core/planted_defect.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/sample_schedule.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr std::int64_t kUsers = 60;
constexpr std::int64_t kItems = 400;
constexpr std::int64_t kSamples = 6000;
constexpr int kStaleness = 1;
constexpr int kMaxClocks = 4096;

// Samples are (user, item) pairs; the kernel counts both rows. Dealt by
// user: the samples are sorted by user and each user's are one group.
class ItemCountingApp final : public runtime::SampleKernelApp,
                              public runtime::HasLocalState,
                              public runtime::GroupsSamples {
 public:
  explicit ItemCountingApp(bool deal_by_user = false)
      : increments_(static_cast<std::size_t>(kMaxClocks * kItems)), deal_by_user_(deal_by_user) {
    std::uint64_t state = 21;
    for (std::int64_t s = 0; s < kSamples; ++s) {
      const auto u = static_cast<std::int64_t>(runtime::SplitMix64(state) % kUsers);
      const auto i = static_cast<std::int64_t>(runtime::SplitMix64(state) % kItems);
      pairs_.emplace_back(u, i);
    }
    std::ranges::stable_sort(pairs_, {}, [](const auto& pair) { return pair.first; });
    for (std::int64_t s = 0; s < kSamples; ++s) {
      if (s == 0 || pairs_[static_cast<std::size_t>(s)].first != pairs_[static_cast<std::size_t>(s - 1)].first) {
        user_starts_.push_back(s);
      }
    }
    user_starts_.push_back(kSamples);
  }
  std::int64_t SampleGroups() const override {
    return deal_by_user_ ? std::ssize(user_starts_) - 1 : kSamples;
  }
  runtime::SampleRange GroupSamples(std::int64_t group) const override {
    if (!deal_by_user_) return {group, group + 1};
    return {user_starts_[static_cast<std::size_t>(group)], user_starts_[static_cast<std::size_t>(group + 1)]};
  }
  std::string name() const override { return "item-counting"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override {
    return {{"user", runtime::ElementType::kInt32, kUsers, 1}, {"item", runtime::ElementType::kInt32, kItems, 1}};
  }
  std::int64_t TrainingSamples() const override { return kSamples; }
  void RowsOf(std::int64_t s, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({runtime::TableId{0}, runtime::RowId{pairs_[static_cast<std::size_t>(s)].first}});
    rows.push_back({runtime::TableId{1}, runtime::RowId{pairs_[static_cast<std::size_t>(s)].second}});
  }
  struct Own final : runtime::LocalState {
    std::vector<std::int64_t> item_counts = std::vector<std::int64_t>(kItems, 0);
  };
  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo&,
                                                        std::span<const std::int64_t>) const override {
    return std::make_unique<Own>();
  }
  void Update(std::int64_t s, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    const auto [user, item] = pairs_[static_cast<std::size_t>(s)];
    auto& own = static_cast<Own&>(*ctx.state);
    std::int32_t& count = model.IntRow(runtime::TableId{1}, runtime::RowId{item})[0];
    // Every increment of clocks <= t - s - 1 (all ranks' kernels for them have
    // ended: SSP let this clock start), and every own one.
    std::int64_t required = 0;
    for (std::int64_t c = 0; c <= ctx.clock - kStaleness - 1; ++c) required += increments_[Index(c, item)].load();
    if (count < required) stale_reads_.fetch_add(1);
    if (count < own.item_counts[static_cast<std::size_t>(item)]) lost_own_.fetch_add(1);
    count += 1;
    ++own.item_counts[static_cast<std::size_t>(item)];
    increments_[Index(ctx.clock, item)].fetch_add(1);
    model.IntRow(runtime::TableId{0}, runtime::RowId{user})[0] += 1;
    ctx.work.random_row_accesses += 2;
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double users = 0, items = 0;
    for (std::int64_t r = 0; r < kUsers; ++r) users += model[0].IntRow(r)[0];
    for (std::int64_t r = 0; r < kItems; ++r) items += model[1].IntRow(r)[0];
    return {"items", items, {{"users", users}}};
  }
  int stale_reads() const { return stale_reads_.load(); }
  int lost_own() const { return lost_own_.load(); }

 private:
  static std::size_t Index(std::int64_t clock, std::int64_t item) {
    if (clock >= kMaxClocks) throw Error(Internal("ItemCountingApp: clock beyond kMaxClocks"));
    return static_cast<std::size_t>(clock * kItems + item);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs_;
  std::vector<std::int64_t> user_starts_;
  bool deal_by_user_;
  mutable std::vector<std::atomic<std::int64_t>> increments_;
  mutable std::atomic<int> stale_reads_{0};
  mutable std::atomic<int> lost_own_{0};
};

// A rank 4x slower: the stripe it leaves is taken over while its last
// clocks are still unmerged.
void AddStraggler(proto::Config& config) {
  config.mutable_training()->mutable_straggler()->set_rank(1);
  config.mutable_training()->mutable_straggler()->set_slowdown(4);
}

void CheckStratifiedReadsAreFreshAndExact(bool timing, bool deal_by_user = false) {
  constexpr int kEpochs = 3;
  ItemCountingApp app(deal_by_user);
  proto::Config config = TestConfig("SSP", kStaleness, /*memory_ranks=*/1, kEpochs, /*samples_per_clock=*/64);
  config.mutable_training()->set_locality("stratified");
  if (deal_by_user) AddStraggler(config);
  if (timing) UseStaleLearnTiming(config);
  const LocalRun run = RunLocal(config, app, /*world_size=*/5);
  const proto::Report& report = run.report();
  EXPECT_EQ(report.final().value(), static_cast<double>(kSamples * kEpochs)) << "item increments lost or doubled";
  EXPECT_EQ(report.final().metrics().at("users"), static_cast<double>(kSamples * kEpochs));
  EXPECT_EQ(app.stale_reads(), 0) << "an item row was read staler than the bound allows";
  EXPECT_EQ(app.lost_own(), 0) << "an item row was read without this rank's own increments";
  int planned = 0;
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() != "compute") continue;
    EXPECT_NE(r.locality_plan().reason().find("stratified over 4 stripes"), std::string::npos) << r.locality_plan().reason();
    planned += r.locality_plan().planned() ? 1 : 0;
    // Users shared by ranks: every refresh reads records; dealt by user,
    // most read only the metas (a settled focus, users written alone).
    if (deal_by_user) {
      EXPECT_GT(r.meta_only_reads(), 0) << "rank " << r.rank();
    } else {
      EXPECT_EQ(r.meta_only_reads(), 0) << "rank " << r.rank();
    }
  }
  EXPECT_EQ(planned, 4);
}

TEST(StratifiedTraining, FocusedReadsAreFreshOwnWritesVisibleAndCountsExact) {
  CheckStratifiedReadsAreFreshAndExact(/*timing=*/false);
}

TEST(StratifiedTraining, TheSameUnderDeterministicTiming) { CheckStratifiedReadsAreFreshAndExact(/*timing=*/true); }

TEST(StratifiedTraining, DealtByUserMostRefreshesReadOnlyMetasAndReadsStayFresh) {
  CheckStratifiedReadsAreFreshAndExact(/*timing=*/false, /*deal_by_user=*/true);
}

TEST(StratifiedTraining, DealtByUserTheSameUnderDeterministicTiming) {
  CheckStratifiedReadsAreFreshAndExact(/*timing=*/true, /*deal_by_user=*/true);
}

// Each sample names one row of one table: nothing to stratify.
class OneTableApp final : public runtime::SampleKernelApp {
 public:
  std::string name() const override { return "one-table"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override {
    return {{"w", runtime::ElementType::kInt32, 100, 1}};
  }
  std::int64_t TrainingSamples() const override { return 1000; }
  void RowsOf(std::int64_t s, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({runtime::TableId{0}, runtime::RowId{s % 100}});
  }
  void Update(std::int64_t s, runtime::ModelView& model, runtime::KernelContext&) const override {
    model.IntRow(runtime::TableId{0}, runtime::RowId{s % 100})[0] += 1;
  }
};

TEST(StratifiedTraining, AnAppWithoutTwoKeyedTablesIsRefusedAtOnce) {
  const OneTableApp app;
  proto::Config config = TestConfig("SSP", kStaleness, 1, 1, 64);
  config.mutable_training()->set_locality("stratified");
  config.mutable_wait()->set_timeout_seconds(600);  // a rank left waiting would fail the test's deadline
  try {
    RunLocal(config, app, 4);
    ADD_FAILURE() << "a stratified run of an app without two keyed tables ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training.locality=stratified needs"), std::string::npos) << e.what();
  }
}

TEST(StratifiedTraining, AFocusThatLoadsNothingIsCaught) {
  ScopedPlantedDefect planted(PlantedDefect::kFocusLoadsNothing);
  ItemCountingApp app;
  proto::Config config = TestConfig("SSP", kStaleness, 1, 3, 64);
  config.mutable_training()->set_locality("stratified");
  UseStaleLearnTiming(config);
  RunLocal(config, app, 5);
  EXPECT_GT(app.stale_reads(), 0) << "the staleness check did not see rows left stale by the focus";
}

// A focus taken as settled before the stripe's previous writer (the
// straggler) has its last clocks in: their increments are never read, and
// reads go stale. Real time: a few runs, as the straggler's lag varies.
TEST(StratifiedTraining, AFocusTakenAsSettledAtOnceIsCaught) {
  ScopedPlantedDefect planted(PlantedDefect::kFocusSettledAtOnce);
  int stale_reads = 0;
  for (int attempt = 0; attempt < 3 && stale_reads == 0; ++attempt) {
    ItemCountingApp app(/*deal_by_user=*/true);
    proto::Config config = TestConfig("SSP", kStaleness, 1, 3, 64);
    config.mutable_training()->set_locality("stratified");
    AddStraggler(config);
    RunLocal(config, app, 5);
    stale_reads = app.stale_reads();
  }
  EXPECT_GT(stale_reads, 0) << "the staleness check did not see a focus read before it settled";
}

}  // namespace
}  // namespace stalelearn::testing
