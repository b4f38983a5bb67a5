// The rank's time service (framework/transport/rank_time.h): real time on
// the local backend, virtual time over the timing backend, and what each does
// for the calls the runtime makes without asking which it has.
#include "framework/transport/rank_time.h"

#include <gtest/gtest.h>

#include "backends/local/register.h"
#include "backends/timing/register.h"
#include "backends/timing/timing_transport.h"
#include "framework/core/error.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::transport {
namespace {

using namespace std::chrono_literals;

BackendRegistry Registry() {
  BackendRegistry registry;
  ThrowIfError(backends::local::RegisterBackend(registry));
  ThrowIfError(backends::timing::RegisterBackend(registry));
  return registry;
}

const std::map<std::string, std::string> kIbUpmem = {
    {"link", "infiniband-hdr"}, {"memory", "upmem"}, {"compute", "gpu-a100"}};

TEST(RankTime, RealTimeChargesNothingStampsZeroAndSleepsAStragglersDelay) {
  const BackendRegistry registry = Registry();
  RunRanks(2, [&](Bootstrap& bootstrap) {
    std::unique_ptr<Transport> local = ValueOrThrow(registry.Create("local", {bootstrap, {}, registry}));
    std::unique_ptr<RankTime> time = MakeRankTime(*local, bootstrap);
    ASSERT_NE(dynamic_cast<RealTime*>(time.get()), nullptr);
    ThrowIfError(time->StartSchedule());
    ThrowIfError(time->ChargeCompute({.flops = 1e9, .bytes = 1e9}));
    ThrowIfError(time->AdvanceTo(VirtualTimeFromPs(5000)));
    EXPECT_EQ(time->Now(), VirtualTime{});
    EXPECT_EQ(time->PutVisibleAt(1 << 20, Rank{0}), VirtualTime{});
    EXPECT_FALSE(time->Summary().has_value());
    EXPECT_TRUE(time->survives_rank_loss());
    // No exchange: one rank alone may ask.
    if (bootstrap.rank().value == 0) {
      EXPECT_EQ(ValueOrThrow(time->LatestOverRanks("t")), VirtualTime{});
    }
    int sums = 0;
    ThrowIfError(time->AllReduce(64, [&] {
      ++sums;
      return Status::Ok();
    }));
    EXPECT_EQ(sums, 1);
    // A caller's idle hook stays.
    Backoff::Policy policy{.on_idle = [](std::int64_t) { return Result<bool>(false); }};
    time->ConfigureIdling(policy);
    EXPECT_TRUE(policy.on_idle);
    const auto start = std::chrono::steady_clock::now();
    ThrowIfError(time->ChargeCompute({}, 3, 5ms));  // twice the step's 5 ms more
    EXPECT_GE(std::chrono::steady_clock::now() - start, 10ms);
    time->LeaveSchedule();
  });
}

TEST(RankTime, VirtualTimeChargesScaledWorkAndEndsAnAllReduceAtTheSlowestClockPlusItsPrice) {
  const BackendRegistry registry = Registry();
  RunRanks(2, [&](Bootstrap& bootstrap) {
    std::unique_ptr<Transport> created = ValueOrThrow(registry.Create("timing", {bootstrap, kIbUpmem, registry}));
    auto& timing = static_cast<backends::timing::TimingTransport&>(*created);
    std::unique_ptr<RankTime> time = MakeRankTime(timing, bootstrap);
    EXPECT_FALSE(time->survives_rank_loss());
    // A straggler's slowdown scales the work; counts stay whole (truncated).
    ThrowIfError(time->ChargeCompute({.flops = 1e6, .bytes = 4e5, .random_accesses = 2001, .samples = 3}, 1.5, 1h));
    const VirtualDuration compute =
        timing.model().compute.Compute({.flops = 1.5e6, .bytes = 6e5, .random_accesses = 3001, .samples = 4});
    EXPECT_EQ(timing.breakdown().compute, compute);
    EXPECT_EQ(time->Now().time_since_epoch(), compute);
    // Rank 1 is later by a merge; both agree on its clock.
    if (bootstrap.rank().value == 1) ThrowIfError(time->ChargeMerge({.bytes = 8000, .ops = 2000}));
    const VirtualTime latest = time->Now();
    EXPECT_GE(ValueOrThrow(time->LatestOverRanks("latest")), latest);
    std::int64_t slowest = latest.time_since_epoch().count();
    ThrowIfError(bootstrap.AllReduceMax(std::span(&slowest, 1)));
    EXPECT_EQ(ValueOrThrow(time->LatestOverRanks("again")), VirtualTimeFromPs(slowest));
    ThrowIfError(time->AllReduce(4096, [] { return Status::Ok(); }));
    EXPECT_EQ(time->Now(), VirtualTimeFromPs(slowest) + timing.AllReduceCost(4096, 2));
    const std::optional<SimulatedSummary> summary = time->Summary();
    ASSERT_TRUE(summary.has_value());
    EXPECT_EQ(summary->now, time->Now());
    EXPECT_EQ(summary->presets.link, "infiniband-hdr");
    EXPECT_EQ(summary->breakdown.total(), time->Now().time_since_epoch());
    time->LeaveSchedule();
  });
}

}  // namespace
}  // namespace stalelearn::transport
