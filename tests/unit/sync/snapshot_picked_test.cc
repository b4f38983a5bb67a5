// Picked change reads (SnapshotReader::ReadPickedChanges, the refresh of a
// partial replica): the reader gets the change index and then only the rows
// it holds, each once at its latest value; one too far behind the log reads
// the whole shard once; one racing a publisher never installs a row from a
// generation other than the one it returns (I3).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "framework/core/sanitizer.h"
#include "framework/metrics/counting_transport.h"
#include "framework/sync/snapshot.h"
#include "framework/transport/forwarding_transport.h"
#include "tests/unit/sync/picked_test_helpers.h"
#include "tests/unit/sync/ring_fixture.h"
#include "tests/unit/sync/snapshot_checks.h"

namespace stalelearn::sync {
namespace {

using testing::FillMaster;
using testing::RingFixture;
using namespace picked_test;

// A NIC whose operations cost `bytes` each (Capabilities::operation_cost_bytes):
// 0 makes a reader fetch every picked record with its own get.
class CostPerOperation final : public transport::ForwardingTransport {
 public:
  CostPerOperation(transport::Transport& inner, std::size_t bytes) : ForwardingTransport(inner), bytes_(bytes) {}
  transport::Capabilities capabilities() const override {
    transport::Capabilities caps = ForwardingTransport::capabilities();
    caps.operation_cost_bytes = bytes_;
    return caps;
  }

 private:
  std::size_t bytes_;
};

TEST(PickedChanges, ReadOnlyThePickedRowsOnceEachAtTheirLatestValue) {
  RingFixture f(4, 1, WideTable());
  const PublishedGeometry g = f.published_geometry();
  ChangedRows changed(f.layout(), model::MemoryIndex{0});
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());  // generation 1: every row, records of many rows
  CostPerOperation free_operations(f.transport(), 0);
  metrics::CountingTransport counting(free_operations);
  SnapshotReader reader(counting, f.remote_published(), g, WaitOptions{});
  Installed a;
  const auto sink_a = [&](std::size_t o, std::span<const std::byte> b) { a.Sink(o, b); };
  Result<const SnapshotMeta*> first = reader.ReadPickedChanges(SnapshotMeta{}, PickRows({3, 400}), sink_a);
  ASSERT_TRUE(first.ok() && *first != nullptr) << first.status().ToString();
  EXPECT_EQ(std::count(a.times.begin(), a.times.end(), 1), kRows) << "records of several rows are read whole";
  const SnapshotMeta held = **first;

  SetRows(f, changed, {3, 100, 300}, 5);  // generation 2
  publisher.Publish(f.merger().master(), f.poller(), changed);
  changed.Clear();
  SetRows(f, changed, {100, 400}, 7);  // generation 3
  publisher.Publish(f.merger().master(), f.poller(), changed);
  changed.Clear();
  // The latest-generation word, the meta slot and its version re-read, the oldest-valid word twice.
  const std::int64_t control = static_cast<std::int64_t>(8 + g.meta_bytes() + 8 + 8 + 8);
  const std::int64_t index = 5 * static_cast<std::int64_t>(PublishedGeometry::kIndexEntryBytes);

  a = Installed{};
  std::int64_t before = counting.counters().bytes_get;
  const std::int64_t gets_before_a = counting.counters().gets;
  Result<const SnapshotMeta*> next = reader.ReadPickedChanges(held, PickRows({3, 400}), sink_a);
  ASSERT_TRUE(next.ok() && *next != nullptr);
  EXPECT_EQ((*next)->generation, 3u);
  EXPECT_EQ(a.times[3], 1);
  EXPECT_EQ(a.times[400], 1);
  EXPECT_EQ(std::count(a.times.begin(), a.times.end(), 0), kRows - 2) << "a row the reader does not hold was read";
  EXPECT_EQ(a.value[3], 5);
  EXPECT_EQ(a.value[400], 7);
  EXPECT_EQ(counting.counters().bytes_get - before, index + 2 * static_cast<std::int64_t>(kRowBytes) + control)
      << "not exactly the index and the two picked rows were read";

