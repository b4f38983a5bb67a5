// Stratified scheduling end to end (training.locality = "stratified",
// framework/README.md "Locality"): a compute rank's replica keeps only its
// current stripe of items fresh (ReplicaRefresher::FocusRows). A counting
// app checks, at every read of an item or user row in clock t, that the
// replica holds every increment any rank made to it in clocks <= t - s - 1
// (the staleness bound, I1, on the rows the kernel reads) and all of its own
// (read-your-writes, I2); the final model holds each increment once (I4).
// Dealt by user, only one rank writes each user row: once a focus has
// settled, clocks skip the gate and the refresh (ssp_mode.cc InStratum),
// and the same checks hold.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "framework/core/error.h"
#include "framework/core/planted_defect.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/checkpoint_store.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/stop_request.h"
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
      : deal_by_user_(deal_by_user),
        increments_(static_cast<std::size_t>(kMaxClocks * kItems)),
        user_increments_(static_cast<std::size_t>(kMaxClocks * kUsers)) {
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
    std::vector<std::int64_t> user_counts = std::vector<std::int64_t>(kUsers, 0);
  };
  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo&,
                                                        std::span<const std::int64_t>) const override {
    return std::make_unique<Own>();
  }
  Result<std::vector<std::byte>> SaveLocalState(const runtime::LocalState* state) const override {
    const auto& own = static_cast<const Own&>(*state);
    std::vector<std::byte> bytes((kItems + kUsers) * sizeof(std::int64_t));
    std::memcpy(bytes.data(), own.item_counts.data(), kItems * sizeof(std::int64_t));
    std::memcpy(bytes.data() + kItems * sizeof(std::int64_t), own.user_counts.data(), kUsers * sizeof(std::int64_t));
    return bytes;
  }
  Status RestoreLocalState(std::span<const std::byte> bytes, runtime::LocalState* state) const override {
    if (bytes.size() != (kItems + kUsers) * sizeof(std::int64_t)) return DataLoss("ItemCountingApp: state size");
    auto& own = static_cast<Own&>(*state);
    std::memcpy(own.item_counts.data(), bytes.data(), kItems * sizeof(std::int64_t));
    std::memcpy(own.user_counts.data(), bytes.data() + kItems * sizeof(std::int64_t), kUsers * sizeof(std::int64_t));
    return Status::Ok();
  }
  void Update(std::int64_t s, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    const auto [user, item] = pairs_[static_cast<std::size_t>(s)];
    auto& own = static_cast<Own&>(*ctx.state);
    NoteLead(ctx.clock);
    // Every increment of clocks <= t - s - 1 (all ranks' kernels for them have
    // ended: SSP let this clock start), and every own one.
    CheckAndCount(model.IntRow(runtime::TableId{1}, runtime::RowId{item})[0], increments_, kItems, item,
                  own.item_counts, ctx.clock, stale_reads_);
    CheckAndCount(model.IntRow(runtime::TableId{0}, runtime::RowId{user})[0], user_increments_, kUsers, user,
                  own.user_counts, ctx.clock, stale_user_reads_);
    ctx.work.random_row_accesses += 2;
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double users = 0, items = 0;
    for (std::int64_t r = 0; r < kUsers; ++r) users += model[0].IntRow(r)[0];
    for (std::int64_t r = 0; r < kItems; ++r) items += model[1].IntRow(r)[0];
    return {"items", items, {{"users", users}}};
  }
  int stale_reads() const { return stale_reads_.load(); }
  int stale_user_reads() const { return stale_user_reads_.load(); }
  int lost_own() const { return lost_own_.load(); }
  // The most clocks any rank's kernel had gone past another's clock when
  // that one ran.
  std::int64_t max_lead() const { return max_lead_.load(); }

 private:
  static void RaiseTo(std::atomic<std::int64_t>& at_least, std::int64_t value) {
    std::int64_t seen = at_least.load();
    while (value > seen && !at_least.compare_exchange_weak(seen, value)) {
    }
  }
  void NoteLead(std::int64_t clock) const {
    RaiseTo(furthest_clock_, clock);
    RaiseTo(max_lead_, furthest_clock_.load() - clock);
  }
  using Increments = std::vector<std::atomic<std::int64_t>>;
  static std::size_t Index(std::int64_t clock, std::int64_t row, std::int64_t rows) {
    if (clock >= kMaxClocks) throw Error(Internal("ItemCountingApp: clock beyond kMaxClocks"));
    return static_cast<std::size_t>(clock * rows + row);
  }
  // Checks `count` (row `row` of a table of `rows` rows, as clock `clock`
  // reads it) against the bound and own increments, then adds one.
  void CheckAndCount(std::int32_t& count, Increments& increments, std::int64_t rows, std::int64_t row,
                     std::vector<std::int64_t>& own, std::int64_t clock, std::atomic<int>& stale) const {
    std::int64_t required = 0;
    for (std::int64_t c = 0; c <= clock - kStaleness - 1; ++c) required += increments[Index(c, row, rows)].load();
    if (count < required) stale.fetch_add(1);
    if (count < own[static_cast<std::size_t>(row)]) lost_own_.fetch_add(1);
    count += 1;
    ++own[static_cast<std::size_t>(row)];
    increments[Index(clock, row, rows)].fetch_add(1);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs_;
  std::vector<std::int64_t> user_starts_;
  bool deal_by_user_;
  mutable Increments increments_;       // per (clock, item): increments made in that clock
  mutable Increments user_increments_;  // per (clock, user)
  mutable std::atomic<int> stale_reads_{0};
  mutable std::atomic<int> stale_user_reads_{0};
  mutable std::atomic<int> lost_own_{0};
  mutable std::atomic<std::int64_t> furthest_clock_{0};
  mutable std::atomic<std::int64_t> max_lead_{0};
};

