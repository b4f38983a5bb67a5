// Dead-rank detection on a memory rank (framework/runtime/peer_liveness.h):
// a compute rank whose heartbeat word stands still for dead_after is dead, one
// whose word moves between checks never is (however long between checks),
// ranks not watched (finished, already dead) are never reported, and a rank
// that beats again is alive again. The word is written here as the heartbeat
// thread's put would leave it; the checks' timing needs only lower bounds
// (sleeps of at least so long), so a loaded machine cannot make it fail.
#include "framework/runtime/peer_liveness.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "framework/transport/transport.h"

namespace stalelearn::runtime {
namespace {

using namespace std::chrono_literals;

// A ring's registered memory, as the memory rank sees it.
class RingMemory final : public transport::MemoryRegion {
 public:
  explicit RingMemory(std::size_t bytes) : bytes_(bytes) {}
  std::byte* data() override { return bytes_.data(); }
  std::size_t size() const override { return bytes_.size(); }
  transport::Access access() const override { return transport::Access::kRemoteWrite; }
  const transport::PackedKey& key() const override { return key_; }

 private:
  std::vector<std::byte> bytes_;
  transport::PackedKey key_;
};

class DeadRankDetectorTest : public ::testing::Test {
 protected:
  static constexpr auto kDeadAfter = 50ms;
  DeadRankDetectorTest() {
    geometry_.slots = 2;
    geometry_.slot_bytes = 64;
    for (int c = 0; c < 3; ++c) rings_.push_back(std::make_unique<RingMemory>(geometry_.region_bytes()));
  }
  DeadRankDetector MakeDetector() {
    std::vector<transport::MemoryRegion*> raw;
    for (auto& r : rings_) raw.push_back(r.get());
    return DeadRankDetector(raw, geometry_, kDeadAfter);
  }
  void Beat(int c) {
    transport::StoreRelease64(rings_[static_cast<std::size_t>(c)]->data() + geometry_.heartbeat_word_offset(),
                              ++beats_[static_cast<std::size_t>(c)]);
  }
  static std::vector<int> Ranks(const std::vector<model::ComputeIndex>& dead) {
    std::vector<int> out;
    for (model::ComputeIndex c : dead) out.push_back(c.value);
    return out;
  }

  sync::RingGeometry geometry_;
  std::vector<std::unique_ptr<RingMemory>> rings_;
  std::vector<std::uint64_t> beats_ = std::vector<std::uint64_t>(3, 0);
};

TEST_F(DeadRankDetectorTest, AStillHeartbeatIsDeadAfterTheLimitAndAMovingOneNever) {
  DeadRankDetector detector = MakeDetector();
  const std::vector<bool> all{true, true, true};
  EXPECT_TRUE(detector.Check(all).empty());  // the first check starts every rank's clock
  for (int round = 0; round < 4; ++round) {
    Beat(0);
    Beat(2);
    std::this_thread::sleep_for(2 * kDeadAfter);  // longer than the limit between two checks
    const std::vector<int> dead = Ranks(detector.Check(all));
    EXPECT_EQ(dead, std::vector<int>{1}) << "round " << round;  // rank 1 never beat
  }
}

TEST_F(DeadRankDetectorTest, NotBeforeTheLimit) {
  DeadRankDetector detector = MakeDetector();
  const std::vector<bool> all{true, true, true};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(detector.Check(all).empty());
  const std::vector<model::ComputeIndex> dead = detector.Check(all);  // at once: within the limit, unless descheduled
  if (std::chrono::steady_clock::now() - start < kDeadAfter) {
    EXPECT_TRUE(dead.empty());
  }
}

TEST_F(DeadRankDetectorTest, UnwatchedRanksAreNeverReportedAndABeatRevivesARank) {
  DeadRankDetector detector = MakeDetector();
  EXPECT_TRUE(detector.Check({true, true, true}).empty());
  std::this_thread::sleep_for(2 * kDeadAfter);
  // Rank 0 finished and rank 2 was dropped: only rank 1 is watched.
  EXPECT_EQ(Ranks(detector.Check({false, true, false})), std::vector<int>{1});
  Beat(1);
  EXPECT_TRUE(detector.Check({false, true, false}).empty());  // its word moved: alive again
  std::this_thread::sleep_for(2 * kDeadAfter);
  EXPECT_EQ(Ranks(detector.Check({false, true, false})), std::vector<int>{1});
}

}  // namespace
}  // namespace stalelearn::runtime