  // Where a get costs more than the 800 bytes between the two rows' records
  // (three records and a key), one get fetches both and what lies between.
  CostPerOperation dear_operations(f.transport(), 1024);
  metrics::CountingTransport dear(dear_operations);
  SnapshotReader reader_c(dear, f.remote_published(), g, WaitOptions{});
  Installed c;
  Result<const SnapshotMeta*> coalesced = reader_c.ReadPickedChanges(
      held, PickRows({3, 400}), [&](std::size_t o, std::span<const std::byte> bytes) { c.Sink(o, bytes); });
  ASSERT_TRUE(coalesced.ok() && *coalesced != nullptr);
  EXPECT_EQ(c.value[3], 5);
  EXPECT_EQ(c.value[400], 7);
  EXPECT_EQ(std::count(c.times.begin(), c.times.end(), 1), 2) << "only the picked rows are installed";
  const std::int64_t between = 3 * static_cast<std::int64_t>(8 + kRowBytes) + 8;
  EXPECT_EQ(dear.counters().bytes_get, index + 2 * static_cast<std::int64_t>(kRowBytes) + between + control);
  EXPECT_EQ(dear.counters().gets + 1, counting.counters().gets - gets_before_a)
      << "the two rows were not fetched with one get";

  // Row 100 changed in both generations: read once, at generation 3's value.
  SnapshotReader reader_b(counting, f.remote_published(), g, WaitOptions{});
  Installed b;
  before = counting.counters().bytes_get;
  Result<const SnapshotMeta*> only_100 = reader_b.ReadPickedChanges(
      held, PickRows({100}), [&](std::size_t o, std::span<const std::byte> bytes) { b.Sink(o, bytes); });
  ASSERT_TRUE(only_100.ok() && *only_100 != nullptr);
  EXPECT_EQ(b.times[100], 1) << "a row changed twice was read twice";
  EXPECT_EQ(b.value[100], 7);
  EXPECT_EQ(counting.counters().bytes_get - before, index + static_cast<std::int64_t>(kRowBytes) + control);
  EXPECT_EQ(a.mixed_rows + b.mixed_rows, 0);
  EXPECT_EQ(reader.whole_reads() + reader_b.whole_reads(), 0u);

  // Nothing newer: nothing read, nothing installed.
  a = Installed{};
  Result<const SnapshotMeta*> none = reader.ReadPickedChanges(**next, PickRows({3, 400}), sink_a);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
  EXPECT_EQ(std::count(a.times.begin(), a.times.end(), 0), kRows);
}

TEST(PickedChanges, ReaderBehindTheLogReadsTheWholeShardOnce) {
  RingFixture f(4, 1, WideTable());
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());
  SnapshotReader reader(f.transport(), f.remote_published(), g, WaitOptions{});
  Installed installed;
  const auto sink = [&](std::size_t o, std::span<const std::byte> b) { installed.Sink(o, b); };
  Result<const SnapshotMeta*> first = reader.ReadPickedChanges(SnapshotMeta{}, PickRows({1}), sink);
  ASSERT_TRUE(first.ok() && *first != nullptr);
  const SnapshotMeta held = **first;
  const int generations = static_cast<int>(g.log_capacity() / g.shard_bytes) + 2;  // each rewrites every row
  for (int v = 2; v < 2 + generations; ++v) {
    FillMaster(f.merger(), v);
    publisher.Publish(f.merger().master(), f.poller());
  }
  installed = Installed{};
  Result<const SnapshotMeta*> next = reader.ReadPickedChanges(held, PickRows({1}), sink);
  ASSERT_TRUE(next.ok() && *next != nullptr);
  EXPECT_EQ(reader.whole_reads(), 1u);
  EXPECT_EQ((*next)->generation, static_cast<std::uint64_t>(1 + generations));
  EXPECT_EQ(installed.times[1], 1);
  EXPECT_EQ(installed.value[1], 1 + generations);
}

