// The report's loop phases (framework/runtime/phase_times.h) and the
// training makespan, on a stratified run of the counting app.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "framework/runtime/locality_plan.h"
#include "tests/integration/item_counting_app.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

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
      EXPECT_EQ(phases["hand_over"].entries(), kEpochs * 4 * runtime::kStripesPerRank) << "rank " << r.rank();
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

// Each phase's bytes are the counting transport's deltas over it: the
// kernel moves nothing, hand-overs only get (the stripe), pushes put (the
// deltas; and get the next stripe read ahead), the final read gets at least
// the whole model, and the phases together account for no more than the
// rank's bytes_get and bytes_put (the rest: start-up and release). Counts
// swapped between gets and puts, or taken from the wrong phase's window,
// break one of these.
TEST(LoopPhases, CountTheBytesEachPhaseGotAndPut) {
  ItemCountingApp app(/*deal_by_user=*/true);
  const proto::Report report = RunLocal(StratifiedConfig(2), app, 5).report();
  std::int64_t model_bytes = 0;
  for (const runtime::TableSpec& t : app.Tables()) model_bytes += t.rows * static_cast<std::int64_t>(t.row_bytes());
  int final_readers = 0;
  for (const proto::RankReport& r : report.ranks()) {
    if (r.role() != "compute") continue;
    std::map<std::string, proto::PhaseTime> phases;
    std::int64_t got = 0, put = 0;
    for (const proto::PhaseTime& p : r.phases()) {
      phases[p.phase()] = p;
      got += p.bytes_get();
      put += p.bytes_put();
    }
    EXPECT_EQ(phases["kernel"].bytes_get() + phases["kernel"].bytes_put(), 0) << "rank " << r.rank();
    EXPECT_GT(phases["hand_over"].bytes_get(), 0) << "rank " << r.rank();
    EXPECT_EQ(phases["hand_over"].bytes_put(), 0) << "rank " << r.rank();
    EXPECT_GT(phases["push"].bytes_put(), 0) << "rank " << r.rank();
    EXPECT_LE(got, r.bytes_get()) << "rank " << r.rank();
    EXPECT_LE(put, r.bytes_put()) << "rank " << r.rank();
    EXPECT_GT(put, r.bytes_put() / 2) << "rank " << r.rank();  // the pushes are most of a rank's puts
    if (phases.count("final_read") != 0) {
      ++final_readers;
      EXPECT_GE(phases["final_read"].bytes_get(), model_bytes) << "rank " << r.rank();
    }
  }
  EXPECT_GE(final_readers, 1);
}

}  // namespace
}  // namespace stalelearn::testing