// A rank 4x slower: the stripe it leaves is taken over while its last
// clocks are still unmerged.
void AddStraggler(proto::Config& config) {
  config.mutable_training()->mutable_straggler()->set_rank(1);
  config.mutable_training()->mutable_straggler()->set_slowdown(4);
}

// SSP with bound kStaleness, one memory rank, stratified scheduling.
proto::Config StratifiedConfig(int epochs, int samples_per_clock = 64) {
  proto::Config config = TestConfig("SSP", kStaleness, /*memory_ranks=*/1, epochs, samples_per_clock);
  config.mutable_training()->set_locality("stratified");
  return config;
}

void CheckStratifiedReadsAreFreshAndExact(bool timing, bool deal_by_user = false) {
  constexpr int kEpochs = 3;
  ItemCountingApp app(deal_by_user);
  proto::Config config = StratifiedConfig(kEpochs);
  if (deal_by_user) AddStraggler(config);
  if (timing) UseStaleLearnTiming(config);
  const LocalRun run = RunLocal(config, app, /*world_size=*/5);
  const proto::Report& report = run.report();
  EXPECT_EQ(report.final().value(), static_cast<double>(kSamples * kEpochs)) << "item increments lost or doubled";
  EXPECT_EQ(report.final().metrics().at("users"), static_cast<double>(kSamples * kEpochs));
  EXPECT_EQ(app.stale_reads(), 0) << "an item row was read staler than the bound allows";
  EXPECT_EQ(app.stale_user_reads(), 0) << "a user row was read staler than the bound allows";
  EXPECT_EQ(app.lost_own(), 0) << "a row was read without this rank's own increments";
  int planned = 0;
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() != "compute") continue;
    EXPECT_NE(r.locality_plan().reason().find("stratified over 4 stripes"), std::string::npos) << r.locality_plan().reason();
    planned += r.locality_plan().planned() ? 1 : 0;
    // Users shared by ranks: every clock is gated and every refresh reads
    // records; dealt by user, clocks in a settled stripe skip both (users
    // written alone), most of them.
    if (deal_by_user) {
      EXPECT_GT(r.stratum_clocks(), r.clocks() / 2) << "rank " << r.rank();
    } else {
      EXPECT_EQ(r.meta_only_reads(), 0) << "rank " << r.rank();
      EXPECT_EQ(r.stratum_clocks(), 0) << "rank " << r.rank();
    }
  }
  EXPECT_EQ(planned, 4);
}

