// Fewer thread switches without a different timeline: an idle rank with a
// watch sleeps through segments that left what it read unchanged and wakes,
// at the same virtual time as without it, at the one that changed it; a
// write to its own memory always wakes it. IdleWatch re-reads through the
// local backend and sees a change, a dropped region and an overflow. With a
// quantum, turns within a window go by rank, never more than the quantum
// out of virtual-time order, the same way on every run.
#include "backends/timing/idle_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "backends/local/register.h"
#include "backends/timing/virtual_time_scheduler.h"
#include "tests/unit/timing/scheduler_threads.h"
#include "framework/core/error.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::backends::timing {
namespace {

using transport::VirtualDuration;
using transport::VirtualTimeFromPs;

using test_util::kDeadline;
using test_util::RunThreads;

// Unchanged while `value` still holds what the idle rank saw.
class ValueWatch final : public VirtualTimeScheduler::Watch {
 public:
  ValueWatch(const std::atomic<int>& value, int seen) : value_(value), seen_(seen) {}
  bool Unchanged() override { return value_.load() == seen_; }

 private:
  const std::atomic<int>& value_;
  const int seen_;
};

// Rank 0 polls `value` (rank 1's memory) and idles, watched or not, until it
// is 1; rank 1 ends three segments (writing its own memory, or also rank
// 0's with `writes_reader`) and sets `value` in the fourth, which starts at
// 300. Returns rank 0's wakes; `seen_at` its clock when it saw the value.
int WakesOfAWatchedReader(bool watched, bool writes_reader, VirtualTime& seen_at) {
  VirtualTimeScheduler scheduler(2, kDeadline);
  std::atomic<int> value{0};
  int wakes = 0;
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    if (rank == 0) {
      const std::vector<char> read = {1, 1};
      while (true) {
        const int seen = value.load();
        if (seen == 1) break;
        ValueWatch watch(value, seen);
        auto woke = scheduler.IdleUntilProgress(rank, {}, read, watched ? &watch : nullptr);
        ASSERT_TRUE(woke.ok()) << woke.status().ToString();
        ++wakes;
        seen_at = *woke;
      }
    } else {
      const std::vector<char> wrote = writes_reader ? std::vector<char>{1, 1} : std::vector<char>{0, 1};
      for (int i = 1; i <= 3; ++i) ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(100 * i), {}, wrote).ok());
      value.store(1);  // in the segment that starts at 300
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(400), {}, wrote).ok());
    }
    scheduler.Leave(rank);
  });
  return wakes;
}

TEST(IdleWatch, AWatchedRankSleepsThroughSegmentsThatLeftItsReadsUnchanged) {
  VirtualTime unwatched_at{}, watched_at{};
  EXPECT_EQ(WakesOfAWatchedReader(false, false, unwatched_at), 4);
  EXPECT_EQ(WakesOfAWatchedReader(true, false, watched_at), 1);
  // It wakes when it would have seen the change anyway: the timeline is the same.
  EXPECT_EQ(watched_at, VirtualTimeFromPs(300));
  EXPECT_EQ(unwatched_at, watched_at);
}

TEST(IdleWatch, AWriteToTheIdleRanksOwnMemoryWakesItWhateverTheWatchSays) {
  VirtualTime seen_at{};
  // Its poll may read its own memory directly, which no watch sees.
  EXPECT_EQ(WakesOfAWatchedReader(true, true, seen_at), 4);
  EXPECT_EQ(seen_at, VirtualTimeFromPs(300));
}

// A poll's get reads memory as it was at its issue; waiting for it (a
// read-only yield) may hand the turn to the writer, which changes the word
// then. Rank 0 reads 0 at time 0 and yields until 50; rank 1 sets the word
// in its segment at 10, then works on until 1000 and 2000. Rank 0 idles at
// 50 with a watch that already changed: it goes on at 50, not at rank 1's
// next segment (1000), nor, were rank 1 done, only at the all-idle wake.
TEST(IdleWatch, AWatchThatChangedBeforeTheRankIdlesKeepsItRunning) {
  VirtualTimeScheduler scheduler(2, kDeadline);
  std::atomic<int> value{0};
  VirtualTime seen_at{};
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    if (rank == 0) {
      const int seen = value.load();
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(50), VirtualTimeScheduler::Effect::kReadOnly).ok());
      VirtualTime now = VirtualTimeFromPs(50);
      int last = seen;
      const std::vector<char> read = {1, 1};
      while (last != 1) {
        ValueWatch watch(value, last);
        auto woke = scheduler.IdleUntilProgress(rank, {}, read, &watch);
        ASSERT_TRUE(woke.ok()) << woke.status().ToString();
        now = *woke;
        last = value.load();
      }
      seen_at = now;
    } else {
      const std::vector<char> own = {0, 1};
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(10), {}, own).ok());
      value.store(1);  // in the segment that starts at 10
      for (const int t : {20, 1000, 2000}) ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(t), {}, own).ok());
    }
    scheduler.Leave(rank);
  });
  EXPECT_EQ(seen_at, VirtualTimeFromPs(50));
}

