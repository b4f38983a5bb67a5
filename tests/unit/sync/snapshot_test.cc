// Snapshots: a reader never installs a partially written snapshot (I3), and
// sees the included sequences and merged clocks it was published with.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "framework/metrics/counting_transport.h"
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

  // A publisher that died while writing generation 2's meta (step 3): odd
  // version, the latest word still at 1. Its live rows come only after
  // step 4 (snapshot.h): SnapshotRows.ALiveWordAtTheGenerationReadTakesNoRecords
  // has rows caught in writing.
  std::byte* base = f.published_region().data();
  const int k2 = g.MetaSlotOf(2);
  transport::StoreRelease64(base + g.version_offset(k2), 3);

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

// A refresh reads only the rows merged since the generation it holds: a
// batch names rows 3, 100 and 2000 of a 4096-row shard; reading the changes
// must deliver exactly those three rows and get (through a counting
// transport) only their records plus a few control words, never the shard.
TEST(Snapshot, ReadingChangesGetsOnlyTheRowsThatChanged) {
  RingFixture f(4, 1, {{"counts", model::ElementType::kInt32, 4096, 2}});
  const PublishedGeometry g = f.published_geometry();
  ChangedRows changed(f.layout(), model::MemoryIndex{0});
  f.poller().set_changed_rows(&changed);
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  publisher.Publish(f.merger().master(), f.poller());  // generation 1: every row
  metrics::CountingTransport counting(f.transport());
  SnapshotReader reader(counting, f.remote_published(), g, WaitOptions{});
  std::vector<std::size_t> offsets;
  const auto sink = [&](std::size_t offset, std::span<const std::byte> bytes) {
    for (std::size_t at = 0; at < bytes.size(); at += 8) offsets.push_back(offset + at);
  };
  Result<const SnapshotMeta*> first = reader.ReadChanges(SnapshotMeta{}, sink);
  ASSERT_TRUE(first.ok() && *first != nullptr);
  EXPECT_EQ(offsets.size(), 4096u) << "the first read installs every row";
  const SnapshotMeta held = **first;

  const std::vector<std::int64_t> rows = {3, 100, 2000};
  ASSERT_TRUE(f.writer().Push(f.Batch(rows, 5, /*clock=*/0)).ok());
  ASSERT_EQ(f.poller().PollOnce(), 1);
  publisher.Publish(f.merger().master(), f.poller(), changed);
  changed.Clear();

  offsets.clear();
  const std::int64_t got_before = counting.counters().bytes_get;
  Result<const SnapshotMeta*> next = reader.ReadChanges(held, sink);
  ASSERT_TRUE(next.ok() && *next != nullptr);
  const std::int64_t got = counting.counters().bytes_get - got_before;
  std::set<std::size_t> expected;
  for (std::int64_t r : rows) expected.insert(f.layout().RowOffset(model::TableId{0}, model::RowId{r}));
  EXPECT_EQ(std::set<std::size_t>(offsets.begin(), offsets.end()), expected)
      << "a refresh read a row that did not change (or missed one that did)";
  EXPECT_EQ(offsets.size(), rows.size()) << "a changed row was read more than once";
  const std::int64_t records = static_cast<std::int64_t>(rows.size() * (8 + 8));
  const std::int64_t control = static_cast<std::int64_t>(8 + g.meta_bytes() + 8 + 8 + 8);
  EXPECT_LE(got, records + control) << "a refresh got more than the changed rows' records: " << got << " bytes";
  EXPECT_EQ((*next)->included.at(0), 1u);
  EXPECT_EQ(reader.whole_reads(), 0u);

  // Nothing newer: nothing but the latest-generation word is read.
  offsets.clear();
  const SnapshotMeta now = **next;
  Result<const SnapshotMeta*> none = reader.ReadChanges(now, sink);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_TRUE(offsets.empty());
}

