// End-to-end invariants with ranks as threads on the local backend:
// I4 exactly once, I1 bounded staleness with a straggler, I2 read-your-writes
// after every refresh, I3 a corrupted batch rejected mid-run, I5 backpressure
// when the memory rank stops merging.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "framework/model/hash64.h"
#include "framework/runtime/sample_schedule.h"
#include "tests/integration/fault_injecting_transport.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

constexpr int kEpochs = 3;

std::string ExpectedChecksum(const CountingApp& app) {
  return model::HexDigest(model::ModelChecksum(app.ExpectedModel(kEpochs)));
}

struct ModeCase {
  const char* label;
  std::string mode;
  int staleness;
  int compute;
  int memory;
  proto::Partitioning partitioning;
};
// gtest would print the raw bytes, padding included.
void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.label; }

class ExactlyOnce : public ::testing::TestWithParam<ModeCase> {};

TEST_P(ExactlyOnce, IntegerTableEndsAtExactlyThePushedTotal) {
  const ModeCase c = GetParam();
  const CountingApp app(/*samples=*/600);
  proto::Config config = TestConfig(c.mode, c.staleness, c.memory, kEpochs, /*samples_per_clock=*/32);
  config.mutable_cluster()->set_partitioning(c.partitioning);
  const LocalRun run = RunLocal(config, app, c.compute + c.memory);
  const proto::Report& report = run.report();
  EXPECT_EQ(report.final().value(), 600.0 * kEpochs);
  EXPECT_EQ(report.model_checksum(), ExpectedChecksum(app)) << "merged model differs from the exact sums";
  std::int64_t samples = 0, merged = 0, rejected = 0;
  for (const proto::RankReport& r : report.ranks()) {
    samples += r.samples();
    merged += r.batches_merged();
    rejected += r.rejected_batches();
    if (r.role() == "compute" && c.mode != "ALLREDUCE") {
      EXPECT_GT(r.bytes_put(), 0) << "rank " << r.rank();
    }
    if (r.role() == "memory") {
      EXPECT_GT(r.bytes_merged(), 0) << "rank " << r.rank();
    }
  }
  EXPECT_EQ(samples, 600 * kEpochs);
  EXPECT_EQ(rejected, 0);
  if (c.mode != "ALLREDUCE") {
    EXPECT_GT(merged, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ExactlyOnce,
    ::testing::Values(ModeCase{"ssp1_3x1", "SSP", 1, 3, 1, proto::RANGE},
                      ModeCase{"bsp_2x2_hash", "BSP", 0, 2, 2, proto::HASH},
                      ModeCase{"asp_2x1", "ASP", 0, 2, 1, proto::RANGE},
                      ModeCase{"ssp2_1x2_hash", "SSP", 2, 1, 2, proto::HASH},
                      ModeCase{"direct_2x2", "DIRECT", 0, 2, 2, proto::RANGE},
                      ModeCase{"allreduce_3", "ALLREDUCE", 0, 3, 0, proto::RANGE}),
    [](const auto& info) { return std::string(info.param.label); });

// Checks every refresh of every compute rank against the exact counts: own
// samples are all in (I2), others' are within the bound (I1).
class RefreshChecker {
 public:
  RefreshChecker(const CountingApp& app, int compute_ranks, int samples_per_clock, std::uint64_t seed,
                 std::optional<int> bound)
      : samples_per_clock_(samples_per_clock), bound_(bound), owner_(static_cast<std::size_t>(app.TrainingSamples())) {
    for (int c = 0; c < compute_ranks; ++c) {
      runtime::SampleSchedule schedule(app.TrainingSamples(), compute_ranks, c, samples_per_clock, seed);
      for (std::int64_t s : schedule.EpochOrder(0)) owner_[static_cast<std::size_t>(s)] = c;
    }
    compute_ranks_ = compute_ranks;
  }

  void Check(const runtime::ClockRecord& record, const runtime::TableSet& replica) {
    std::vector<std::int64_t> sums(static_cast<std::size_t>(compute_ranks_), 0);
    for (std::size_t s = 0; s < owner_.size(); ++s) sums[owner_[s]] += replica[0].IntRow(static_cast<std::int64_t>(s))[0];
    const std::int64_t t = record.clock;
    std::lock_guard lock(mutex_);
    ++checks_;
    const int me = record.rank.value;
    // I2: exactly my t clocks of samples, no more, no less.
    if (sums[me] != t * samples_per_clock_) ++own_violations_;
    for (int c = 0; c < compute_ranks_; ++c) {
      if (c == me || !bound_) continue;
      // I1: every other rank's clocks 0..t-s-1 are in. Nobody runs more than
      // s clocks ahead: another rank is at most in clock t+s, so it may have
      // completed (and had merged) at most t+s+1 clocks.
      if (sums[c] < std::max<std::int64_t>(0, t - *bound_) * samples_per_clock_) ++stale_violations_;
      if (sums[c] > (t + *bound_ + 1) * samples_per_clock_) ++ahead_violations_;
    }
    if (bound_ && record.observed_staleness > *bound_) ++record_violations_;
    if (bound_ && static_cast<std::int64_t>(record.min_merged_of_others) + *bound_ < t) ++record_violations_;
    max_staleness_ = std::max(max_staleness_, record.observed_staleness);
  }

  int checks_ = 0, own_violations_ = 0, stale_violations_ = 0, ahead_violations_ = 0, record_violations_ = 0;
  std::int64_t max_staleness_ = 0;

 private:
  int samples_per_clock_;
  std::optional<int> bound_;
  std::vector<int> owner_;
  int compute_ranks_ = 0;
  std::mutex mutex_;
};

class BoundedStaleness : public ::testing::TestWithParam<int> {};

TEST_P(BoundedStaleness, WithAStragglerNoRankRunsMoreThanSClocksAhead) {
  const int s = GetParam();
  constexpr int kCompute = 3, kPerClock = 16, kClocksPerEpoch = 10;
  const CountingApp app(kCompute * kPerClock * kClocksPerEpoch, /*spin_per_sample=*/2000);
  proto::Config config = TestConfig(s == 0 ? "BSP" : "SSP", s, 1, kEpochs, kPerClock);
  config.mutable_training()->mutable_straggler()->set_rank(1);
  config.mutable_training()->mutable_straggler()->set_slowdown(4);
  RefreshChecker checker(app, kCompute, kPerClock, config.seed(), s);
  runtime::RuntimeHooks hooks;
  hooks.after_refresh = [&](const runtime::ClockRecord& r, const runtime::TableSet& m) { checker.Check(r, m); };
  const LocalRun run = RunLocal(config, app, kCompute + 1, hooks);

  EXPECT_EQ(checker.checks_, kCompute * kClocksPerEpoch * kEpochs);
  EXPECT_EQ(checker.own_violations_, 0) << "a replica lacked its own updates after a refresh (I2)";
  EXPECT_EQ(checker.stale_violations_, 0) << "a replica missed updates older than the bound (I1)";
  EXPECT_EQ(checker.ahead_violations_, 0) << "a rank ran more than s clocks ahead (I1)";
  EXPECT_EQ(checker.record_violations_, 0);
  for (const runtime::RankRun& rank : run.ranks) {
    for (const runtime::ClockRecord& r : rank.records) EXPECT_LE(r.observed_staleness, s) << "clock " << r.clock;
  }
  for (const proto::RankReport& r : run.report().ranks()) EXPECT_LE(r.max_observed_staleness(), s);
  EXPECT_EQ(run.report().final().value(), app.TrainingSamples() * kEpochs);
}

INSTANTIATE_TEST_SUITE_P(Bounds, BoundedStaleness, ::testing::Values(0, 1, 3));

TEST(ReadYourWrites, HoldsAfterEveryRefreshEvenWithoutABound) {
  const CountingApp app(2 * 16 * 8);
  const proto::Config config = TestConfig("ASP", 0, 1, kEpochs, 16);
  RefreshChecker checker(app, 2, 16, config.seed(), std::nullopt);
  runtime::RuntimeHooks hooks;
  hooks.after_refresh = [&](const runtime::ClockRecord& r, const runtime::TableSet& m) { checker.Check(r, m); };
  RunLocal(config, app, 3, hooks);
  EXPECT_EQ(checker.checks_, 2 * 8 * kEpochs);
  EXPECT_EQ(checker.own_violations_, 0);
}

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
    // Let the writers fill their rings, then resume merging.
    while (!run_over.load() && started_while_paused.load() < 2 * (kSlots + 1)) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
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
