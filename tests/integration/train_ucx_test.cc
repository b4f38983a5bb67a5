// Training end to end under mpirun on the ucx backend (4 processes: 3
// compute + 1 memory rank): exactly once with an integer table (I4), bound
// and read-your-writes on every refresh (I1, I2), a corrupted batch rejected
// (I3), and MF convergence on the real data in SSP and ALLREDUCE.
// Every test is collective: all ranks run it in the same order.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "apps/mf/datasets.h"
#include "apps/mf/mf_app.h"
#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/runtime/sample_schedule.h"
#include "tests/integration/fault_injecting_transport.h"
#include "tests/integration/item_counting_app.h"
#include "tests/integration/mpi_gtest_main.h"
#include "tests/integration/movielens_file.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr int kCompute = 3;

runtime::RankRun RunUcx(proto::Config config, const runtime::App& app, runtime::RuntimeHooks hooks = {}) {
  config.mutable_backend()->set_name("ucx");
  sync::WaitOptions wait;
  wait.timeout = std::chrono::seconds(60);
  const runtime::TrainInputs inputs{config, app, backends::BuiltinRegistry(), BuiltinModes(), std::move(hooks), wait};
  return ValueOrThrow(runtime::TrainRank(inputs, MpiTestBootstrap()));
}

TEST(TrainUcx, IntegerTableEndsAtExactlyThePushedTotal) {
  ASSERT_EQ(MpiTestBootstrap().world_size(), kCompute + 1);
  const CountingApp app(900);
  const proto::Config config = TestConfig("SSP", 1, 1, 3, 32);
  const runtime::RankRun run = RunUcx(config, app);
  EXPECT_EQ(run.report.final().value(), 900.0 * 3);
  EXPECT_EQ(run.report.model_checksum(), model::HexDigest(model::ModelChecksum(app.ExpectedModel(3))));
  EXPECT_EQ(run.report.backend(), "ucx");
  for (const proto::RankReport& r : run.report.ranks()) {
    if (r.role() == "compute") {
      EXPECT_GT(r.bytes_put(), 0);
      EXPECT_LE(r.max_observed_staleness(), 1);
    } else {
      EXPECT_GT(r.bytes_merged(), 0);
      EXPECT_EQ(r.rejected_batches(), 0);
    }
  }
}

TEST(TrainUcx, EveryRefreshHoldsItsOwnUpdatesAndOthersWithinTheBound) {
  constexpr int kPerClock = 16, kClocks = 8, kBound = 1;
  const CountingApp app(kCompute * kPerClock * kClocks, /*spin_per_sample=*/2000);
  proto::Config config = TestConfig("SSP", kBound, 1, 2, kPerClock);
  config.mutable_training()->mutable_straggler()->set_rank(0);
  config.mutable_training()->mutable_straggler()->set_slowdown(4);
  // The check reads every rank's rows: replicas must hold them all.
  config.mutable_training()->set_full_replicas(true);
  std::vector<int> owner(static_cast<std::size_t>(app.TrainingSamples()));
  for (int c = 0; c < kCompute; ++c) {
    runtime::SampleSchedule schedule(app.TrainingSamples(), kCompute, c, kPerClock, config.seed());
    for (std::int64_t s : schedule.EpochOrder(0)) owner[static_cast<std::size_t>(s)] = c;
  }
  int checks = 0, violations = 0;
  runtime::RuntimeHooks hooks;
  hooks.after_refresh = [&](const runtime::ClockRecord& r, const runtime::TableSet& replica) {
    std::vector<std::int64_t> sums(kCompute, 0);
    for (std::size_t s = 0; s < owner.size(); ++s) sums[owner[s]] += replica[0].IntRow(static_cast<std::int64_t>(s))[0];
    ++checks;
    if (sums[r.rank.value] != r.clock * kPerClock) ++violations;  // I2
    for (int c = 0; c < kCompute; ++c) {
      if (c != r.rank.value && sums[c] < std::max<std::int64_t>(0, r.clock - kBound) * kPerClock) ++violations;  // I1
    }
  };
  const runtime::RankRun run = RunUcx(config, app, hooks);
  if (MpiTestBootstrap().rank().value < kCompute) {
    EXPECT_EQ(checks, kClocks * 2);
  }
  EXPECT_EQ(violations, 0);
}

TEST(TrainUcx, CorruptedBatchIsRejectedAndTheRunGoesOn) {
  constexpr int kPerClock = 16;
  const CountingApp app(kCompute * kPerClock * 4);
  const proto::Config config = TestConfig("SSP", 1, 1, 2, kPerClock);
  runtime::RuntimeHooks hooks;
  hooks.wrap_transport = [](transport::Transport& inner) -> std::unique_ptr<transport::Transport> {
    if (inner.rank().value != 2) return nullptr;
    auto puts = std::make_shared<int>(0);
    return std::make_unique<FaultInjectingTransport>(inner, [puts](const PutCall& call) {
      return call.bytes > 64 && ++*puts == 2 ? PutFault::kCorrupt : PutFault::kNone;
    });
  };
  const runtime::RankRun run = RunUcx(config, app, hooks);
  EXPECT_EQ(run.report.ranks(kCompute).rejected_batches(), 1);
  EXPECT_EQ(run.report.final().value(), app.TrainingSamples() * 2 - kPerClock);
}