// A reader further behind than the change log reaches falls back to one
// whole read, which still delivers the latest generation exactly.
TEST(Snapshot, ReaderBehindTheLogReadsTheWholeShardOnce) {
  RingFixture f;
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());
  SnapshotReader reader(f.transport(), f.remote_published(), g, WaitOptions{});
  std::vector<std::byte> shard(g.shard_bytes);
  const auto copy = [&](std::size_t offset, std::span<const std::byte> bytes) {
    std::memcpy(shard.data() + offset, bytes.data(), bytes.size());
  };
  Result<const SnapshotMeta*> first = reader.ReadChanges(SnapshotMeta{}, copy);
  ASSERT_TRUE(first.ok() && *first != nullptr);
  const SnapshotMeta held = **first;
  // Each generation rewrites every row: enough of them to overwrite the log.
  const int generations = static_cast<int>(g.log_capacity() / g.shard_bytes) + 2;
  for (int v = 2; v < 2 + generations; ++v) {
    FillMaster(f.merger(), v);
    publisher.Publish(f.merger().master(), f.poller());
  }
  Result<const SnapshotMeta*> next = reader.ReadChanges(held, copy);
  ASSERT_TRUE(next.ok() && *next != nullptr);
  EXPECT_EQ(reader.whole_reads(), 1u);
  std::int32_t value;
  EXPECT_TRUE(AllEqual(shard, &value));
  EXPECT_EQ(value, 1 + generations);
  EXPECT_EQ((*next)->generation, static_cast<std::uint64_t>(1 + generations));
}

// Changes larger than the reader's buffer (SnapshotReader::kLogChunkBytes)
// stream through it chunk by chunk, with records cut at chunk ends carried
// over: every row arrives whole, once, at its place, and the bytes got are
// the log's bytes plus control words (no record read twice).
TEST(Snapshot, ChangesLargerThanTheReadersBufferArriveWholeAndInPlace) {
  constexpr std::int64_t kRows = 120'000;  // 12 bytes a row: 1.4 MB, more than one chunk
  RingFixture f(4, 1, {{"wide", model::ElementType::kInt32, kRows, 3}});
  const PublishedGeometry g = f.published_geometry();
  ASSERT_GT(g.shard_bytes, SnapshotReader::kLogChunkBytes);
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  const auto fill = [&](std::int32_t v) {
    model::RowBlock& block = f.merger().mutable_master()[0];
    for (std::int64_t r = 0; r < kRows; ++r) {
      for (std::int32_t k = 0; k < 3; ++k) block.IntRow(r)[k] = static_cast<std::int32_t>(r * 3 + k) * 7 + v;
    }
  };
  fill(1);
  publisher.Publish(f.merger().master(), f.poller());
  metrics::CountingTransport counting(f.transport());
  SnapshotReader reader(counting, f.remote_published(), g, WaitOptions{});
  std::vector<std::byte> shard(g.shard_bytes);
  std::size_t delivered = 0;
  const auto copy = [&](std::size_t offset, std::span<const std::byte> bytes) {
    ASSERT_LE(offset + bytes.size(), shard.size());
    std::memcpy(shard.data() + offset, bytes.data(), bytes.size());
    delivered += bytes.size();
  };
  const auto expect_rows = [&](std::int32_t v) {
    std::vector<std::int32_t> ints(shard.size() / 4);
    std::memcpy(ints.data(), shard.data(), shard.size());
    for (std::size_t i = 0; i < ints.size(); ++i) {
      if (ints[i] != static_cast<std::int32_t>(i) * 7 + v) {
        ADD_FAILURE() << "element " << i << " is " << ints[i] << ", expected " << static_cast<std::int32_t>(i) * 7 + v;
        return;
      }
    }
  };
  Result<const SnapshotMeta*> first = reader.ReadChanges(SnapshotMeta{}, copy);
  ASSERT_TRUE(first.ok() && *first != nullptr);
  EXPECT_EQ(delivered, g.shard_bytes) << "every row once";
  expect_rows(1);
  const SnapshotMeta held = **first;

  fill(2);
  publisher.Publish(f.merger().master(), f.poller());
  delivered = 0;
  const std::int64_t got_before = counting.counters().bytes_get;
  Result<const SnapshotMeta*> next = reader.ReadChanges(held, copy);
  ASSERT_TRUE(next.ok() && *next != nullptr);
  EXPECT_EQ(delivered, g.shard_bytes);
  expect_rows(2);
  const std::uint64_t log_bytes = (*next)->log_end - held.log_end;
  const std::int64_t chunks = static_cast<std::int64_t>((log_bytes + SnapshotReader::kLogChunkBytes - 1) /
                                                        SnapshotReader::kLogChunkBytes);
  EXPECT_LE(counting.counters().bytes_get - got_before,
            static_cast<std::int64_t>(log_bytes + 64 + g.meta_bytes()) + chunks * 16)
      << "log bytes read more than once";
  EXPECT_EQ(reader.whole_reads(), 0u);
}