// A whole-shard publish larger than a fetch batch (kLogChunkBytes) is one
// run of adjacent records: it is fetched batch by batch, and every row still
// arrives whole, once, at its place.
TEST(PickedChanges, AdjacentRecordsLargerThanABatchArriveWholeAndInPlace) {
  constexpr std::int64_t kManyRows = 120'000;  // 12 bytes a row: 1.4 MB, more than one batch
  RingFixture f(4, 1, {{"wide", model::ElementType::kInt32, kManyRows, 3}});
  const PublishedGeometry g = f.published_geometry();
  ASSERT_GT(g.shard_bytes, SnapshotReader::kLogChunkBytes);
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  model::RowBlock& block = f.merger().mutable_master()[0];
  for (std::int64_t r = 0; r < kManyRows; ++r) {
    for (std::int32_t k = 0; k < 3; ++k) block.IntRow(r)[k] = static_cast<std::int32_t>(r * 3 + k) * 7 + 1;
  }
  publisher.Publish(f.merger().master(), f.poller());
  SnapshotReader reader(f.transport(), f.remote_published(), g, WaitOptions{});
  std::vector<std::byte> shard(g.shard_bytes);
  std::size_t delivered = 0;
  const SnapshotReader::RecordPicker every_record{
      [](std::size_t, std::size_t) { return SnapshotReader::kAnyRecord; }};
  Result<const SnapshotMeta*> read =
      reader.ReadPickedChanges(SnapshotMeta{}, every_record, [&](std::size_t offset, std::span<const std::byte> bytes) {
        ASSERT_LE(offset + bytes.size(), shard.size());
        std::memcpy(shard.data() + offset, bytes.data(), bytes.size());
        delivered += bytes.size();
      });
  ASSERT_TRUE(read.ok() && *read != nullptr);
  EXPECT_EQ(delivered, g.shard_bytes) << "every row once";
  EXPECT_EQ(reader.whole_reads(), 0u);
  std::vector<std::int32_t> ints(shard.size() / 4);
  std::memcpy(ints.data(), shard.data(), shard.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < ints.size(); ++i) wrong += ints[i] != static_cast<std::int32_t>(i) * 7 + 1;
  EXPECT_EQ(wrong, 0u);
}

// Bytes a reader of 8-byte rows got per refresh, and the log's bytes of that
// refresh, over generations 2..9 (each changes every third row). The reader
// holds every `every`-th row; its NIC charges `operation_cost` per get.
struct RefreshBytes {
  std::int64_t got, log_bytes;
};
std::vector<RefreshBytes> NarrowRowRefreshes(std::int64_t every, std::size_t operation_cost) {
  constexpr std::int64_t kNarrowRows = 4096;
  RingFixture f(4, 1, {{"narrow", model::ElementType::kInt32, kNarrowRows, 2}});
  const PublishedGeometry g = f.published_geometry();
  ChangedRows changed(f.layout(), model::MemoryIndex{0});
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());
  CostPerOperation nic(f.transport(), operation_cost);
  metrics::CountingTransport counting(nic);
  const SnapshotReader::RecordPicker picker{[every](std::size_t offset, std::size_t bytes) -> std::int64_t {
    if (bytes != 8) return SnapshotReader::kAnyRecord;
    const auto row = static_cast<std::int64_t>(offset / 8);
    return row % every == 0 ? row : SnapshotReader::kNotPicked;
  }};
  SnapshotReader reader(counting, f.remote_published(), g, WaitOptions{});
  std::vector<std::int32_t> held(kNarrowRows, 0);
  const auto sink = [&](std::size_t offset, std::span<const std::byte> bytes) {
    for (std::size_t at = 0; at < bytes.size(); at += 8) std::memcpy(&held[(offset + at) / 8], bytes.data() + at, 4);
  };
  SnapshotMeta since = **reader.ReadPickedChanges(SnapshotMeta{}, picker, sink);
  std::vector<RefreshBytes> refreshes;
  for (std::int32_t v = 2; v < 10; ++v) {
    std::vector<std::int64_t> rows;
    for (std::int64_t r = v; r < kNarrowRows; r += 3) rows.push_back(r);
    for (std::int64_t r : rows) f.merger().mutable_master()[0].IntRow(r)[0] = v, changed.Mark(model::TableId{0}, r);
    publisher.Publish(f.merger().master(), f.poller(), changed);
    changed.Clear();
    const std::int64_t before = counting.counters().bytes_get;
    Result<const SnapshotMeta*> read = reader.ReadPickedChanges(since, picker, sink);
    EXPECT_TRUE(read.ok() && *read != nullptr);
    if (!read.ok() || *read == nullptr) break;
    refreshes.push_back({counting.counters().bytes_get - before,
                         static_cast<std::int64_t>((*read)->log_end - since.log_end)});
    since = **read;
    for (std::int64_t r : rows) {
      if (r % every == 0) {
        EXPECT_EQ(held[static_cast<std::size_t>(r)], v) << "row " << r;
      }
    }
  }
  return refreshes;
}

