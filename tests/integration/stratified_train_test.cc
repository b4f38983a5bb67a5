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
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "framework/core/error.h"
#include "framework/core/planted_defect.h"
#include "framework/runtime/checkpoint_store.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/stop_request.h"
#include "tests/integration/item_counting_app.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

void CheckStratifiedReadsAreFreshAndExact(bool timing, bool deal_by_user = false, int memory_ranks = 1) {
  constexpr int kEpochs = 3;
  ItemCountingApp app(deal_by_user);
  proto::Config config = StratifiedConfig(kEpochs);
  config.mutable_cluster()->set_memory_ranks(memory_ranks);
  if (deal_by_user) AddStraggler(config);
  if (timing) UseStaleLearnTiming(config);
  const LocalRun run = RunLocal(config, app, /*world_size=*/4 + memory_ranks);
  const proto::Report& report = run.report();
  EXPECT_EQ(report.final().value(), static_cast<double>(kSamples * kEpochs)) << "item increments lost or doubled";
  EXPECT_EQ(report.final().metrics().at("users"), static_cast<double>(kSamples * kEpochs));
  EXPECT_EQ(app.stale_reads(), 0) << "an item row was read staler than the bound allows";
  EXPECT_EQ(app.stale_user_reads(), 0) << "a user row was read staler than the bound allows";
  EXPECT_EQ(app.lost_own(), 0) << "a row was read without this rank's own increments";
  int planned = 0;
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() != "compute") continue;
    EXPECT_NE(r.locality_plan().reason().find(fmt::format("stratified over {} stripes", 4 * runtime::kStripesPerRank)),
              std::string::npos)
        << r.locality_plan().reason();
    planned += r.locality_plan().planned() ? 1 : 0;
    // Users shared by ranks: every clock is gated and every refresh reads
    // records; dealt by user, clocks in a settled stripe skip both (users
    // written alone), most of them.
    // Inside a stratum the next stripe is read ahead (at most once per
    // stripe change in an epoch, none before an epoch's first): the checks
    // above then cover the rows those reads installed.
    const std::int64_t changes = static_cast<std::int64_t>(kEpochs) * (4 * runtime::kStripesPerRank - 1);
    if (deal_by_user) {
      EXPECT_GT(r.stratum_clocks(), r.clocks() / 2) << "rank " << r.rank();
      // Under deterministic timing most are read ahead; in real time a
      // rank whose writer lags (the straggler, or the scheduler's doing)
      // loads the stripe when it takes it instead.
      if (timing) EXPECT_GT(r.stripes_read_ahead(), changes / 2) << "rank " << r.rank();
      EXPECT_LE(r.stripes_read_ahead(), changes) << "rank " << r.rank();
      // None begun before its writer (slowed down here) was done with it,
      // none for nothing.
      EXPECT_EQ(r.stripes_read_ahead_unsettled(), 0) << "rank " << r.rank();
      EXPECT_EQ(r.stripes_read_ahead_dropped(), 0) << "rank " << r.rank();
    } else {
      EXPECT_EQ(r.meta_only_reads(), 0) << "rank " << r.rank();
      EXPECT_EQ(r.stratum_clocks(), 0) << "rank " << r.rank();
      EXPECT_EQ(r.stripes_read_ahead(), 0) << "rank " << r.rank();
    }
  }
  EXPECT_EQ(planned, 4);
  // In a stratum a rank is the one writer of every row it holds: its
  // batches carry the rows' values, which the memory ranks write over the
  // master's (sync::kRowValues); the exact counts above show no increment
  // was lost to them. Outside strata every batch is added.
  std::int64_t written = 0;
  std::int64_t merged = 0;
  for (const proto::RankReport& r : report.ranks()) {
    written += r.role() == "memory" ? r.rows_written() : 0;
    merged += r.role() == "memory" ? r.rows_merged() : 0;
  }
  if (deal_by_user) {
    EXPECT_GT(written, merged / 2) << "of " << merged << " rows merged";
  } else {
    EXPECT_EQ(written, 0);
  }
  if (deal_by_user) {
    // Users are written alone: their deltas stay in the replicas until each
    // epoch's end (ssp_mode.cc kept_tables_), and an evaluation waits for
    // every rank's epoch: each point holds exactly the epochs before it.
    ASSERT_EQ(report.curve_size(), kEpochs);
    for (const proto::CurvePoint& point : report.curve()) {
      EXPECT_EQ(point.metrics().at("users"), static_cast<double>(kSamples * point.epoch())) << "epoch " << point.epoch();
    }
  }
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