TEST(Snapshot, ConcurrentReaderSeesOnlyWholeGenerations) { testing::CheckConcurrentReaderSeesOnlyWholeGenerations(); }

// Metas of several readers read together (a refresh that needs no records):
// each is a whole meta of one generation, never parts of two, also while
// generations are published as fast as one thread can.
TEST(Snapshot, MetasReadTogetherAreWholeMetas) {
  RingFixture f;
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  SnapshotReader first(f.transport(), f.remote_published(), g, WaitOptions{});
  SnapshotReader second(f.transport(), f.remote_published(), g, WaitOptions{});
  SnapshotReader* readers[] = {&first, &second};
  const SnapshotMeta* metas[2] = {nullptr, nullptr};
  std::uint64_t since[2] = {0, 0};
  ASSERT_TRUE(SnapshotReader::ReadNewerMetas(readers, since, metas).ok());
  EXPECT_EQ(metas[0], nullptr) << "nothing published yet";

  ASSERT_TRUE(f.writer().Push(f.Batch({1}, 4, /*clock=*/0)).ok());
  f.poller().PollOnce();
  FillMaster(f.merger(), 0);
  publisher.Publish(f.merger().master(), f.poller());  // every row: log end L
  since[1] = 1;
  ASSERT_TRUE(SnapshotReader::ReadNewerMetas(readers, since, metas).ok());
  ASSERT_NE(metas[0], nullptr);
  EXPECT_EQ(metas[0]->generation, 1u);
  EXPECT_EQ(metas[0]->included.at(0), 1u);
  EXPECT_EQ(metas[0]->merged_clock.at(0), 1u);
  EXPECT_EQ(metas[1], nullptr) << "generation 1 is not newer than 1";
  const std::uint64_t per_generation = metas[0]->log_end;
  ASSERT_GT(per_generation, 0u);

  // Every publish rewrites every row: generation n ends the log at n L.
  std::atomic<std::int64_t> published{0};
  int racing = 0, torn = 0;
  std::uint64_t last[2] = {1, 1};
  {
    std::jthread writer([&](std::stop_token stop) {
      for (std::int32_t v = 1; !stop.stop_requested(); ++v) {
        FillMaster(f.merger(), v);
        publisher.Publish(f.merger().master(), f.poller());
        published.fetch_add(1, std::memory_order_relaxed);
      }
    });
    for (int i = 0; (i < 2000 || racing < 200) && i < 20000000; ++i) {
      since[0] = since[1] = 0;
      ASSERT_TRUE(SnapshotReader::ReadNewerMetas(readers, since, metas).ok());
      for (int r = 0; r < 2; ++r) {
        ASSERT_NE(metas[r], nullptr);
        torn += metas[r]->log_end != metas[r]->generation * per_generation || metas[r]->merged_clock.at(0) != 1u;
        ASSERT_GE(metas[r]->generation, last[r]) << "reader " << r << ": generations went backwards";
        racing += metas[r]->generation > last[r];
        last[r] = metas[r]->generation;
      }
    }
  }
  EXPECT_GE(racing, 200) << "too few reads raced with a publish (" << published.load() << " publishes)";
  EXPECT_EQ(torn, 0) << "metas read together mixed two generations (I3)";
}

}  // namespace
}  // namespace stalelearn::sync