// With 8-byte rows an index entry costs half a record: a reader holding
// every row gives the index up after a few refreshes and reads the records as
// they are (what they cost: the log's bytes), still installing the latest
// values; a reader holding a few rows keeps picking, unless each get costs
// more than the log (the weighing counts gets, not only bytes).
TEST(PickedChanges, AReaderHoldingEveryChangedRowStopsReadingTheIndex) {
  const std::vector<RefreshBytes> all_rows = NarrowRowRefreshes(1, 1024);
  ASSERT_EQ(all_rows.size(), 8u);
  for (std::size_t i = 3; i < all_rows.size(); ++i) {
    // Beside the log: a 128-byte meta slot and four words; the index would add 8 KB.
    EXPECT_LE(all_rows[i].got, all_rows[i].log_bytes + 256) << "refresh " << i << ": still reading the index";
  }
  for (const RefreshBytes& r : NarrowRowRefreshes(512, 1024)) {
    EXPECT_LT(r.got, r.log_bytes * 3 / 4) << "the few-row reader stopped picking";
  }
  const std::vector<RefreshBytes> dear = NarrowRowRefreshes(512, std::size_t{1} << 20);
  ASSERT_EQ(dear.size(), 8u);
  for (std::size_t i = 3; i < dear.size(); ++i) {
    EXPECT_GE(dear[i].got, dear[i].log_bytes) << "refresh " << i << ": still picking though a get costs a MiB";
  }
}

// Generation 1 sets every row to 1; generation g >= 2 sets the rows r with
// r = g (mod 3) to g. A reader holding the even rows reads picked changes,
// through a NIC slow on log reads, while a writer thread publishes as fast as
// it can (the log wraps every ~9 generations: many reads fall back to whole
// reads): after each read that returns generation g, every held row must
// hold its value as of g. Without the re-check after the rows are fetched,
// this fails with torn rows and values of later generations.
TEST(PickedChanges, RacingReaderInstallsOnlyTheGenerationItReturns) {
  RingFixture f(4, 1, WideTable());
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());
  std::set<std::int64_t> held_rows;
  for (std::int64_t r = 0; r < kRows; r += 2) held_rows.insert(r);
  const SnapshotReader::RecordPicker picker = PickRows(held_rows);
  SlowReads slow(f.transport(), g.log_offset(), g.index_offset());
  SnapshotReader reader(slow, f.remote_published(), g, WaitOptions{});
  Installed installed;
  const auto sink = [&](std::size_t o, std::span<const std::byte> b) { installed.Sink(o, b); };
  const auto value_at = [](std::int64_t r, std::uint64_t generation) {
    const auto gen = static_cast<std::int64_t>(generation);
    const std::int64_t last = gen - ((gen - r) % 3 + 3) % 3;  // the latest generation <= gen that set r
    return static_cast<std::int32_t>(last >= 2 ? last : 1);
  };
  SnapshotMeta held;
  int wrong = 0;
  int racing = 0;
  std::atomic<std::int64_t> published{0};
  {
    std::jthread writer([&](std::stop_token stop) {
      ChangedRows changed(f.layout(), model::MemoryIndex{0});
      for (std::int32_t v = 2; !stop.stop_requested(); ++v) {
        std::vector<std::int64_t> rows;
        for (std::int64_t r = v % 3; r < kRows; r += 3) rows.push_back(r);
        SetRows(f, changed, rows, v);
        publisher.Publish(f.merger().master(), f.poller(), changed);
        changed.Clear();
        published.fetch_add(1, std::memory_order_relaxed);
        // A few generations per slow get, not hundreds: a reader racing a
        // publisher that never pauses only ever retries (seqlock readers starve).
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
    // Under ThreadSanitizer every access is 5-15x slower: it looks for data
    // races, which a few dozen racing reads show as well as a hundred.
#if defined(STALELEARN_TSAN_BUILD)
    constexpr int kRacingReads = 25;
#else
    constexpr int kRacingReads = 100;
#endif
    // Given up in progress, not seconds (a loaded machine only makes it
    // slower): both threads far along and still too few reads that raced.
    constexpr std::int64_t kGiveUpAfter = 50000;
    for (std::int64_t reads = 0; racing < kRacingReads; ++reads) {
      if (reads > kGiveUpAfter && published.load(std::memory_order_relaxed) > kGiveUpAfter) {
        ADD_FAILURE() << "only " << racing << " of " << reads << " reads raced with the writer's "
                      << published.load() << " publishes";
        break;
      }
      Result<const SnapshotMeta*> read = reader.ReadPickedChanges(held, picker, sink);
      ASSERT_TRUE(read.ok()) << read.status().ToString();
      if (*read == nullptr) continue;
      racing += held.generation > 0;
      held = **read;
      for (std::int64_t r : held_rows) wrong += installed.value[static_cast<std::size_t>(r)] != value_at(r, held.generation);
    }
  }
  EXPECT_EQ(wrong, 0) << "held rows whose value is not that of the generation read (a torn or stale refresh)";
  EXPECT_EQ(installed.mixed_rows, 0);
}

}  // namespace
}  // namespace stalelearn::sync