// Timing over ucx (issue 5): stamps travel in batch and snapshot headers,
// the makespan is reported, and the run says it is not deterministic.
// Stratified scheduling with sparse stripes over one-sided UCX: a rank asks
// the memory rank for its next stripe's rows at the stratum's first clock,
// and the memory rank answers once the stripe's writer is done with it
// (sync::kAwaitsClocks); asks for stripes read whole go out without
// waiting. The counts end exact (I4) and no rank reads a row without its
// own increments (I2); the app's check of other ranks' increments (I1)
// sees only this process's (its counters are per process here: the
// in-process StratifiedGather tests check it across ranks).
TEST(TrainUcx, StratifiedSparseStripesAreGatheredAndCountsStayExact) {
  constexpr int kEpochs = 3;
  constexpr std::int64_t kSparseItems = 3000;
  ItemCountingApp app(/*deal_by_user=*/true, kSparseItems);
  const runtime::RankRun run = RunUcx(StratifiedConfig(kEpochs), app);
  EXPECT_EQ(run.report.final().value(), static_cast<double>(kSamples * kEpochs)) << "item increments lost or doubled";
  EXPECT_EQ(app.lost_own(), 0) << "a row was read without this rank's own increments";
  EXPECT_EQ(app.stale_reads(), 0);
  std::int64_t gathered = 0;
  for (const proto::RankReport& r : run.report.ranks()) {
    if (r.role() == "memory") {
      gathered += r.rows_gathered();
      EXPECT_EQ(r.rejected_batches(), 0);
    }
  }
  EXPECT_GT(gathered, 0) << "no stripe was gathered: the requests went untested";
}

TEST(TrainUcx, TimingOverUcxReportsANonDeterministicMakespan) {
  const CountingApp app(900);
  proto::Config config = TestConfig("SSP", 1, 1, 3, 32);
  UseStaleLearnTiming(config, {{"inner", "ucx"}});
  sync::WaitOptions wait;
  wait.timeout = std::chrono::seconds(60);
  const runtime::TrainInputs inputs{config, app, backends::BuiltinRegistry(), BuiltinModes(), {}, wait};
  const runtime::RankRun run = ValueOrThrow(runtime::TrainRank(inputs, MpiTestBootstrap()));
  EXPECT_EQ(run.report.model_checksum(), model::HexDigest(model::ModelChecksum(app.ExpectedModel(3))));
  EXPECT_EQ(run.report.backend(), "timing");
  const proto::Simulated& s = run.report.simulated();
  EXPECT_FALSE(s.deterministic());
  EXPECT_EQ(s.memory_preset(), "hmc2");
  ASSERT_EQ(s.ranks_size(), kCompute + 1);
  for (const proto::SimulatedRank& r : s.ranks()) {
    const double clock = r.compute_seconds() + r.transfer_seconds() + r.merge_seconds() + r.wait_seconds();
    EXPECT_GT(clock, 0) << "rank " << r.rank();
    EXPECT_LE(clock, s.total_seconds() * (1 + 1e-9)) << "rank " << r.rank();
  }
  EXPECT_GT(s.ranks(kCompute).merge_seconds(), 0);  // the memory rank
  // A memory rank's clock follows the stamps of what it merged: past the
  // compute ranks' compute at least.
  EXPECT_GE(s.ranks(kCompute).merge_seconds() + s.ranks(kCompute).wait_seconds(), s.ranks(0).compute_seconds());
  ASSERT_EQ(run.report.curve_size(), 3);
  for (const proto::CurvePoint& p : run.report.curve()) EXPECT_GT(p.simulated_seconds(), 0);
}

class MfOnUcx : public ::testing::TestWithParam<std::string> {};

TEST_P(MfOnUcx, Converges) {
  const std::filesystem::path file = MovieLensFile();
  // The same file is visible to every rank of this one-machine job, so all skip together.
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched; run: deploy/fetch-data.sh movielens";
  proto::Config config = TestConfig(GetParam(), 2, 1, 5, 1024);
  config.mutable_cluster()->set_slot_bytes(1 << 20);
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, file));
  const runtime::RankRun run = RunUcx(config, *app);
  EXPECT_LE(run.report.final().value(), 0.91);
}

INSTANTIATE_TEST_SUITE_P(Modes, MfOnUcx,
                         ::testing::Values("SSP", "BSP", "ASP", "DIRECT", "ALLREDUCE"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace stalelearn::testing
