// Rows read from a snapshot (SnapshotReader::ReadRows: a stratified rank's
// stripe, a partial replica's first read, DIRECT mode): the live rows are
// patched with the records published meanwhile, so they are one generation
// exactly (I3); rows that are a small part of the shard take only the
// records that overlap them, found through the change index.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "framework/core/sanitizer.h"
#include "framework/metrics/counting_transport.h"
#include "framework/sync/snapshot.h"
#include "framework/transport/forwarding_transport.h"
#include "tests/unit/sync/picked_test_helpers.h"
#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::sync {
namespace {

using namespace picked_test;

// Reads of rows {3, 4} and 300 into `into` (3 rows of kRowBytes).
std::vector<SnapshotReader::RowRead> ThreeRows(std::vector<std::byte>& into) {
  into.assign(3 * kRowBytes, std::byte{0});
  return {{3 * kRowBytes, into.data(), 2 * kRowBytes}, {300 * kRowBytes, into.data() + 2 * kRowBytes, kRowBytes}};
}

std::int32_t RowValue(const std::vector<std::byte>& rows, int i, int* mixed) {
  std::int32_t row[kWidth];
  std::memcpy(row, rows.data() + static_cast<std::size_t>(i) * kRowBytes, kRowBytes);
  for (std::int32_t x : row) *mixed += x != row[0];
  return row[0];
}

TEST(SnapshotRows, FewRowsTakeOnlyTheirRecordsFromTheIndex) {
  PublishedWideTable t;
  // Generation 2 rewrites every row but 3, 4 and 300 as one-row records,
  // then generation 3 rewrites rows 4 and 10.
  std::vector<std::int64_t> others;
  for (std::int64_t r = 0; r < kRows; ++r) {
    if (r != 3 && r != 4 && r != 300) others.push_back(r);
  }
  SetRows(t.f, t.changed, others, 2);
  t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed);
  t.changed.Clear();
  SetRows(t.f, t.changed, {4, 10}, 3);
  t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed);
  t.changed.Clear();

  LiveRowsStillInWriting(t.f, t.g);  // generation 3's records are then laid too
  metrics::CountingTransport counting(t.f.transport());
  SnapshotReader reader(counting, t.f.remote_published(), t.g, WaitOptions{});
  std::vector<std::byte> rows;
  const std::vector<SnapshotReader::RowRead> reads = ThreeRows(rows);
  Result<std::uint64_t> generation = reader.ReadRows(reads);
  ASSERT_TRUE(generation.ok()) << generation.status().ToString();
  EXPECT_EQ(*generation, 3u);
  int mixed = 0;
  EXPECT_EQ(RowValue(rows, 0, &mixed), 1);
  EXPECT_EQ(RowValue(rows, 1, &mixed), 3) << "row 4 is not generation 3's";
  EXPECT_EQ(RowValue(rows, 2, &mixed), 1);
  EXPECT_EQ(mixed, 0);
  // Exactly: the live rows; generation 3's two index entries and row 4's
  // row bytes (not its log: row 10's record is not read); two metas, each
  // with the latest-generation word before it and its version after it;
  // the live-generation word; the oldest-valid word after the index and
  // after the rows.
  const std::int64_t records = 2 * static_cast<std::int64_t>(8 + kRowBytes);
  const auto row = static_cast<std::int64_t>(kRowBytes);
  const auto meta = static_cast<std::int64_t>(t.g.meta_bytes());
  EXPECT_EQ(counting.counters().bytes_get, 3 * row + 2 * 8 + row + 2 * (meta + 16) + 8 + 2 * 8);

  // Rows that are most of the shard take every record instead: each
  // record overlaps them, and the index would only add its bytes.
  metrics::CountingTransport counting_all(t.f.transport());
  SnapshotReader all_reader(counting_all, t.f.remote_published(), t.g, WaitOptions{});
  std::vector<std::byte> shard(kRows * kRowBytes);
  const SnapshotReader::RowRead whole{0, shard.data(), shard.size()};
  ASSERT_TRUE(all_reader.ReadRows(std::span(&whole, 1)).ok());
  std::int32_t row10;
  std::memcpy(&row10, shard.data() + 10 * kRowBytes, sizeof row10);
  EXPECT_EQ(row10, 3);
  EXPECT_GE(counting_all.counters().bytes_get, static_cast<std::int64_t>(shard.size()) + records);
}

