// Snapshots: a reader never installs a partially written snapshot (I3), and
// sees the included sequences and merged clocks it was published with.
#include <gtest/gtest.h>

#include "framework/sync/clock_table.h"
#include "tests/unit/sync/ring_fixture.h"
#include "tests/unit/sync/snapshot_checks.h"

namespace stalelearn::sync {
namespace {

using testing::RingFixture;

using testing::AllEqual;
using testing::FillMaster;

TEST(Snapshot, ReaderGetsTheLatestWithItsMeta) {
  RingFixture f;
  SnapshotPublisher publisher(f.published_region(), f.published_geometry(), f.layout());
  SnapshotReader reader(f.transport(), f.remote_published(), f.published_geometry(), WaitOptions{});
  std::vector<std::byte> shard(f.published_geometry().shard_bytes);
  EXPECT_FALSE(reader.ReadNewer(0, shard)->has_value()) << "nothing published yet";

  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 4, /*clock=*/0)).ok());
  f.poller().PollOnce();
  publisher.Publish(f.merger().master(), f.poller());
  Result<std::optional<SnapshotMeta>> meta = reader.ReadNewer(0, shard);
  ASSERT_TRUE(meta.ok() && meta->has_value());
  EXPECT_EQ((*meta)->generation, 1u);
  EXPECT_EQ((*meta)->included.at(0), 1u);
  EXPECT_EQ((*meta)->merged_clock.at(0), 1u);
  std::int32_t row1;
  std::memcpy(&row1, shard.data() + f.layout().RowOffset(model::TableId{0}, model::RowId{1}), 4);
  EXPECT_EQ(row1, 4);
  EXPECT_FALSE(reader.ReadNewer(1, shard)->has_value()) << "generation 1 is not newer than 1";

  ClockTable clocks(f.transport(), {&f.remote_published()}, f.published_geometry(), WaitOptions{});
  ASSERT_TRUE(clocks.Refresh().ok());
  EXPECT_EQ(clocks.latest_generation(model::MemoryIndex{0}), 1u);
  EXPECT_EQ(clocks.head(model::MemoryIndex{0}, model::ComputeIndex{0}), 1u);
  EXPECT_EQ(clocks.included(model::MemoryIndex{0}, model::ComputeIndex{0}), 1u);
}

TEST(Snapshot, HalfWrittenGenerationIsNeverReturned) {
  RingFixture f;
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());  // generation 1, all ones

  // A publisher that died while writing generation 2: odd version, half the data.
  std::byte* base = f.published_region().data();
  const int b2 = g.BufferOf(2);
  transport::StoreRelease64(base + g.version_offset(b2), 3);
  std::memset(base + g.buffer_data_offset(b2), 0x22, g.shard_bytes / 2);

  WaitOptions wait;
  wait.timeout = std::chrono::milliseconds(100);
  SnapshotReader reader(f.transport(), f.remote_published(), g, wait);
  std::vector<std::byte> shard(g.shard_bytes);
  Result<std::optional<SnapshotMeta>> meta = reader.ReadNewer(0, shard);
  ASSERT_TRUE(meta.ok() && meta->has_value());
  EXPECT_EQ((*meta)->generation, 1u);
  std::int32_t value;
  EXPECT_TRUE(AllEqual(shard, &value));
  EXPECT_EQ(value, 1);

  // Even if the latest word pointed at it, the odd version keeps it out.
  transport::StoreRelease64(base + g.latest_generation_offset(), 2);
  EXPECT_EQ(reader.ReadNewer(0, shard).status().code(), StatusCode::kTimeout);
}

TEST(Snapshot, ConcurrentReaderSeesOnlyWholeGenerations) { testing::CheckConcurrentReaderSeesOnlyWholeGenerations(); }

}  // namespace
}  // namespace stalelearn::sync
