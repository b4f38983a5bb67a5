// The stop agreement (framework/runtime/stop_agreement.h): every compute rank
// stops before the same clock C, no rank is past C when it is decided (C is
// at least the clock any rank already trains), and nobody waits for ever:
// on the threads' shared board and with the collective that processes use
// (run here on threads behind a bootstrap that hides the in-process one).
#include "framework/runtime/stop_agreement.h"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/runtime/stop_request.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::runtime {
namespace {

using transport::Bootstrap;
using transport::Bytes;

// Forwards to an in-process bootstrap without being one: the agreement takes
// the processes' path (collectives) instead of the shared board.
class ProcessLikeBootstrap final : public Bootstrap {
 public:
  explicit ProcessLikeBootstrap(Bootstrap& inner) : inner_(inner) {}
  transport::Rank rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  Status Put(std::string_view key, std::span<const std::byte> value) override { return inner_.Put(key, value); }
  Result<Bytes> Get(transport::Rank owner, std::string_view key) override { return inner_.Get(owner, key); }
  Status Sync() override { return inner_.Sync(); }
  Result<std::vector<Bytes>> AllGather(std::string_view key, std::span<const std::byte> mine) override {
    return inner_.AllGather(key, mine);
  }
  Status AllReduceSum(std::span<float> values) override { return inner_.AllReduceSum(values); }
  Status AllReduceSum(std::span<double> values) override { return inner_.AllReduceSum(values); }
  Status AllReduceMax(std::span<std::int64_t> values) override { return inner_.AllReduceMax(values); }
  Status Barrier() override { return inner_.Barrier(); }