// A third of the shard, while the records published are all outside it
// (a stratified stripe while the other ranks write theirs): the index
// tells it so, and the records are not read. Streaming the log, as reads
// of a quarter of the shard or more once did, got every record.
TEST(SnapshotRows, AThirdOfTheShardWrittenElsewhereTakesTheIndexNotTheLog) {
  PublishedWideTable t;
  constexpr std::int64_t kThird = kRows / 3;
  std::vector<std::int64_t> elsewhere;
  for (std::int64_t r = kThird; r < kRows; ++r) elsewhere.push_back(r);
  SetRows(t.f, t.changed, elsewhere, 2);
  t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed);
  t.changed.Clear();

  LiveRowsStillInWriting(t.f, t.g);
  metrics::CountingTransport counting(t.f.transport());
  SnapshotReader reader(counting, t.f.remote_published(), t.g, WaitOptions{});
  std::vector<std::byte> rows(static_cast<std::size_t>(kThird) * kRowBytes);
  const SnapshotReader::RowRead third{0, rows.data(), rows.size()};
  ASSERT_TRUE(reader.ReadRows(std::span(&third, 1)).ok());
  std::int32_t first;
  std::memcpy(&first, rows.data(), sizeof first);
  EXPECT_EQ(first, 1) << "row 0 is not generation 2's";
  const auto log = static_cast<std::int64_t>(elsewhere.size() * kRowBytes);
  EXPECT_LT(counting.counters().bytes_get, static_cast<std::int64_t>(rows.size()) + log / 2)
      << "the records of rows outside the read were got";
  EXPECT_GE(counting.counters().bytes_get,
            static_cast<std::int64_t>(rows.size() + 8 * elsewhere.size()))  // the rows and the index
      << "the index was not read";
}

// A read that begins after the latest generation's live rows are written
// (the live-generation word at it) gets the rows and the words around them,
// no index and no records: nothing it read can be in writing, and nothing
// was published after. With the word one behind, the same read lays that
// generation's records over the rows, and rows left half-written by its
// step 5 come back as that generation's: a reader that trusted a stale
// live word would return them half-written.
TEST(SnapshotRows, ALiveWordAtTheGenerationReadTakesNoRecords) {
  PublishedWideTable t;
  std::vector<std::int64_t> all;
  for (std::int64_t r = 0; r < kRows; ++r) all.push_back(r);
  SetRows(t.f, t.changed, all, 2);
  t.publisher.Publish(t.f.merger().master(), t.f.poller(), t.changed);
  t.changed.Clear();
  const auto meta = static_cast<std::int64_t>(t.g.meta_bytes());
  constexpr std::int64_t kThird = kRows / 3;
  std::vector<std::byte> rows(static_cast<std::size_t>(kThird) * kRowBytes);
  const SnapshotReader::RowRead third{0, rows.data(), rows.size()};
  const auto check = [&](const char* what) {
    int mixed = 0;
    for (int i = 0; i < kThird; ++i) ASSERT_EQ(RowValue(rows, i, &mixed), 2) << what << ": row " << i;
    EXPECT_EQ(mixed, 0) << what;
  };
  {
    metrics::CountingTransport counting(t.f.transport());
    SnapshotReader reader(counting, t.f.remote_published(), t.g, WaitOptions{});
    ASSERT_TRUE(reader.ReadRows(std::span(&third, 1)).ok());
    check("live word at the generation");
    EXPECT_EQ(counting.counters().bytes_get, static_cast<std::int64_t>(rows.size()) + 2 * (meta + 16) + 8);
  }
  // Step 5 of generation 2 caught half done: its rows 0..kThird/2 still
  // hold garbage, the word says generation 1.
  LiveRowsStillInWriting(t.f, t.g);
  std::memset(t.f.published_region().data() + t.g.data_offset(), 0x5a, kThird / 2 * kRowBytes);
  metrics::CountingTransport counting(t.f.transport());
  SnapshotReader reader(counting, t.f.remote_published(), t.g, WaitOptions{});
  ASSERT_TRUE(reader.ReadRows(std::span(&third, 1)).ok());
  check("rows still in writing");
  EXPECT_GT(counting.counters().bytes_get, static_cast<std::int64_t>(2 * rows.size()))
      << "the records of the generation in writing were not laid over the rows";
}