// Rank 1 reads a word of rank 0's region into a watch, then rank 0 acts
// (`between`), then rank 1 reports the watch's Unchanged().
bool UnchangedAfter(const std::function<void(std::byte* data, std::unique_ptr<transport::MemoryRegion>&)>& between,
                    std::size_t watched_bytes = 8) {
  transport::BackendRegistry registry;
  ThrowIfError(local::RegisterBackend(registry));
  std::atomic<int> answer{-1};
  transport::RunRanks(2, [&](transport::Bootstrap& bootstrap) {
    auto transport = ValueOrThrow(registry.Create("local", {bootstrap, {}, registry}));
    auto region = ValueOrThrow(transport->Register(1 << 17, transport::Access::kAll));
    const auto keys = ValueOrThrow(bootstrap.AllGather("key", region->key()));
    IdleWatch watch(*transport);
    if (bootstrap.rank().value == 1) {
      std::shared_ptr<const transport::RemoteRegion> remote = ValueOrThrow(transport->Import(transport::Rank{0}, keys[0]));
      std::vector<std::byte> seen(watched_bytes);
      ValueOrThrow(transport->Get(seen.data(), seen.size(), *remote, 64));
      watch.Record(remote, 64, seen.size(), seen.data());
    }
    ThrowIfError(bootstrap.Barrier());
    if (bootstrap.rank().value == 0) between(region->data(), region);
    ThrowIfError(bootstrap.Barrier());
    if (bootstrap.rank().value == 1) answer = watch.Unchanged() ? 1 : 0;
    ThrowIfError(bootstrap.Barrier());
  });
  return answer.load() == 1;
}

TEST(IdleWatch, SeesAChangeToTheBytesItRecordedAndOnlyThose) {
  EXPECT_TRUE(UnchangedAfter([](std::byte*, auto&) {}));
  // A write beside the watched word leaves it unchanged.
  EXPECT_TRUE(UnchangedAfter([](std::byte* data, auto&) { data[72] = std::byte{1}; }));
  EXPECT_FALSE(UnchangedAfter([](std::byte* data, auto&) { data[64 + 7] = std::byte{1}; }));
}

TEST(IdleWatch, AFreedRegionCountsAsChanged) {
  EXPECT_FALSE(UnchangedAfter([](std::byte*, std::unique_ptr<transport::MemoryRegion>& region) { region.reset(); }));
}

TEST(IdleWatch, APollThatReadMoreThanItCanKeepIsNotWatched) {
  // Over kMaxBytes the watch gives up, so the rank wakes as without one.
  EXPECT_FALSE(UnchangedAfter([](std::byte*, auto&) {}, IdleWatch::kMaxBytes + 8));
  transport::BackendRegistry registry;
  ThrowIfError(local::RegisterBackend(registry));
  transport::RunRanks(1, [&](transport::Bootstrap& bootstrap) {
    auto transport = ValueOrThrow(registry.Create("local", {bootstrap, {}, registry}));
    IdleWatch watch(*transport);
    EXPECT_FALSE(watch.usable());  // nothing recorded: nothing to go by
    EXPECT_FALSE(watch.Unchanged());
  });
}

// Rank 0 steps 10 ps at a time, rank 1 25 ps; both from 0 to 200. Returns the
// grants in order.
std::vector<VirtualTimeScheduler::Grant> GrantsWithQuantum(std::int64_t quantum_ps) {
  VirtualTimeScheduler scheduler(2, kDeadline, VirtualDuration(quantum_ps));
  scheduler.set_tracing(true);
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    const std::int64_t step = rank == 0 ? 10 : 25;
    for (std::int64_t t = step; t <= 200; t += step) ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(t)).ok());
    scheduler.Leave(rank);
  });
  return scheduler.grants();
}

int Switches(const std::vector<VirtualTimeScheduler::Grant>& grants) {
  int switches = 0;
  for (std::size_t i = 1; i < grants.size(); ++i) switches += grants[i].rank != grants[i - 1].rank;
  return switches;
}

// The largest amount by which a grant came earlier in virtual time than one before it.
std::int64_t LargestStepBack(const std::vector<VirtualTimeScheduler::Grant>& grants) {
  std::int64_t latest = 0, back = 0;
  for (const auto& g : grants) {
    const std::int64_t t = g.time.time_since_epoch().count();
    back = std::max(back, latest - t);
    latest = std::max(latest, t);
  }
  return back;
}

TEST(VirtualTimeSchedulerQuantum, WithinAWindowTurnsGoByRankAndNeverFurtherOutOfOrderThanTheQuantum) {
  const auto strict = GrantsWithQuantum(0);
  const auto quantum = GrantsWithQuantum(60);
  EXPECT_EQ(LargestStepBack(strict), 0);  // strict (time, rank) order
  EXPECT_GT(LargestStepBack(quantum), 0);
  EXPECT_LT(LargestStepBack(quantum), 60);
  EXPECT_LT(Switches(quantum), Switches(strict));
  // Every turn still comes, just in longer runs; and the same on every run.
  EXPECT_EQ(quantum.size(), strict.size());
  for (int run = 0; run < 3; ++run) EXPECT_EQ(GrantsWithQuantum(60), quantum) << "run " << run;
}

}  // namespace
}  // namespace stalelearn::backends::timing