// Over two memory ranks a stripe's rows live on one of them, and a
// stratum's pushes but its last go only to the memory ranks they have
// deltas for (ssp_mode.cc AfterClock; DeltaPusher::PushClock's
// only_with_deltas): counts stay exact and reads fresh (the next rank waits
// for the last push, which reaches both), and a rank makes fewer puts than
// two (payload, commit word) to every memory rank at each of its two
// pushes a stratum, which pushes to every memory rank would take at least.
TEST(StratifiedTraining, PushesInsideAStratumSkipMemoryRanksWithoutDeltas) {
  for (const bool timing : {true, false}) {
    SCOPED_TRACE(timing ? "timing" : "real time");
    CheckStratifiedReadsAreFreshAndExact(timing, /*deal_by_user=*/true, /*memory_ranks=*/2);
  }
  ItemCountingApp app(/*deal_by_user=*/true);
  proto::Config config = StratifiedConfig(3);
  config.mutable_cluster()->set_memory_ranks(2);
  UseStaleLearnTiming(config);
  const proto::Report report = RunLocal(config, app, /*world_size=*/6).report();
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() != "compute") continue;
    std::int64_t strata = 0;
    for (const proto::PhaseTime& p : r.phases()) {
      if (p.phase() == "hand_over") strata = p.entries();
    }
    ASSERT_GT(strata, 0) << "rank " << r.rank();
    EXPECT_LT(r.puts(), 2 * 2 * 2 * strata) << "rank " << r.rank() << ": every push reached both memory ranks";
  }
}

// A rank waits at a stripe change only for the stripe's writer before it
// (StripeHandOver::FocusRows), not for every rank: with rank 1 fifty times
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
  const std::int64_t sub_epoch = clocks / kEpochs / (4 * runtime::kStripesPerRank);
  ASSERT_GT(sub_epoch, 0);
  EXPECT_GE(app.max_lead(), sub_epoch) << "every sub-epoch waited for the slowest rank";
  // Rank 2 takes rank 1's stripes: it reads none of them ahead before rank
  // 1 is done with it (ssp_mode.cc ReadAheadIfSettled), where a read begun
  // at the stratum's last push but one would get rank 1's rows again.
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() != "compute") continue;
    EXPECT_EQ(r.stripes_read_ahead_unsettled(), 0) << "rank " << r.rank();
    EXPECT_EQ(r.stripes_read_ahead_dropped(), 0) << "rank " << r.rank();
  }
  EXPECT_EQ(app.stale_reads(), 0);
  EXPECT_EQ(app.stale_user_reads(), 0);
  EXPECT_EQ(app.lost_own(), 0);
  EXPECT_EQ(report.final().value(), static_cast<double>(kSamples * kEpochs));
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
// with a later clock's (modes/stratum_clocks.h, PushDue). 16 samples a clock: 12-clock
// sub-epochs, a push every 6 clocks.
proto::Config HeldPushesConfig(int epochs) { return StratifiedConfig(epochs, /*samples_per_clock=*/16); }

std::int64_t Sum(const proto::Report& report, std::int64_t (proto::RankReport::*field)() const) {
  std::int64_t sum = 0;
  for (const proto::RankReport& r : report.ranks()) sum += (r.*field)();
  return sum;
}

// A stop inside a stratum: the clocks held go out before the rank finishes,
// and so do the user rows kept back since the epoch began (written alone:
// ssp_mode.cc kept_tables_), also where the stop comes right after a push
// (nothing held then, users still kept). So the model holds every sample
// trained once. The stops span more than a push's clocks, in real time and
// under deterministic timing (where a final read that does not wait for a
// push after the last clock's reads before it, every time).
void CheckStopsInsideAStratum(bool timing) {
  for (std::int64_t stop = 31; stop <= 38; ++stop) {  // inside the third sub-epoch
    ItemCountingApp app(/*deal_by_user=*/true);
    proto::Config config = HeldPushesConfig(2);
    if (timing) UseStaleLearnTiming(config);
    config.mutable_debug()->set_stop_at_clock(stop);
    const proto::Report report = RunLocal(config, app, 5).report();
    runtime::ClearStopRequest();  // process-wide (stop_request.h): the next run must not see it
    ASSERT_TRUE(report.has_stopped()) << "stop at " << stop;
    // Ranks that keep rows back commit a clock ahead (StopAgreement::
    // set_commits_ahead), so the stop lands one clock after the one asked
    // for, decided before any rank's last push: that push sends all.
    EXPECT_EQ(report.stopped().clock(), stop + 1);
    const std::int64_t trained = Sum(report, &proto::RankReport::samples);
    EXPECT_LT(trained, kSamples * 2) << "the stop came after the last clock";
    EXPECT_GT(Sum(report, &proto::RankReport::stratum_clocks), 0) << "no clock held its deltas";
    EXPECT_EQ(report.final().value(), static_cast<double>(trained)) << "item increments of held clocks lost, stop at "
                                                                     << stop;
    EXPECT_EQ(report.final().metrics().at("users"), static_cast<double>(trained))
        << "kept user increments lost, stop at " << stop;
  }
}