// Readers of a few rows through a NIC slow on the live shard, while a
// writer publishes every few microseconds: after each read that returns
// generation g, every row read must hold its value as of g. Without the
// patch (or with records picked from the wrong generations), rows come
// back torn or from another generation. `together`: two readers read
// through ReadRowsOfEach (their steps interleaved), else one through ReadRows.
void CheckRacingRowReadsAreOneGeneration(bool together) {
  PublishedWideTable t;
  SlowReads slow(t.f.transport(), t.g.data_offset(), t.g.log_offset());  // the live shard
  SnapshotReader first(slow, t.f.remote_published(), t.g, WaitOptions{});
  SnapshotReader second(slow, t.f.remote_published(), t.g, WaitOptions{});
  SnapshotReader* readers[] = {&first, &second};
  const auto value_at = [](std::int64_t r, std::uint64_t generation) {
    const auto gen = static_cast<std::int64_t>(generation);
    const std::int64_t last = gen - ((gen - r) % 3 + 3) % 3;  // the latest generation <= gen that set r
    return static_cast<std::int32_t>(last >= 2 ? last : 1);
  };
  std::vector<std::byte> rows_a, rows_b(2 * kRowBytes);
  const std::vector<SnapshotReader::RowRead> reads_a = ThreeRows(rows_a);
  const std::vector<SnapshotReader::RowRead> reads_b = {{7 * kRowBytes, rows_b.data(), kRowBytes},
                                                        {200 * kRowBytes, rows_b.data() + kRowBytes, kRowBytes}};
  const std::span<const SnapshotReader::RowRead> each[] = {reads_a, reads_b};
  const std::int64_t rows_of_a[3] = {3, 4, 300};
  const std::int64_t rows_of_b[2] = {7, 200};
  int wrong = 0, mixed = 0, racing = 0;
  std::uint64_t last = 1;
  std::atomic<std::int64_t> published{0};
  {
    std::jthread writer([&](std::stop_token stop) {
      ChangedRows changed(t.f.layout(), model::MemoryIndex{0});
      for (std::int32_t v = 2; !stop.stop_requested(); ++v) {
        std::vector<std::int64_t> changed_rows;
        for (std::int64_t r = v % 3; r < kRows; r += 3) changed_rows.push_back(r);
        SetRows(t.f, changed, changed_rows, v);
        t.publisher.Publish(t.f.merger().master(), t.f.poller(), changed);
        changed.Clear();
        published.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::sleep_for(std::chrono::microseconds(20));  // a few generations per slow read
      }
    });
#if defined(STALELEARN_TSAN_BUILD)
    constexpr int kRacingReads = 25;
#else
    constexpr int kRacingReads = 100;
#endif
    constexpr std::int64_t kGiveUpAfter = 50000;  // in progress, not seconds
    for (std::int64_t n = 0; racing < kRacingReads; ++n) {
      if (n > kGiveUpAfter && published.load(std::memory_order_relaxed) > kGiveUpAfter) {
        ADD_FAILURE() << "only " << racing << " of " << n << " reads raced with the writer";
        break;
      }
      if (together) {
        const Status read = SnapshotReader::ReadRowsOfEach(readers, each);
        ASSERT_TRUE(read.ok()) << read.ToString();
      } else {
        Result<std::uint64_t> read = first.ReadRows(reads_a);
        ASSERT_TRUE(read.ok()) << read.status().ToString();
        ASSERT_EQ(*read, first.last_meta().generation);
      }
      const std::uint64_t generation = first.last_meta().generation;
      ASSERT_GE(generation, last) << "generations went backwards";
      racing += generation > last;
      last = generation;
      for (int i = 0; i < 3; ++i) wrong += RowValue(rows_a, i, &mixed) != value_at(rows_of_a[i], generation);
      if (!together) continue;
      for (int i = 0; i < 2; ++i) {
        wrong += RowValue(rows_b, i, &mixed) != value_at(rows_of_b[i], second.last_meta().generation);
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "rows whose value is not that of the generation read (a torn or stale read)";
  EXPECT_EQ(mixed, 0) << "torn rows";
}

// The live-generation word never runs ahead of the rows it vouches for: a
// writer rewrites every row of an 8 MB shard at each generation (step 5
// takes about a millisecond), while a reader reads the shard's last row,
// rewritten last, again and again. A read that found the word at the
// generation it began at lays none of that generation's records; had the
// word been advanced before the rows (or its store reordered after them),
// reads beginning inside step 5 would return the row a generation behind.
TEST(SnapshotRows, ALiveWordNeverRunsAheadOfItsRows) {
  constexpr std::int64_t kBigRows = std::int64_t{1} << 15;
  RingFixture f(4, 1, {{"big", model::ElementType::kInt32, kBigRows, kWidth}});
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  testing::FillMaster(f.merger(), 1);
  publisher.Publish(f.merger().master(), f.poller());  // generation 1: every row 1
  SnapshotReader reader(f.transport(), f.remote_published(), g, WaitOptions{});
  std::vector<std::byte> row(kRowBytes);
  const SnapshotReader::RowRead last{static_cast<std::size_t>(kBigRows - 1) * kRowBytes, row.data(), kRowBytes};
  int wrong = 0, mixed = 0, reads = 0;
  std::atomic<std::int64_t> published{0};
  {
    std::jthread writer([&](std::stop_token stop) {
      ChangedRows changed(f.layout(), model::MemoryIndex{0});
      for (std::int32_t v = 2; !stop.stop_requested(); ++v) {
        for (std::int64_t r = 0; r < kBigRows; ++r) {
          for (std::int32_t& x : f.merger().mutable_master()[0].IntRow(r)) x = v;
          changed.Mark(model::TableId{0}, r, kManyWriters);
        }
        publisher.Publish(f.merger().master(), f.poller(), changed);  // generation v: every row v
        changed.Clear();
        published.fetch_add(1, std::memory_order_relaxed);
      }
    });
    constexpr std::int64_t kGenerations = 30;
    while (published.load(std::memory_order_relaxed) < kGenerations) {
      Result<std::uint64_t> generation = reader.ReadRows(std::span(&last, 1));
      ASSERT_TRUE(generation.ok()) << generation.status().ToString();
      ++reads;
      wrong += RowValue(row, 0, &mixed) != static_cast<std::int32_t>(*generation);
    }
  }
  EXPECT_GT(reads, 30) << "the reads did not race with the writer";
  RecordProperty("reads", reads);
  EXPECT_EQ(wrong, 0) << "reads of " << reads << " whose row was not that of the generation read";
  EXPECT_EQ(mixed, 0) << "torn rows";
}

TEST(SnapshotRows, RacingRowReadsAreOneGeneration) { CheckRacingRowReadsAreOneGeneration(/*together=*/false); }

TEST(SnapshotRows, RacingRowReadsOfTwoReadersTogetherAreOneGenerationEach) {
  CheckRacingRowReadsAreOneGeneration(/*together=*/true);
}

}  // namespace
}  // namespace stalelearn::sync
