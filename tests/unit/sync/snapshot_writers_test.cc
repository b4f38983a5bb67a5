// Change writers (ChangedRows, the change writers beside the index, the
// single-writer end in the meta): a reader does not read back rows only it
// changed since the generation it holds, reads every row another rank
// changed, and reads the writers only where a record names one.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "framework/metrics/counting_transport.h"
#include "framework/sync/snapshot.h"
#include "tests/unit/sync/picked_test_helpers.h"
#include "tests/unit/sync/ring_fixture.h"
#include "tests/unit/sync/snapshot_checks.h"

namespace stalelearn::sync {
namespace {

using testing::RingFixture;
using namespace picked_test;

TEST(ChangedRows, KeepsTheOnlyWriterOfARowOrSaysSeveral) {
  RingFixture f(4, 1, WideTable());
  ChangedRows changed(f.layout(), model::MemoryIndex{0});
  const model::TableId t{0};
  const std::uint16_t a = WriterOf(model::ComputeIndex{0}), b = WriterOf(model::ComputeIndex{2});
  changed.Mark(t, 1, a);
  changed.Mark(t, 1, a);
  changed.Mark(t, 2, a);
  changed.Mark(t, 2, b);
  changed.Mark(t, 3, kManyWriters);
  changed.Mark(t, 3, a);
  EXPECT_EQ(changed.writer(t, 1), a);
  EXPECT_EQ(changed.writer(t, 2), kManyWriters);
  EXPECT_EQ(changed.writer(t, 3), kManyWriters);
  EXPECT_EQ(changed.rows(t).size(), 3u);
  changed.Clear();
  EXPECT_EQ(changed.writer(t, 1), kNoWriter);
  EXPECT_NE(a, b);
  EXPECT_EQ(WriterOf(model::ComputeIndex{kManyWriters}), kManyWriters) << "a rank too high to name is several";
}

// The memory rank names a row's only writer where its table's merge is a sum
// (master += delta: the writer's replica then holds the merged value); with
// any other merge (average here) the row is marked as changed by several.
TEST(ChangedRows, TheMemoryRankNamesTheWriterOnlyWhereTheMergeIsASum) {
  for (const std::string policy : {"sum", "average"}) {
    MergePolicySpec spec;
    spec.name = policy;
    RingFixture f(4, 1, {{"w", model::ElementType::kFloat32, 16, 2}}, {spec});
    ChangedRows changed(f.layout(), model::MemoryIndex{0});
    f.poller().set_changed_rows(&changed);
    ASSERT_TRUE(f.writer().Push(f.Batch({3}, 1)).ok());
    ASSERT_EQ(f.poller().PollOnce(), 1);
    EXPECT_EQ(changed.writer(model::TableId{0}, 3),
              policy == "sum" ? WriterOf(model::ComputeIndex{0}) : kManyWriters)
        << policy;
  }
}

// A reader skips a row only it changed since the generation it holds (its
// replica has that value); it reads a row another rank changed in any of
// those generations, at its latest value, even when the latest change is its
// own. Checking only the latest record's writer would skip row 30 and leave
// the reader without rank b's change. The same whether the reader sorts the
// picked records by id or the picker promises dense ids (an array per id).
TEST(PickedChanges, RowsOnlyTheReaderChangedAreNotReadBack) {
  for (const std::size_t id_count : {std::size_t{0}, static_cast<std::size_t>(kRows)}) {
  SCOPED_TRACE(id_count == 0 ? "ids sorted" : "dense ids");
  PublishedWideTable t;
  RingFixture& f = t.f;
  ChangedRows& changed = t.changed;
  const std::uint16_t me = WriterOf(model::ComputeIndex{1}), other = WriterOf(model::ComputeIndex{3});
  for (const bool skip_own : {true, false}) {
    metrics::CountingTransport counting(f.transport());
    SnapshotReader reader(counting, f.remote_published(), t.g, WaitOptions{});
    if (skip_own) reader.set_own_writer(me);
    const SnapshotMeta held =
        **reader.ReadPickedChanges(SnapshotMeta{}, PickRows({10, 20, 30, 40, 50}, id_count), [](auto, auto) {});
    const std::int32_t base = skip_own ? 10 : 20;
    SetRows(f, changed, {10, 20}, base + 2, me);  // 10: mine in both; 20: mine, then the other's
    SetRows(f, changed, {30}, base + 2, other);   // 30: the other's, then mine
    SetRows(f, changed, {40}, base + 2, me);      // 40: mine and the other's in one generation
    SetRows(f, changed, {40}, base + 2, other);
    t.publisher.Publish(f.merger().master(), f.poller(), changed);
    changed.Clear();
    SetRows(f, changed, {10, 30, 50}, base + 3, me);  // 50: mine, once
    SetRows(f, changed, {20}, base + 3, other);
    t.publisher.Publish(f.merger().master(), f.poller(), changed);
    changed.Clear();
    Installed got;
    // With dense ids the picked rows come through `take`, each with its id
    // (the row here), and none through the sink.
    SnapshotReader::RecordPicker picker = PickRows({10, 20, 30, 40, 50}, id_count);
    int taken = 0, sunk = 0;
    if (id_count > 0) {
      picker.take = [&](std::int64_t id, std::size_t o, std::span<const std::byte> bytes) {
        EXPECT_EQ(static_cast<std::size_t>(id) * kRowBytes, o) << "the id Pick gave the row";
        ++taken;
        got.Sink(o, bytes);
      };
    }
    Result<const SnapshotMeta*> read = reader.ReadPickedChanges(held, picker, [&](std::size_t o, std::span<const std::byte> bytes) {
      ++sunk;
      got.Sink(o, bytes);
    });
    ASSERT_TRUE(read.ok() && *read != nullptr);
    EXPECT_EQ(id_count > 0 ? taken : sunk, skip_own ? 3 : 5);
    EXPECT_EQ(id_count > 0 ? sunk : taken, 0);
    EXPECT_EQ(got.times[10], skip_own ? 0 : 1) << "row 10: only mine";
    EXPECT_EQ(got.times[50], skip_own ? 0 : 1) << "row 50: only mine";
    EXPECT_EQ(got.times[20], 1);
    EXPECT_EQ(got.value[20], base + 3);
    EXPECT_EQ(got.times[30], 1) << "row 30: the other rank's change is in it";
    EXPECT_EQ(got.value[30], base + 3);
    EXPECT_EQ(got.times[40], 1);
    EXPECT_EQ(got.value[40], base + 2);
  }
  }
}

// The writers cost 2 bytes a record, and are read only where a record since
// the reader's generation names a single writer (the meta's single-writer
// end): under a merge that names none (average), a reader with an own
// writer gets exactly what one without gets.
TEST(PickedChanges, WritersAreReadOnlyWhereARecordNamesOne) {
  PublishedWideTable t;
  RingFixture& f = t.f;
  ChangedRows& changed = t.changed;
  metrics::CountingTransport with_counting(f.transport()), without_counting(f.transport());
  SnapshotReader with(with_counting, f.remote_published(), t.g, WaitOptions{});
  SnapshotReader without(without_counting, f.remote_published(), t.g, WaitOptions{});
  with.set_own_writer(WriterOf(model::ComputeIndex{0}));
  const auto ignore = [](std::size_t, std::span<const std::byte>) {};
  SnapshotMeta held_with = **with.ReadPickedChanges(SnapshotMeta{}, PickRows({5, 6, 7}), ignore);
  SnapshotMeta held_without = **without.ReadPickedChanges(SnapshotMeta{}, PickRows({5, 6, 7}), ignore);
  const auto refresh = [&](std::int64_t* got_with, std::int64_t* got_without) {
    const std::int64_t a = with_counting.counters().bytes_get, b = without_counting.counters().bytes_get;
    held_with = **with.ReadPickedChanges(held_with, PickRows({5, 6, 7}), ignore);
    held_without = **without.ReadPickedChanges(held_without, PickRows({5, 6, 7}), ignore);
    *got_with = with_counting.counters().bytes_get - a;
    *got_without = without_counting.counters().bytes_get - b;
  };
  SetRows(f, changed, {5, 6}, 2);  // several writers (or a merge that is not a sum)
  t.publisher.Publish(f.merger().master(), f.poller(), changed);
  changed.Clear();
  std::int64_t got_with = 0, got_without = 0;
  refresh(&got_with, &got_without);
  EXPECT_EQ(got_with, got_without) << "writers read though no record names one";
  SetRows(f, changed, {5}, 3, WriterOf(model::ComputeIndex{2}));  // another rank alone
  SetRows(f, changed, {7}, 3);
  t.publisher.Publish(f.merger().master(), f.poller(), changed);
  changed.Clear();
  refresh(&got_with, &got_without);
  EXPECT_EQ(got_with, got_without + 2 * static_cast<std::int64_t>(PublishedGeometry::kWriterBytes))
      << "the two records' writers";
}

}  // namespace
}  // namespace stalelearn::sync
