// VirtualTimeScheduler: ranks as threads with scripted work produce the same
// interleaving on every run, whatever the real-time jitter, in (time, rank)
// order; idle ranks wake at the right virtual time; deadlocks are reported.
#include "backends/timing/virtual_time_scheduler.h"
#include "tests/unit/timing/scheduler_threads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

namespace stalelearn::backends::timing {
namespace {

using namespace std::chrono_literals;
using transport::VirtualTimeFromPs;

using test_util::kDeadline;
using test_util::RunThreads;

// A real-time delay that differs between runs, to shake the OS interleaving.
void Jitter() {
  thread_local std::mt19937 random(std::random_device{}());
  std::this_thread::sleep_for(std::chrono::microseconds(random() % 200));
}

struct Step {
  int rank;
  int step;
  std::int64_t time_ps;
  friend bool operator==(const Step&, const Step&) = default;
};

// Each rank does `steps` steps of scripted virtual duration (some equal, to
// exercise ties) and logs each step when it runs.
std::vector<Step> RunScript(int ranks, int steps) {
  VirtualTimeScheduler scheduler(ranks, kDeadline);
  std::mutex log_mutex;
  std::vector<Step> log;
  RunThreads(ranks, [&](int rank) {
    Jitter();
    std::int64_t now = 0;
    EXPECT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(now)).ok());
    for (int step = 0; step < steps; ++step) {
      {
        std::lock_guard lock(log_mutex);
        log.push_back({rank, step, now});
      }
      Jitter();
      now += 1 + (rank * 7919 + step * 104'729) % 5 * 100;  // 1, 101, ..., 401 ps
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(now)).ok());
    }
    scheduler.Leave(rank);
  });
  return log;
}

TEST(VirtualTimeScheduler, SameInterleavingOnEveryRunInTimeRankOrder) {
  const std::vector<Step> first = RunScript(4, 40);
  ASSERT_EQ(first.size(), 160u);
  // The order is by (virtual time, rank): exactly the sorted script.
  std::vector<Step> sorted = first;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Step& a, const Step& b) {
    return std::tie(a.time_ps, a.rank) < std::tie(b.time_ps, b.rank);
  });
  EXPECT_EQ(first, sorted);
  for (int run = 0; run < 3; ++run) EXPECT_EQ(RunScript(4, 40), first) << "run " << run;
}

TEST(VirtualTimeScheduler, IdleRankWakesAtTheTimeOfTheSegmentThatChangedSomething) {
  VirtualTimeScheduler scheduler(2, kDeadline);
  std::atomic<bool> flag{false};
  VirtualTime seen_at{};
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    if (rank == 0) {  // consumer: polls the flag
      VirtualTime now = VirtualTimeFromPs(0);
      while (!flag.load()) {
        auto woke = scheduler.IdleUntilProgress(rank);
        ASSERT_TRUE(woke.ok()) << woke.status().ToString();
        EXPECT_GE(*woke, now);
        now = *woke;
      }
      seen_at = now;
    } else {  // producer: does nothing visible at 0, sets the flag at 100
      Jitter();
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(100)).ok());
      flag.store(true);
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(200)).ok());
    }
    scheduler.Leave(rank);
  });
  EXPECT_EQ(seen_at, VirtualTimeFromPs(100));
}

// Read-only segments (gets, waits) wake no idle rank; the segment that writes
// wakes it at that segment's start. With every yield waking it (kMayWrite),
// the consumer wakes once per producer segment.
int WakesOfAnIdleRankOverReadsThenAWrite(VirtualTimeScheduler::Effect reads, VirtualTime& seen_at) {
  VirtualTimeScheduler scheduler(2, kDeadline);
  std::atomic<bool> flag{false};
  int wakes = 0;
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    if (rank == 0) {
      while (!flag.load()) {
        auto woke = scheduler.IdleUntilProgress(rank);
        ASSERT_TRUE(woke.ok()) << woke.status().ToString();
        ++wakes;
        seen_at = *woke;
      }
    } else {
      for (int i = 1; i <= 3; ++i) ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(100 * i), reads).ok());
      flag.store(true);  // in the segment that starts at 300
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(400)).ok());
    }
    scheduler.Leave(rank);
  });
  return wakes;
}

TEST(VirtualTimeScheduler, ReadOnlySegmentsWakeNoIdleRank) {
  VirtualTime seen_at{};
  EXPECT_EQ(WakesOfAnIdleRankOverReadsThenAWrite(VirtualTimeScheduler::Effect::kReadOnly, seen_at), 1);
  EXPECT_EQ(seen_at, VirtualTimeFromPs(300));  // the writing segment's start, not earlier
  EXPECT_EQ(WakesOfAnIdleRankOverReadsThenAWrite(VirtualTimeScheduler::Effect::kMayWrite, seen_at), 4);
  EXPECT_EQ(seen_at, VirtualTimeFromPs(300));
}

