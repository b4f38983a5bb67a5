#include "tests/unit/runtime/liveness_checks.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/unit/runtime/ring_memory.h"

namespace stalelearn::runtime {

void CheckAStillHeartbeatIsDeadAndAMovingOneIsNot() {
  using namespace std::chrono_literals;
  constexpr auto kDeadAfter = 50ms;
  TestRings rings(3);
  DeadRankDetector detector = rings.MakeDetector(kDeadAfter);
  const std::vector<bool> all{true, true, true};
  EXPECT_TRUE(detector.Check(all).empty());  // the first check starts every rank's clock
  for (int round = 0; round < 4; ++round) {
    rings.Beat(0);
    rings.Beat(2);
    std::this_thread::sleep_for(2 * kDeadAfter);  // longer than the limit between two checks
    const std::vector<int> dead = TestRings::Ranks(detector.Check(all));
    EXPECT_EQ(dead, std::vector<int>{1}) << kStillHeartbeatMessage << " (round " << round << "; rank 1 never beat)";
  }
}

}  // namespace stalelearn::runtime