TEST(StratifiedTraining, FocusedReadsAreFreshOwnWritesVisibleAndCountsExact) {
  CheckStratifiedReadsAreFreshAndExact(/*timing=*/false);
}

TEST(StratifiedTraining, TheSameUnderDeterministicTiming) { CheckStratifiedReadsAreFreshAndExact(/*timing=*/true); }

TEST(StratifiedTraining, DealtByUserMostClocksSkipTheGateAndReadsStayFresh) {
  CheckStratifiedReadsAreFreshAndExact(/*timing=*/false, /*deal_by_user=*/true);
}

TEST(StratifiedTraining, DealtByUserTheSameUnderDeterministicTiming) {
  CheckStratifiedReadsAreFreshAndExact(/*timing=*/true, /*deal_by_user=*/true);
}

// A rank waits at a stripe change only for the stripe's writer before it
// (ssp_mode.cc FocusRows), not for every rank: with rank 1 fifty times
// slower, rank 2 (whose stripes come from 3, 0 and then 1) runs up to three
// sub-epochs ahead of it. A barrier over all ranks at each sub-epoch would
// keep every lead under one sub-epoch. The reads stay as fresh as the
// bound asks (the stripe's earlier writers are in it).
TEST(StratifiedTraining, ASlowRankHoldsBackOnlyTheRanksTakingItsStripes) {
  constexpr int kEpochs = 2;
  ItemCountingApp app(/*deal_by_user=*/true);
  proto::Config config = StratifiedConfig(kEpochs);
  AddStraggler(config);
  config.mutable_training()->mutable_straggler()->set_slowdown(50);  // its compute outweighs the transfers
  UseStaleLearnTiming(config);
  const proto::Report report = RunLocal(config, app, 5).report();
  std::int64_t clocks = 0;
  for (const proto::RankReport& r : report.ranks()) clocks = std::max(clocks, r.clocks());
  const std::int64_t sub_epoch = clocks / kEpochs / 4;
  ASSERT_GT(sub_epoch, 0);
  EXPECT_GE(app.max_lead(), sub_epoch) << "every sub-epoch waited for the slowest rank";
  EXPECT_EQ(app.stale_reads(), 0);
  EXPECT_EQ(app.stale_user_reads(), 0);
  EXPECT_EQ(app.lost_own(), 0);
  EXPECT_EQ(report.final().value(), static_cast<double>(kSamples * kEpochs));
}