// Rank 0 idles having read the memory of `read` (empty: every rank); rank 1
// ends three segments that write only its own memory, then one that also
// writes rank 2's memory and sets the flag. Returns rank 0's wakes.
int WakesOfAnIdleReaderOfRankTwo(std::vector<char> read, VirtualTime& seen_at) {
  VirtualTimeScheduler scheduler(3, kDeadline);
  std::atomic<bool> flag{false};
  int wakes = 0;
  RunThreads(3, [&](int rank) {
    // Rank 2 only joins and leaves, after the others (its leaving wakes all).
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(rank == 2 ? 1000 : 0)).ok());
    if (rank == 0) {
      while (!flag.load()) {
        auto woke = scheduler.IdleUntilProgress(rank, {}, read);
        ASSERT_TRUE(woke.ok()) << woke.status().ToString();
        ++wakes;
        seen_at = *woke;
      }
    } else if (rank == 1) {
      const std::vector<char> own = {0, 1, 0};
      const std::vector<char> own_and_two = {0, 1, 1};
      for (int i = 1; i <= 3; ++i) ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(100 * i), {}, own).ok());
      flag.store(true);  // in the segment that starts at 300
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(400), {}, own_and_two).ok());
    }
    scheduler.Leave(rank);
  });
  return wakes;
}

TEST(VirtualTimeScheduler, AnIdleRankWakesOnlyForSegmentsThatWroteMemoryItRead) {
  VirtualTime seen_at{};
  EXPECT_EQ(WakesOfAnIdleReaderOfRankTwo({1, 0, 1}, seen_at), 1);
  EXPECT_EQ(seen_at, VirtualTimeFromPs(300));  // the writing segment's start
  // A poll that read rank 1's memory, or says nothing of what it read, wakes
  // at every one of rank 1's segments.
  EXPECT_EQ(WakesOfAnIdleReaderOfRankTwo({1, 1, 0}, seen_at), 4);
  EXPECT_EQ(seen_at, VirtualTimeFromPs(300));
  EXPECT_EQ(WakesOfAnIdleReaderOfRankTwo({}, seen_at), 4);
}

TEST(VirtualTimeScheduler, EveryRankIdleIsADeadlockNotAHang) {
  VirtualTimeScheduler scheduler(2, kDeadline);
  std::vector<Status> results(2);
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    Result<VirtualTime> woke = scheduler.IdleUntilProgress(rank);
    while (woke.ok()) woke = scheduler.IdleUntilProgress(rank);
    results[rank] = woke.status();
    scheduler.Leave(rank);
  });
  for (const Status& s : results) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("deadlock"), std::string::npos) << s.message();
  }
}

TEST(VirtualTimeScheduler, WhenAllAreIdleEachIsWokenOnceBeforeADeadlockIsDeclared) {
  // Rank 0 gives up on a read that overlapped a write (a seqlock retry): what
  // it needs is already there, but nobody else will make progress.
  VirtualTimeScheduler scheduler(2, kDeadline);
  Status retried;
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(rank)).ok());
    if (rank == 0) {
      // The first wake-up comes from rank 1's first (active) segment.
      ASSERT_TRUE(scheduler.IdleUntilProgress(rank).ok());
      // Now both are idle and nobody made progress since: woken once anyway.
      Result<VirtualTime> woke = scheduler.IdleUntilProgress(rank);
      retried = woke.status();
      if (woke.ok()) {
        EXPECT_EQ(*woke, VirtualTimeFromPs(1));  // a wake-up without progress keeps the clock
      }
    } else {
      while (scheduler.IdleUntilProgress(rank).ok()) {
      }
    }
    scheduler.Leave(rank);
  });
  EXPECT_TRUE(retried.ok()) << retried.ToString();
}

TEST(VirtualTimeScheduler, AnIdleRankIsWokenOnceWhileAnotherWaitsOutsideForItsCollective) {
  // A checkpoint boundary: rank 1 has left for the collective that starts
  // the next segment; rank 0 gave up on a poll whose condition already holds
  // and went idle. Only rank 0 can end the wait (by reaching the collective),
  // so it must be woken once, as when every rank is idle (a hang before).
  VirtualTimeScheduler scheduler(2, kDeadline);
  std::barrier collective(2);
  Status retried;
  RunThreads(2, [&](int rank) {
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(rank)).ok());
    if (rank == 0) {
      ASSERT_TRUE(scheduler.IdleUntilProgress(rank).ok());  // woken by rank 1 leaving
      retried = scheduler.IdleUntilProgress(rank).status();  // nobody made progress since
      if (retried.ok()) EXPECT_TRUE(scheduler.ExitForCollective(rank).ok());
    } else {
      ASSERT_TRUE(scheduler.ExitForCollective(rank).ok());
    }
    collective.arrive_and_wait();
    if (retried.ok()) EXPECT_TRUE(scheduler.Rejoin(rank, VirtualTimeFromPs(10)).ok());
    scheduler.Leave(rank);
  });
  EXPECT_TRUE(retried.ok()) << retried.ToString();
}

