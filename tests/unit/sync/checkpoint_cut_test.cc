// A checkpoint's consistent cut on a memory rank (framework/runtime/
// checkpoint_cut.h), batch by batch on one ring: the state written for
// checkpoint B holds exactly the batches of clocks < B, also when batches
// past B were merged first (the fork), also inside an average window that
// mixes both, and the live shard merges as if there were no cut.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "framework/runtime/checkpoint_cut.h"
#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::runtime {
namespace {

using sync::testing::RingFixture;

const std::vector<model::TableSpec> kFloatTable = {{"w", model::ElementType::kFloat32, 16, 1}};

sync::MergePolicySpec Spec(std::string name) {
  sync::MergePolicySpec spec;
  spec.name = std::move(name);
  return spec;
}

// Row 1 of a written shard state's only table.
float RowOne(const proto::MemoryShardState& state) {
  float value;
  std::memcpy(&value, state.tables(0).data() + sizeof(float), sizeof(float));
  return value;
}

class CheckpointCutTest : public ::testing::Test {
 protected:
  explicit CheckpointCutTest(std::string policy = "sum") : f_(/*slots=*/8, 1, kFloatTable, {Spec(policy)}) {
    cut_ = std::make_unique<CheckpointCut>(f_.merger(), f_.poller(), CheckpointClocks{2, 0, 10},
                                           [this](std::int64_t clock, const proto::MemoryShardState& state) {
                                             written_[clock] = state;
                                             return Status::Ok();
                                           });
    f_.poller().set_merge_tap(cut_.get());
  }
  // Pushes a batch of `clock` adding `delta` to row 1.
  void Push(std::uint64_t clock, float delta) {
    sync::BatchEncoder encoder(f_.layout().tables());
    encoder.Add(model::TableId{0}, model::RowId{1}, std::as_bytes(std::span(&delta, 1)));
    ASSERT_TRUE(f_.writer().Push(encoder.Seal(f_.writer().next_sequence(), clock, sync::kEndOfClock)).ok());
  }
  void Poll() {
    f_.poller().PollOnce();
    ASSERT_TRUE(cut_->WriteCompleted().ok());
  }
  float Live() { return f_.merger().master()[0].FloatRow(1)[0]; }

  RingFixture f_;
  std::unique_ptr<CheckpointCut> cut_;
  std::map<std::int64_t, proto::MemoryShardState> written_;
};

TEST_F(CheckpointCutTest, WithoutABatchPastTheClockTheShardItselfIsTheCut) {
  Push(0, 1.0f);
  Push(1, 2.0f);
  Poll();
  ASSERT_EQ(written_.count(2), 1u);
  EXPECT_EQ(RowOne(written_[2]), 3.0f);
  EXPECT_EQ(written_[2].merged_clock(0), 2u);
  EXPECT_EQ(cut_->forks(), 0);
  EXPECT_EQ(written_.count(4), 0u) << "clock 3 is not merged yet";
}

// A slow rank's batch of clock 1 after a fast one's of clock 3 (one ring
// stands for both: the merged clock is the highest seen): the cut at 2 has
// 0 and 1, not 3; the live shard has all three.
TEST_F(CheckpointCutTest, BatchesPastTheClockMergedFirstAreLeftOutOfTheCut) {
  Push(0, 1.0f);
  Push(3, 100.0f);
  Push(1, 2.0f);
  Poll();
  ASSERT_EQ(written_.count(2), 1u);
  EXPECT_EQ(RowOne(written_[2]), 3.0f) << "the cut at 2 must hold clocks 0 and 1 only";
  EXPECT_EQ(written_[2].consumed_batches(0), 2u);
  EXPECT_EQ(Live(), 103.0f) << "the live shard merges everything, as without a cut";
  EXPECT_EQ(cut_->forks(), 1);
  ASSERT_EQ(written_.count(4), 1u);
  EXPECT_EQ(RowOne(written_[4]), 103.0f);
}

// A batch of clock 5 passes two checkpoint clocks at once: each cut gets its
// own fork, and a later batch of clock 3 belongs to the cut at 4 only.
TEST_F(CheckpointCutTest, SeveralCutsPendingAtOnceEachHaveTheirOwnFork) {
  Push(0, 1.0f);
  Poll();
  Push(5, 1000.0f);
  Push(3, 10.0f);
  Push(1, 2.0f);
  Poll();
  EXPECT_EQ(cut_->forks(), 2);
  ASSERT_EQ(written_.count(2), 1u);
  ASSERT_EQ(written_.count(4), 1u);
  ASSERT_EQ(written_.count(6), 1u);
  EXPECT_EQ(RowOne(written_[2]), 3.0f);
  EXPECT_EQ(RowOne(written_[4]), 13.0f);
  EXPECT_EQ(RowOne(written_[6]), 1013.0f);
  EXPECT_EQ(Live(), 1013.0f);
}

class AverageCheckpointCutTest : public CheckpointCutTest {
 protected:
  AverageCheckpointCutTest() : CheckpointCutTest("average") {}
};

// average holds a window's deltas until it ends: the fork, taken inside the
// window, ends it with the held deltas of clocks < 2 only.
TEST_F(AverageCheckpointCutTest, AForkInsideAWindowAveragesTheBatchesBeforeTheClockOnly) {
  Push(0, 2.0f);
  Push(2, 100.0f);
  Push(1, 4.0f);
  Poll();  // one window: the live shard averages all three
  ASSERT_EQ(written_.count(2), 1u);
  EXPECT_EQ(RowOne(written_[2]), 3.0f) << "(2 + 4) / 2";
  EXPECT_FLOAT_EQ(Live(), 106.0f / 3.0f);
}

}  // namespace
}  // namespace stalelearn::runtime