// The report's loop phases (phase_times.h), and the training makespan
// before the final read (simulated.training_seconds): under timing they add up to
// each compute rank's simulated compute, transfer and wait (the loop is all
// of a compute rank's time but its start-up and release, a few round
// trips), one hand-over per sub-epoch, one kernel per clock; in real time
// they carry wall seconds and no simulated ones. A phase left untimed
// leaves its share (a push's is a quarter or more) out of the sums.
TEST(LoopPhases, AddUpToEachComputeRanksSimulatedTimeWithAHandOverPerSubEpoch) {
  constexpr int kEpochs = 2;
  for (const bool timing : {true, false}) {
    SCOPED_TRACE(timing ? "timing" : "real time");
    ItemCountingApp app(/*deal_by_user=*/true);
    proto::Config config = StratifiedConfig(kEpochs);
    if (timing) UseStaleLearnTiming(config);
    const proto::Report report = RunLocal(config, app, 5).report();
    // The training makespan: the final read and evaluation come after it.
    if (timing) {
      EXPECT_GT(report.simulated().training_seconds(), 0);
      EXPECT_LT(report.simulated().training_seconds(), report.simulated().total_seconds());
    }
    for (const proto::RankReport& r : report.ranks()) {
      if (r.role() != "compute") continue;
      std::map<std::string, proto::PhaseTime> phases;
      double compute = 0, transfer = 0, wait = 0, wall = 0;
      for (const proto::PhaseTime& p : r.phases()) {
        phases[p.phase()] = p;
        compute += p.simulated_compute_seconds();
        transfer += p.simulated_transfer_seconds();
        wait += p.simulated_wait_seconds();
        wall += p.wall_seconds();
      }
      ASSERT_EQ(phases.count("hand_over"), 1u) << "rank " << r.rank();
      EXPECT_EQ(phases["hand_over"].entries(), kEpochs * 4) << "rank " << r.rank();
      EXPECT_EQ(phases["kernel"].entries(), r.clocks()) << "rank " << r.rank();
      EXPECT_EQ(phases["push"].entries(), r.clocks()) << "rank " << r.rank();
      EXPECT_EQ(phases["finish"].entries(), 1) << "rank " << r.rank();
      EXPECT_GT(wall, 0) << "rank " << r.rank();
      if (!timing) {
        EXPECT_EQ(compute + transfer + wait, 0) << "rank " << r.rank();
        EXPECT_EQ(r.simulated_training_end_seconds(), 0) << "rank " << r.rank();
        continue;
      }
      // Training ends before the final read, which ends within the makespan.
      EXPECT_GT(r.simulated_training_end_seconds(), 0) << "rank " << r.rank();
      EXPECT_LE(r.simulated_training_end_seconds(), report.simulated().training_seconds()) << "rank " << r.rank();
      if (phases.count("final_read") != 0) {
        EXPECT_LE(r.simulated_training_end_seconds() + phases["final_read"].simulated_transfer_seconds() +
                      phases["final_read"].simulated_wait_seconds(),
                  report.simulated().total_seconds() * (1 + 1e-9))
            << "rank " << r.rank();
      }
      const proto::SimulatedRank* sim = nullptr;
      for (const proto::SimulatedRank& s : report.simulated().ranks()) {
        if (s.rank() == r.rank()) sim = &s;
      }
      ASSERT_NE(sim, nullptr) << "rank " << r.rank();
      EXPECT_GT(phases["hand_over"].simulated_transfer_seconds(), 0) << "rank " << r.rank();
      EXPECT_DOUBLE_EQ(compute, sim->compute_seconds()) << "rank " << r.rank();
      EXPECT_LE(transfer, sim->transfer_seconds() * (1 + 1e-9)) << "rank " << r.rank();
      EXPECT_GE(transfer, 0.95 * sim->transfer_seconds()) << "rank " << r.rank();
      EXPECT_LE(wait, sim->wait_seconds() * (1 + 1e-9)) << "rank " << r.rank();
      EXPECT_GE(wait, 0.95 * sim->wait_seconds()) << "rank " << r.rank();
    }
  }
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
  proto::Config config = StratifiedConfig(1);
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
  proto::Config config = StratifiedConfig(3);
  UseStaleLearnTiming(config);
  RunLocal(config, app, 5);
  EXPECT_GT(app.stale_reads(), 0) << "the staleness check did not see rows left stale by the focus";
}

// Clocks that skip the gate and the refresh though their user rows are
// written by other ranks too (not dealt by user) read those rows without
// others' increments of clocks the bound asks for.
TEST(StratifiedTraining, AStratumOverRowsOthersWriteIsCaught) {
  ScopedPlantedDefect planted(PlantedDefect::kStratumWithSharedRows);
  ItemCountingApp app;
  proto::Config config = StratifiedConfig(3);
  AddStraggler(config);
  UseStaleLearnTiming(config);
  RunLocal(config, app, 5);
  EXPECT_GT(app.stale_user_reads(), 0) << "the staleness check did not see user rows read without others' clocks";
}

// Inside a stratum a rank holds its deltas for a few clocks and pushes them
// with a later clock's (ssp_mode.cc PushDue). 16 samples a clock: 24-clock
// sub-epochs, a push every 3 clocks.
proto::Config HeldPushesConfig(int epochs) { return StratifiedConfig(epochs, /*samples_per_clock=*/16); }

std::int64_t Sum(const proto::Report& report, std::int64_t (proto::RankReport::*field)() const) {
  std::int64_t sum = 0;
  for (const proto::RankReport& r : report.ranks()) sum += (r.*field)();
  return sum;
}