TEST(StratifiedTraining, AStopInsideAStratumPushesTheClocksHeld) { CheckStopsInsideAStratum(/*timing=*/false); }

TEST(StratifiedTraining, AStopInsideAStratumPushesTheClocksHeldUnderDeterministicTiming) {
  CheckStopsInsideAStratum(/*timing=*/true);
}

// A checkpoint cut inside a stratum: the clocks before it are pushed by
// then, so a run resumed from it ends with every increment once. Pushes
// come every 6 clocks (12-clock sub-epochs): cuts every 7 clocks mostly
// fall between pushes (held clocks), cuts every 6 right after them, where
// only the user rows kept back wait (PushHeld pushes both, as the clock
// before the cut: the memory ranks' cut takes every batch of a clock
// before it, checkpoint_cut.h).
// With `items` from about 3000 on the stripes are gathered (row requests the
// memory ranks keep until the writer is done): a resumed run starts with no
// request in flight and gathers again.
void CheckResumedFromACutInsideAStratum(int every, std::int64_t items = kItems) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("stalelearn_stratum_resume." + std::to_string(::getpid()) + "." + std::to_string(every));
  fs::remove_all(dir);
  constexpr int kEpochs = 2;
  proto::Config config = HeldPushesConfig(kEpochs);
  auto* checkpoint = config.mutable_training()->mutable_checkpoint();
  checkpoint->set_every_clocks(every);
  checkpoint->set_keep(100);
  checkpoint->set_dir((dir / "all").string());
  ItemCountingApp first(/*deal_by_user=*/true, items);
  const proto::Report whole = RunLocal(config, first, 5).report();
  EXPECT_EQ(whole.final().value(), static_cast<double>(kSamples * kEpochs));
  std::int64_t clocks = 0;
  for (const proto::RankReport& r : whole.ranks()) clocks = std::max(clocks, r.clocks());
  // In the first epoch, not at its end (whose push sends all).
  const std::int64_t middle = (clocks / 2 - 1) / every * every;
  const fs::path only = dir / "only" / runtime::CheckpointDirFor("", static_cast<std::uint64_t>(middle));
  fs::create_directories(only.parent_path());
  fs::copy(runtime::CheckpointDirFor(dir / "all", static_cast<std::uint64_t>(middle)), only,
           fs::copy_options::recursive);
  checkpoint->set_resume_dir((dir / "only").string());
  checkpoint->set_dir((dir / "only").string());
  ItemCountingApp second(/*deal_by_user=*/true, items);
  const proto::Report resumed = RunLocal(config, second, 5).report();
  EXPECT_EQ(resumed.resumed_from_clock(), static_cast<std::uint64_t>(middle));
  EXPECT_GT(Sum(resumed, &proto::RankReport::stratum_clocks), 0) << "no clock held its deltas";
  EXPECT_EQ(resumed.final().value(), static_cast<double>(kSamples * kEpochs)) << "increments before the cut lost";
  EXPECT_EQ(resumed.final().metrics().at("users"), static_cast<double>(kSamples * kEpochs))
      << "user increments before the cut lost (cut at " << middle << ")";
  EXPECT_EQ(second.lost_own(), 0);
  EXPECT_EQ(second.stale_reads(), 0);
  if (items > kItems) EXPECT_GT(Sum(resumed, &proto::RankReport::rows_gathered), 0) << "no stripe gathered";
  fs::remove_all(dir);
}

TEST(StratifiedTraining, ACheckpointInsideAStratumHoldsEveryClockBeforeIt) { CheckResumedFromACutInsideAStratum(7); }

TEST(StratifiedTraining, ACheckpointRightAfterAPushHoldsTheRowsKeptBack) { CheckResumedFromACutInsideAStratum(6); }

TEST(StratifiedTraining, AResumeWithGatheredStripesEndsExact) { CheckResumedFromACutInsideAStratum(7, 3000); }

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
