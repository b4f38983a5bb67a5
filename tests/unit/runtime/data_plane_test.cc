// The data plane at scale: partial replicas hold only their working set
// (memory follows data, not the model), and ring slots are sized so that a
// memory rank's ring memory stays bounded as compute ranks grow.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <numeric>
#include <set>

#include "framework/core/error.h"
#include "framework/model/replica.h"
#include "framework/runtime/data_plane.h"
#include "framework/runtime/working_set.h"
#include "framework/sync/row_gather.h"

namespace stalelearn::runtime {
namespace {

using model::ElementType;

const std::vector<TableSpec> kTables = {{"rows", ElementType::kFloat32, 1000, 4},
                                        {"dense", ElementType::kFloat32, 10, 2, /*dense=*/true}};

// Sample s touches row 3s of table "rows".
class EveryThirdRowApp final : public App {
 public:
  std::string name() const override { return "third"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return kTables; }
  std::int64_t TrainingSamples() const override { return 300; }
  void RowsOf(std::int64_t s, std::vector<RowRef>& rows) const override {
    rows.push_back({TableId{0}, RowId{3 * s}});
  }
  // Never trained (layout tests): an empty kernel.
  void UpdateBatch(std::span<const std::int64_t>, ModelView&, KernelContext&) const override {}
};

TEST(PartialReplica, HoldsOnlyTheRowsItsSamplesTouch) {
  const EveryThirdRowApp app;
  const std::vector<std::int64_t> samples = {2, 1, 300 / 2};
  const model::WorkingSet set = FindWorkingSet(app, samples, /*full_replicas=*/false);
  ASSERT_TRUE(set.at(0).has_value());
  EXPECT_EQ(*set[0], (std::vector<std::int64_t>{3, 6, 450}));
  EXPECT_FALSE(set.at(1).has_value()) << "dense tables are held whole";

  model::Replica replica(kTables, set);
  EXPECT_EQ(replica.value_bytes(), 3u * 16 + 10u * 8) << "replica bytes follow the working set, not the model";
  EXPECT_EQ(model::Replica(kTables).value_bytes(), 1000u * 16 + 10u * 8);
  EXPECT_EQ(replica.SlotOf(TableId{0}, RowId{450}), 2);
  EXPECT_EQ(replica.SlotOf(TableId{0}, RowId{5}), -1);

  replica.FloatRow(TableId{0}, RowId{6})[1] = 2.5f;
  std::vector<std::pair<std::uint32_t, std::int64_t>> drained;
  replica.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte>) { drained.emplace_back(t.value, r.value); });
  EXPECT_EQ(drained, (std::vector<std::pair<std::uint32_t, std::int64_t>>{{0, 6}})) << "deltas name global rows";
  try {
    replica.FloatRow(TableId{0}, RowId{5});
    ADD_FAILURE() << "a row outside the working set was served";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("working set"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(FindWorkingSet(app, samples, /*full_replicas=*/true).at(0).has_value());
}

// Sample s touches a scattered row of a 100,000-row table (a multiplicative hash).
class ScatteredRowApp final : public App {
 public:
  static constexpr std::int64_t kRows = 100000;
  std::string name() const override { return "scattered"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<TableSpec> Tables() const override { return {{"rows", ElementType::kFloat32, kRows, 1}}; }
  std::int64_t TrainingSamples() const override { return 50000; }
  void RowsOf(std::int64_t s, std::vector<RowRef>& rows) const override {
    rows.push_back({TableId{0}, RowId{static_cast<std::int64_t>((static_cast<std::uint64_t>(s) * 2654435761u) % kRows)}});
  }
  void UpdateBatch(std::span<const std::int64_t>, ModelView&, KernelContext&) const override {}
};

TEST(PartialReplica, WorkingSetFoundOnManyCoresIsEveryRowAnySampleNames) {
  // Each core marks the rows of its own part of the samples; a part's marks
  // left out of the result would drop rows only that part names.
  const ScatteredRowApp app;
  std::vector<std::int64_t> samples(static_cast<std::size_t>(app.TrainingSamples()));
  std::iota(samples.begin(), samples.end(), 0);
  std::set<std::int64_t> expected;
  std::vector<RowRef> rows;
  for (const std::int64_t s : samples) {
    rows.clear();
    app.RowsOf(s, rows);
    expected.insert(rows[0].row.value);
  }
  for (const int cores : {1, 3, 4}) {
    tbb::task_arena arena(cores);
    model::WorkingSet set;
    arena.execute([&] { set = FindWorkingSet(app, samples, /*full_replicas=*/false); });
    ASSERT_TRUE(set.at(0).has_value());
    EXPECT_EQ(*set[0], std::vector<std::int64_t>(expected.begin(), expected.end())) << cores << " cores";
  }
}

TEST(RingSlots, RingMemoryPerMemoryRankStaysBoundedAsComputeRanksGrow) {
  const model::ModelLayout layout({{"rows", ElementType::kFloat32, 1'000'000, 20}}, 4, model::PartitionScheme::kRange);
  for (int compute : {1, 10, 100, 200}) {
    const DataPlaneGeometry g = ValueOrThrow(MakeDataPlaneGeometry(layout, compute, 8, 1 << 20));
    const std::size_t per_memory_rank = g.ring.region_bytes() * static_cast<std::size_t>(compute);
    EXPECT_LE(per_memory_rank, kDefaultRingBytes + static_cast<std::size_t>(compute) * 4096) << compute << " compute ranks";
    EXPECT_LE(g.ring.slot_bytes, std::size_t{1} << 20);
    EXPECT_GE(g.ring.slot_bytes, 64u + 16 + 80) << "a slot holds at least one row's delta";
  }
  // A small model: slots no larger than a clock can send (every row of a shard).
  const model::ModelLayout small({{"rows", ElementType::kInt32, 16, 2}}, 1, model::PartitionScheme::kRange);
  EXPECT_EQ(ValueOrThrow(MakeDataPlaneGeometry(small, 3, 8, 4 << 20)).ring.slot_bytes, 4096u);
}

// A rank gathers at most half a stripe's rows, all on one memory rank at
// worst: a reply area holds half the widest stripe of any table and the
// header, at any count of stripes, and no more than a whole shard.
TEST(RingSlots, AStripesReplyAreaHoldsHalfTheWidestStripe) {
  const model::ModelLayout layout({{"items", ElementType::kFloat32, 1000, 3}, {"users", ElementType::kFloat32, 99, 20}},
                                  2, model::PartitionScheme::kRange);
  // 8 stripes: items 125 rows -> 63 x 12 B = 756; users 13 rows -> 7 x 80 B = 560.
  EXPECT_EQ(StripeReplyBytes(layout, 8), sizeof(sync::RowReplyHeader) + 756);
  // 64 stripes: items 16 rows -> 8 x 12 = 96; users 2 rows -> 1 x 80 = 80.
  EXPECT_EQ(StripeReplyBytes(layout, 64), sizeof(sync::RowReplyHeader) + 96);
  // Over 4 memory ranks half a single stripe of items (6000 B) is more than
  // a shard (250 items and 25 users, 5000 B).
  const model::ModelLayout four({{"items", ElementType::kFloat32, 1000, 3}, {"users", ElementType::kFloat32, 100, 20}},
                                4, model::PartitionScheme::kRange);
  const DataPlaneGeometry g = ValueOrThrow(MakeDataPlaneGeometry(four, 4, 8, 1 << 20, 0, StripeReplyBytes(four, 1)));
  EXPECT_EQ(four.ShardBytes(model::MemoryIndex{0}), 5000u);
  EXPECT_EQ(g.published[0].reply_bytes, sync::RoundUp(sizeof(sync::RowReplyHeader) + 5000, sync::kCacheLine))
      << "no larger than the whole shard";
}

TEST(RingSlots, SlotThatCannotHoldOneRowIsAOneLineError) {
  const model::ModelLayout wide({{"wide", ElementType::kFloat32, 10, 2000}}, 1, model::PartitionScheme::kRange);
  const Result<DataPlaneGeometry> g = MakeDataPlaneGeometry(wide, 2, 8, 4096);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("cluster.slot_bytes 4096"), std::string::npos) << g.status().message();
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace stalelearn::runtime