// A stop inside a stratum: the clocks held go out before the rank finishes,
// so the model holds every sample trained once.
TEST(StratifiedTraining, AStopInsideAStratumPushesTheClocksHeld) {
  ItemCountingApp app(/*deal_by_user=*/true);
  proto::Config config = HeldPushesConfig(2);
  config.mutable_debug()->set_stop_at_clock(37);  // inside the second sub-epoch, between pushes
  const proto::Report report = RunLocal(config, app, 5).report();
  runtime::ClearStopRequest();  // process-wide (stop_request.h): the next test's run must not see it
  ASSERT_TRUE(report.has_stopped());
  const std::int64_t trained = Sum(report, &proto::RankReport::samples);
  EXPECT_LT(trained, kSamples * 2) << "the stop came after the last clock";
  EXPECT_GT(Sum(report, &proto::RankReport::stratum_clocks), 0) << "no clock held its deltas";
  EXPECT_EQ(report.final().value(), static_cast<double>(trained)) << "item increments of held clocks lost";
  EXPECT_EQ(report.final().metrics().at("users"), static_cast<double>(trained));
}

// A checkpoint cut inside a stratum (every 7 clocks, pushes every 3): the
// clocks before it are pushed by then, so a run resumed from it ends with
// every increment once.
TEST(StratifiedTraining, ACheckpointInsideAStratumHoldsEveryClockBeforeIt) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("stalelearn_stratum_resume." + std::to_string(::getpid()));
  fs::remove_all(dir);
  constexpr int kEpochs = 2;
  proto::Config config = HeldPushesConfig(kEpochs);
  auto* checkpoint = config.mutable_training()->mutable_checkpoint();
  checkpoint->set_every_clocks(7);
  checkpoint->set_keep(100);
  checkpoint->set_dir((dir / "all").string());
  ItemCountingApp first(/*deal_by_user=*/true);
  const proto::Report whole = RunLocal(config, first, 5).report();
  EXPECT_EQ(whole.final().value(), static_cast<double>(kSamples * kEpochs));
  std::int64_t clocks = 0;
  for (const proto::RankReport& r : whole.ranks()) clocks = std::max(clocks, r.clocks());
  const std::int64_t middle = clocks / 2 / 7 * 7;
  const fs::path only = dir / "only" / runtime::CheckpointDirFor("", static_cast<std::uint64_t>(middle));
  fs::create_directories(only.parent_path());
  fs::copy(runtime::CheckpointDirFor(dir / "all", static_cast<std::uint64_t>(middle)), only,
           fs::copy_options::recursive);
  checkpoint->set_resume_dir((dir / "only").string());
  checkpoint->set_dir((dir / "only").string());
  ItemCountingApp second(/*deal_by_user=*/true);
  const proto::Report resumed = RunLocal(config, second, 5).report();
  EXPECT_EQ(resumed.resumed_from_clock(), static_cast<std::uint64_t>(middle));
  EXPECT_GT(Sum(resumed, &proto::RankReport::stratum_clocks), 0) << "no clock held its deltas";
  EXPECT_EQ(resumed.final().value(), static_cast<double>(kSamples * kEpochs)) << "increments before the cut lost";
  EXPECT_EQ(resumed.final().metrics().at("users"), static_cast<double>(kSamples * kEpochs));
  fs::remove_all(dir);
}

// A focus taken as settled before the stripe's previous writer (the
// straggler) has its last clocks in: their increments are never read, and
// reads go stale. Real time: a few runs, as the straggler's lag varies.
TEST(StratifiedTraining, AFocusTakenAsSettledAtOnceIsCaught) {
  ScopedPlantedDefect planted(PlantedDefect::kFocusSettledAtOnce);
  int stale_reads = 0;
  for (int attempt = 0; attempt < 3 && stale_reads == 0; ++attempt) {
    ItemCountingApp app(/*deal_by_user=*/true);
    proto::Config config = StratifiedConfig(3);
    AddStraggler(config);
    RunLocal(config, app, 5);
    stale_reads = app.stale_reads();
  }
  EXPECT_GT(stale_reads, 0) << "the staleness check did not see a focus read before it settled";
}

}  // namespace
}  // namespace stalelearn::testing