TEST(VirtualTimeScheduler, OrderAfterACollectiveDoesNotDependOnWhoReturnsFirst) {
  for (int run = 0; run < 3; ++run) {
    constexpr int kRanks = 3;
    VirtualTimeScheduler scheduler(kRanks, kDeadline);
    scheduler.set_tracing(true);
    std::barrier collective(kRanks);
    std::mutex log_mutex;
    std::vector<int> after;  // ranks in the order they ran after the collective
    RunThreads(kRanks, [&](int rank) {
      ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
      ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(10 * (kRanks - rank))).ok());
      ASSERT_TRUE(scheduler.ExitForCollective(rank).ok());
      collective.arrive_and_wait();
      // Rank 0 returns last in real time but has the earliest clock.
      std::this_thread::sleep_for(std::chrono::milliseconds(rank == 0 ? 30 : rank));
      ASSERT_TRUE(scheduler.Rejoin(rank, VirtualTimeFromPs(100 + rank)).ok());
      {
        std::lock_guard lock(log_mutex);
        after.push_back(rank);
      }
      scheduler.Leave(rank);
    });
    EXPECT_EQ(after, (std::vector<int>{0, 1, 2})) << "run " << run;
    // Before the collective: joined at 0 in rank order, then by time 10, 20, 30.
    const auto grants = scheduler.grants();
    ASSERT_GE(grants.size(), 6u);
    EXPECT_EQ(grants[3].rank, 2);
    EXPECT_EQ(grants[3].time, VirtualTimeFromPs(10));
  }
}

TEST(VirtualTimeScheduler, MisuseIsAnErrorNotACrash) {
  VirtualTimeScheduler scheduler(2, std::chrono::milliseconds(200));
  EXPECT_EQ(scheduler.Yield(0, VirtualTimeFromPs(1)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(scheduler.Join(5, VirtualTimeFromPs(0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scheduler.Rejoin(1, VirtualTimeFromPs(0)).code(), StatusCode::kFailedPrecondition);
  // Rank 1 never joins: rank 0 times out instead of hanging.
  EXPECT_EQ(scheduler.Join(0, VirtualTimeFromPs(0)).code(), StatusCode::kTimeout);
}

TEST(VirtualTimeScheduler, ARankFarAheadWaitsLongerThanTheDeadlineWhileOthersProgress) {
  // The deadline bounds a wait during which no rank gets a turn, not a rank's
  // whole wait. Rank 1, far ahead in virtual time, waits for its first turn
  // while rank 0 takes turn after turn, until rank 1 has waited three
  // deadlines (measured, so no sleep decides it). Rank 0 yields back to back:
  // the gap between two turns is microseconds, far inside the deadline.
  constexpr auto kShortDeadline = std::chrono::milliseconds(200);
  using Clock = std::chrono::steady_clock;
  VirtualTimeScheduler scheduler(2, kShortDeadline);
  Status far_ahead;
  Clock::duration far_ahead_waited{};
  std::atomic<bool> far_ahead_ran{false};
  std::int64_t turns_while_waiting = 0;
  RunThreads(2, [&](int rank) {
    if (rank == 1) {
      const Clock::time_point start = Clock::now();
      far_ahead = scheduler.Join(rank, VirtualTimeFromPs(1'000'000'000'000));
      far_ahead_waited = Clock::now() - start;
      far_ahead_ran = true;
      scheduler.Leave(rank);
      return;
    }
    const Status joined = scheduler.Join(rank, VirtualTimeFromPs(0));
    EXPECT_TRUE(joined.ok()) << joined.ToString();
    // Join returned only after rank 1 joined, i.e. started waiting.
    const Clock::time_point start = Clock::now();
    while (joined.ok() && Clock::now() - start < 3 * kShortDeadline) {
      const Status yielded = scheduler.Yield(rank, VirtualTimeFromPs(++turns_while_waiting));
      if (!yielded.ok()) {
        ADD_FAILURE() << yielded.ToString();
        break;
      }
      EXPECT_FALSE(far_ahead_ran.load()) << "rank 1 ran before rank 0 caught up in virtual time";
    }
    scheduler.Leave(rank);
  });
  EXPECT_TRUE(far_ahead.ok()) << far_ahead.ToString();
  EXPECT_GE(far_ahead_waited, 3 * kShortDeadline);
  EXPECT_GT(turns_while_waiting, 0);
}

TEST(VirtualTimeScheduler, ARankThatLeavesEarlyDoesNotBlockTheOthers) {
  VirtualTimeScheduler scheduler(3, kDeadline);
  RunThreads(3, [&](int rank) {
    if (rank == 1) {
      scheduler.Leave(rank);  // e.g. its body failed before joining
      return;
    }
    ASSERT_TRUE(scheduler.Join(rank, VirtualTimeFromPs(0)).ok());
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(scheduler.Yield(rank, VirtualTimeFromPs(i)).ok());
    scheduler.Leave(rank);
  });
}

}  // namespace
}  // namespace stalelearn::backends::timing
