// Dead-rank detection on a memory rank (framework/runtime/peer_liveness.h):
// a compute rank whose heartbeat word stands still for dead_after is dead, one
// whose word moves between checks never is (however long between checks),
// ranks not watched (finished, already dead) are never reported, and a rank
// that beats again is alive again. The checks' timing needs only lower bounds
// (sleeps of at least so long), so a loaded machine cannot make them fail.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/unit/runtime/liveness_checks.h"
#include "tests/unit/runtime/ring_memory.h"

namespace stalelearn::runtime {
namespace {

using namespace std::chrono_literals;
constexpr auto kDeadAfter = 50ms;

TEST(DeadRankDetector, AStillHeartbeatIsDeadAfterTheLimitAndAMovingOneNever) {
  CheckAStillHeartbeatIsDeadAndAMovingOneIsNot();
}

TEST(DeadRankDetector, NotBeforeTheLimit) {
  TestRings rings(3);
  DeadRankDetector detector = rings.MakeDetector(kDeadAfter);
  const std::vector<bool> all{true, true, true};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(detector.Check(all).empty());
  const std::vector<model::ComputeIndex> dead = detector.Check(all);  // at once: within the limit, unless descheduled
  if (std::chrono::steady_clock::now() - start < kDeadAfter) {
    EXPECT_TRUE(dead.empty());
  }
}

TEST(DeadRankDetector, UnwatchedRanksAreNeverReportedAndABeatRevivesARank) {
  TestRings rings(3);
  DeadRankDetector detector = rings.MakeDetector(kDeadAfter);
  EXPECT_TRUE(detector.Check({true, true, true}).empty());
  std::this_thread::sleep_for(2 * kDeadAfter);
  // Rank 0 finished and rank 2 was dropped: only rank 1 is watched.
  EXPECT_EQ(TestRings::Ranks(detector.Check({false, true, false})), std::vector<int>{1});
  rings.Beat(1);
  EXPECT_TRUE(detector.Check({false, true, false}).empty());  // its word moved: alive again
  std::this_thread::sleep_for(2 * kDeadAfter);
  EXPECT_EQ(TestRings::Ranks(detector.Check({false, true, false})), std::vector<int>{1});
}

}  // namespace
}  // namespace stalelearn::runtime
