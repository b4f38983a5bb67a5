// End-to-end invariants with ranks as threads on the local backend:
// I4 exactly once, I1 bounded staleness with a straggler, I2 read-your-writes
// after every refresh (bodies in invariant_checks.h, shared with the
// planted-defect self-test), I3 a corrupted batch rejected mid-run, I5
// backpressure when the memory rank stops merging.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/integration/fault_injecting_transport.h"
#include "tests/integration/invariant_checks.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr int kEpochs = 3;

class ExactlyOnce : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ExactlyOnce, IntegerTableEndsAtExactlyThePushedTotal) { CheckExactlyOnce(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Modes, ExactlyOnce,
    ::testing::Values(ModeCase{"ssp1_3x1", "SSP", 1, 3, 1, proto::RANGE},
                      ModeCase{"bsp_2x2_hash", "BSP", 0, 2, 2, proto::HASH},
                      ModeCase{"asp_2x1", "ASP", 0, 2, 1, proto::RANGE},
                      ModeCase{"essp2_3x1", "ESSP", 2, 3, 1, proto::RANGE},
                      ModeCase{"ssp2_1x2_hash", "SSP", 2, 1, 2, proto::HASH},
                      ModeCase{"direct_2x2", "DIRECT", 0, 2, 2, proto::RANGE},
                      ModeCase{"allreduce_3", "ALLREDUCE", 0, 3, 0, proto::RANGE}),
    [](const auto& info) { return std::string(info.param.label); });

class ResumeIsExact : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ResumeIsExact, ResumedRunEndsAtExactlyThePushedTotal) { CheckResumeIsExact(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Modes, ResumeIsExact,
    ::testing::Values(ModeCase{"ssp1_3x1", "SSP", 1, 3, 1, proto::RANGE},
                      ModeCase{"bsp_2x2_hash", "BSP", 0, 2, 2, proto::HASH},
                      ModeCase{"direct_2x2", "DIRECT", 0, 2, 2, proto::RANGE},
                      // No bound: a rank may overtake several checkpoint clocks (several forks at once).
                      ModeCase{"asp_3x1", "ASP", 0, 3, 1, proto::RANGE}),
    [](const auto& info) { return std::string(info.param.label); });

class BoundedStaleness : public ::testing::TestWithParam<int> {};

TEST_P(BoundedStaleness, WithAStragglerNoRankRunsMoreThanSClocksAhead) {
  CheckBoundedStalenessWithStraggler(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Bounds, BoundedStaleness, ::testing::Values(0, 1, 3));

// ESSP refreshes before every clock; its bound and read-your-writes are SSP's.
TEST(BoundedStalenessEssp, WithAStragglerNoRankRunsMoreThanSClocksAhead) { CheckBoundedStalenessWithStraggler(2, "ESSP"); }

// What makes ESSP eager: before every clock its compute ranks take in what
// was published, so the staleness they observe stays near the publishing
// lag, where SSP with a loose bound keeps its replica until the bound forces
// a refresh and observes up to s (deterministic: on the timing backend).
TEST(Essp, ObservesLessStalenessThanSspUnderTheSameBound) {
  constexpr int kPerClock = 8, kStaleness = 8;
  const CountingApp app(3 * kPerClock * 60);
  const auto mean_observed = [&](const char* mode) {
    // The timing backend: virtual time makes the staleness seen deterministic.
    proto::Config config = TestConfig(mode, kStaleness, 1, /*epochs=*/1, kPerClock);
    UseStaleLearnTiming(config);
    const LocalRun run = RunLocal(config, app, 4);
    double sum = 0;
    std::int64_t n = 0;
    for (const runtime::RankRun& rank : run.ranks) {
      for (const runtime::ClockRecord& r : rank.records) {
        EXPECT_LE(r.observed_staleness, kStaleness + 1) << mode;
        sum += static_cast<double>(r.observed_staleness);
        ++n;
      }
    }
    EXPECT_GT(n, 0) << mode;
    return sum / static_cast<double>(std::max<std::int64_t>(n, 1));
  };
  const double essp = mean_observed("ESSP");
  const double ssp = mean_observed("SSP");
  std::printf("  mean observed staleness: ESSP %.2f, SSP %.2f (s = %d)\n", essp, ssp, kStaleness);
  EXPECT_LT(essp + 1.0, ssp) << "ESSP must refresh before every clock, not when the bound forces it";
}

TEST(ReadYourWrites, HoldsAfterEveryRefreshEvenWithoutABound) { CheckReadYourWritesWithoutABound(); }

TEST(NothingTorn, CorruptedBatchIsRejectedCountedAndTheRunGoesOn) {
  constexpr int kPerClock = 16;
  const CountingApp app(2 * kPerClock * 6);
  const proto::Config config = TestConfig("SSP", 1, 1, kEpochs, kPerClock);
  runtime::RuntimeHooks hooks;
  std::atomic<int> injected{0};
  hooks.wrap_transport = [&](transport::Transport& inner) -> std::unique_ptr<transport::Transport> {
    if (inner.rank().value != 1) return nullptr;  // only compute rank 1 misbehaves
    auto payload_puts = std::make_shared<int>(0);
    return std::make_unique<FaultInjectingTransport>(inner, [payload_puts, &injected](const PutCall& call) {
      if (call.bytes <= 64) return PutFault::kNone;  // commit words, empty batches
      if (++*payload_puts != 3) return PutFault::kNone;
      ++injected;
      return PutFault::kCorrupt;
    });
  };
  const LocalRun run = RunLocal(config, app, 3, hooks);
  ASSERT_EQ(injected.load(), 1);
  const proto::Report& report = run.report();
  EXPECT_EQ(report.ranks(2).role(), "memory");
  EXPECT_EQ(report.ranks(2).rejected_batches(), 1);
  // The rejected batch held one clock of rank 1: kPerClock samples' increments.
  EXPECT_EQ(report.final().value(), app.TrainingSamples() * kEpochs - kPerClock);
}

TEST(Backpressure, StoppedMemoryRankMakesWritersWaitWithinTheRing) {
  constexpr int kSlots = 2;
  const CountingApp app(2 * 8 * 10);
  proto::Config config = TestConfig("ASP", 0, 1, 1, 8);
  config.mutable_cluster()->set_ring_slots(kSlots);
  std::atomic<bool> paused{true};
  std::atomic<int> started_while_paused{0};
  std::atomic<std::int64_t> highest_clock_while_paused{-1};
  runtime::RuntimeHooks hooks;
  hooks.merging_paused = [&](model::MemoryIndex) { return paused.load(); };
  hooks.after_refresh = [&](const runtime::ClockRecord& r, const runtime::TableSet&) {
    if (!paused.load()) return;
    ++started_while_paused;
    std::int64_t seen = highest_clock_while_paused.load();
    while (r.clock > seen && !highest_clock_while_paused.compare_exchange_weak(seen, r.clock)) {
    }
  };
  std::atomic<bool> run_over{false};
  std::thread release([&] {
    // Let the writers fill their rings, then resume merging. The wait before
    // resuming follows the ranks' own pace (ten times what their first
    // kSlots + 1 clocks took, at least 100 ms): on a loaded machine a rank
    // still gets to its blocked push of clock kSlots first.
    const auto start = std::chrono::steady_clock::now();
    while (!run_over.load() && started_while_paused.load() < 2 * (kSlots + 1)) std::this_thread::yield();
    const auto progress = std::chrono::steady_clock::now() - start;
    std::this_thread::sleep_for(std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(100),
                                                                              10 * progress));
    paused = false;
  });
  LocalRun run;
  try {
    run = RunLocal(config, app, 3, hooks);
  } catch (...) {  // a failed run must not leave the thread unjoined
    run_over = true;
    release.join();
    throw;
  }
  run_over = true;
  release.join();
  // Clocks 0..kSlots-1 fill the ring; clock kSlots starts, then its push waits.
  EXPECT_EQ(highest_clock_while_paused.load(), kSlots);
  EXPECT_EQ(run.report().final().value(), app.TrainingSamples());
  for (const proto::RankReport& r : run.report().ranks()) {
    if (r.role() == "compute") {
      EXPECT_GT(r.stall_seconds(), 0.0) << "rank " << r.rank() << " never waited";
    }
  }
}

}  // namespace
}  // namespace stalelearn::testing