 private:
  Bootstrap& inner_;
};

constexpr std::chrono::seconds kTimeout{30};

class StopAgreementTest : public ::testing::Test {
 protected:
  void SetUp() override { ClearStopRequest(); }
  void TearDown() override { ClearStopRequest(); }
};

TEST_F(StopAgreementTest, OnTheBoardTheStopClockIsTheFurthestCommittedClock) {
  auto group = ValueOrThrow(transport::InProcessGroup::Create(3));
  auto b0 = ValueOrThrow(group->MakeBootstrap(transport::Rank{0}));
  auto b1 = ValueOrThrow(group->MakeBootstrap(transport::Rank{1}));
  StopAgreement rank0(*b0, [] {}, transport::RealTime::Instance(), StopAgreement::Kind::kOnRequest, 2, kTimeout);
  StopAgreement rank1(*b1, [] {}, transport::RealTime::Instance(), StopAgreement::Kind::kOnRequest, 2, kTimeout);
  rank0.Begin(0, 0);
  rank1.Begin(1, 0);
  // Compute rank 1 runs ahead: it trains clocks 0..9.
  for (int t = 0; t < 10; ++t) ASSERT_FALSE(ValueOrThrow(rank1.StopsBefore(1, t)));
  for (int t = 0; t < 5; ++t) ASSERT_FALSE(ValueOrThrow(rank0.StopsBefore(0, t)));
  EXPECT_FALSE(rank0.stop().has_value());
  RequestStop(SIGTERM);
  // Rank 0 sees it at clock 5, but rank 1 already trains clock 9: C = 10.
  EXPECT_FALSE(ValueOrThrow(rank0.StopsBefore(0, 5)));
  ASSERT_TRUE(rank0.stop().has_value());
  EXPECT_EQ(rank0.stop()->clock, 10);
  EXPECT_EQ(rank0.stop()->signal, SIGTERM);
  for (int t = 6; t < 10; ++t) EXPECT_FALSE(ValueOrThrow(rank0.StopsBefore(0, t))) << t;
  EXPECT_TRUE(ValueOrThrow(rank0.StopsBefore(0, 10)));
  EXPECT_TRUE(ValueOrThrow(rank1.StopsBefore(1, 10)));
  ASSERT_TRUE(rank1.stop().has_value());
  EXPECT_EQ(rank1.stop()->clock, 10);
}

TEST_F(StopAgreementTest, WithoutARequestNothingStops) {
  auto group = ValueOrThrow(transport::InProcessGroup::Create(1));
  auto b0 = ValueOrThrow(group->MakeBootstrap(transport::Rank{0}));
  StopAgreement rank0(*b0, [] {}, transport::RealTime::Instance(), StopAgreement::Kind::kOnRequest, 1, kTimeout);
  rank0.Begin(0, 0);
  for (int t = 0; t < 100; ++t) ASSERT_FALSE(ValueOrThrow(rank0.StopsBefore(0, t)));
  EXPECT_FALSE(rank0.stop().has_value());
}

TEST_F(StopAgreementTest, OffNeverStops) {
  auto group = ValueOrThrow(transport::InProcessGroup::Create(1));
  auto b0 = ValueOrThrow(group->MakeBootstrap(transport::Rank{0}));
  StopAgreement rank0(*b0, [] {}, transport::RealTime::Instance(), StopAgreement::Kind::kOff, 1, kTimeout);
  RequestStop(SIGINT);
  for (int t = 0; t < 10; ++t) ASSERT_FALSE(ValueOrThrow(rank0.StopsBefore(0, t)));
  EXPECT_FALSE(rank0.stop().has_value());
}

// Processes: 3 compute ranks under a staleness bound of 1 (a rank waits,
// polling the agreement as WaitUntil does, while it is more than one clock
// ahead of the slowest) and 1 memory rank polling until all finished. Compute
// rank `requester` asks for the stop at clock `at`.
struct ProcessRun {
  std::vector<std::int64_t> stopped_at;  // per compute rank: the clock it stopped before
  std::vector<std::optional<StopDecision>> decisions;  // per rank
};

ProcessRun RunAsProcesses(int requester, std::int64_t at, std::int64_t total) {
  constexpr int kCompute = 3;
  ProcessRun run;
  run.stopped_at.assign(kCompute, -1);
  run.decisions.resize(kCompute + 1);
  std::vector<std::atomic<std::int64_t>> done(kCompute);  // clocks trained, as a memory rank would publish
  for (auto& d : done) d = 0;
  std::atomic<int> finished{0};
  std::mutex mutex;
  transport::RunRanks(kCompute + 1, [&](Bootstrap& threads) {
    ProcessLikeBootstrap bootstrap(threads);
    const int me = bootstrap.rank().value;
    StopAgreement stop(bootstrap, [] {}, transport::RealTime::Instance(), StopAgreement::Kind::kOnRequest, kCompute,
                       kTimeout);
    stop.Open();
    if (me == kCompute) {  // the memory rank
      while (finished.load() < kCompute) {
        ThrowIfError(stop.Poll());
        std::this_thread::yield();
      }
      ThrowIfError(stop.JoinAtEnd(0));
    } else {
      stop.Begin(me, 0);
      std::int64_t end = total;
      for (std::int64_t t = 0; t < total; ++t) {
        if (me == requester && t == at) RequestStop(SIGUSR1);
        if (ValueOrThrow(stop.StopsBefore(me, t))) {
          end = t;
          break;
        }
        // The staleness gate: wait (polling the agreement) while the slowest is > 1 clock behind.
        while (true) {
          std::int64_t slowest = total;
          for (int c = 0; c < kCompute; ++c) slowest = std::min(slowest, done[c].load());
          if (t - slowest <= 1) break;
          ThrowIfError(stop.Poll());
          std::this_thread::yield();
        }
        if (me == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // a slow rank
        done[me] = t + 1;
      }
      done[me] = total;  // finished: holds nobody back
      ++finished;
      ThrowIfError(stop.JoinAtEnd(end));
      std::lock_guard lock(mutex);
      run.stopped_at[me] = end;
    }
    std::lock_guard lock(mutex);
    run.decisions[me] = stop.stop();
  });
  return run;
}

TEST_F(StopAgreementTest, AsProcessesEveryComputeRankStopsAtTheSameClock) {
  for (int requester : {0, 2}) {
    SCOPED_TRACE(requester);
    ClearStopRequest();
    const ProcessRun run = RunAsProcesses(requester, 20, 200);
    ASSERT_TRUE(run.decisions[0].has_value());
    const std::int64_t c = run.decisions[0]->clock;
    EXPECT_GE(c, 20);
    EXPECT_LT(c, 200);
    EXPECT_EQ(run.decisions[0]->signal, SIGUSR1);
    for (std::size_t r = 0; r < run.decisions.size(); ++r) {
      ASSERT_TRUE(run.decisions[r].has_value()) << r;
      EXPECT_EQ(run.decisions[r]->clock, c) << r;  // the memory rank knows it too
    }
    for (std::int64_t at : run.stopped_at) EXPECT_EQ(at, c);
  }
}

TEST_F(StopAgreementTest, AsProcessesWithoutARequestTheRunCompletes) {
  const ProcessRun run = RunAsProcesses(/*requester=*/-1, 0, 50);
  for (const auto& decision : run.decisions) EXPECT_FALSE(decision.has_value());
  for (std::int64_t at : run.stopped_at) EXPECT_EQ(at, 50);
}

}  // namespace
}  // namespace stalelearn::runtime

namespace stalelearn::runtime {
namespace {

// The first SIGTERM is only recorded (the run stops at a clock boundary); the
// second ends the process at once.
TEST(StopSignalsDeathTest, TheFirstSignalIsRecordedTheSecondEndsTheProcess) {
  EXPECT_EXIT(
      {
        InstallStopSignalHandlers();
        std::raise(SIGTERM);
        if (StopSignal() != SIGTERM) std::_Exit(3);
        std::raise(SIGTERM);
        std::_Exit(4);  // not reached
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

TEST(StopSignalsDeathTest, SigusrOneAndSigintAreStopsToo) {
  for (int signal : {SIGUSR1, SIGINT}) {
    EXPECT_EXIT(
        {
          InstallStopSignalHandlers();
          std::raise(signal);
          std::_Exit(StopSignal() == signal ? 0 : 3);
        },
        ::testing::ExitedWithCode(0), "")
        << StopSignalName(signal);
  }
}

}  // namespace
}  // namespace stalelearn::runtime
