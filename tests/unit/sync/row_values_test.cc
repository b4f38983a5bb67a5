// Batches of row values (kRowValues): a compute rank that is the one writer
// of the rows it drains sends their values, and the memory rank writes them
// over the master rows instead of adding (ShardMerger::Merge). Under `sum`
// only; any other policy refuses the batch whole. The replica drains values
// instead of deltas when asked (Replica::DrainDeltasInto), and a value write
// costs a timing model one pass of the bytes, no element update.
#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/metrics/work_counters.h"
#include "framework/model/replica.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/shard_merger.h"

namespace stalelearn::sync {
namespace {

using model::MemoryIndex;
using model::RowId;
using model::TableId;

class RowValues : public ::testing::Test {
 protected:
  model::ModelLayout layout_{{{"factors", model::ElementType::kFloat32, 100, 3},
                              {"counts", model::ElementType::kInt32, 10, 2}},
                             1,
                             model::PartitionScheme::kRange};

  // Rows of `factors` with {v, v + 1, v + 2}; one row of `counts` if `count` >= 0.
  std::vector<std::byte> Batch(std::uint64_t sequence, const std::vector<std::int64_t>& rows, float v,
                               std::uint32_t flags, std::int32_t count = -1) {
    BatchEncoder encoder(layout_.tables());
    for (const std::int64_t r : rows) {
      const float row[3] = {v, v + 1, v + 2};
      encoder.Add(TableId{0}, RowId{r}, std::as_bytes(std::span(row)));
    }
    if (count >= 0) {
      const std::int32_t row[2] = {count, count};
      encoder.Add(TableId{1}, RowId{4}, std::as_bytes(std::span(row)));
    }
    return encoder.Seal(sequence, /*clock=*/7, kEndOfClock | flags);
  }
  Result<metrics::WorkCounters> Merge(ShardMerger& merger, const std::vector<std::byte>& bytes,
                                      std::uint64_t sequence) {
    Result<DecodedBatch> batch = DecodeBatch(bytes, sequence, layout_, MemoryIndex{0});
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    return merger.Merge(*batch);
  }
};

TEST_F(RowValues, AreWrittenOverTheMasterRowsWhereDeltasAreAdded) {
  ShardMerger merger(layout_, MemoryIndex{0}, 1);
  ASSERT_TRUE(Merge(merger, Batch(1, {2, 5}, 10.0f, 0, 3), 1).ok());
  ASSERT_TRUE(Merge(merger, Batch(2, {5, 9}, 1.5f, kRowValues, 8), 2).ok());
  ASSERT_TRUE(Merge(merger, Batch(3, {9}, 1.0f, 0), 3).ok());
  const model::RowBlock& factors = merger.master()[0];
  EXPECT_EQ(factors.FloatRow(2)[0], 10.0f) << "a row the values batch does not name keeps its sum";
  EXPECT_EQ(factors.FloatRow(5)[0], 1.5f) << "the value replaces 10 + 0, it is not added to it";
  EXPECT_EQ(factors.FloatRow(5)[2], 3.5f);
  EXPECT_EQ(factors.FloatRow(9)[1], 2.5f + 2.0f) << "a later delta adds onto the written value";
  EXPECT_EQ(merger.master()[1].IntRow(4)[1], 8) << "int rows are written too";
}

TEST_F(RowValues, CostOnePassOfTheirBytesAndNoElementUpdate) {
  ShardMerger merger(layout_, MemoryIndex{0}, 1);
  Result<metrics::WorkCounters> added = Merge(merger, Batch(1, {1, 2, 3}, 1.0f, 0), 1);
  Result<metrics::WorkCounters> written = Merge(merger, Batch(2, {1, 2, 3}, 1.0f, kRowValues), 2);
  ASSERT_TRUE(added.ok() && written.ok());
  EXPECT_EQ(written->flops, 0.0);
  EXPECT_EQ(written->bytes, 3.0 * static_cast<double>(layout_.tables()[0].row_bytes()));
  const transport::MergeWork add_work = metrics::ToMergeWork(*added);
  const transport::MergeWork write_work = metrics::ToMergeWork(*written);
  EXPECT_EQ(add_work.ops, 9u) << "a sum updates every element";
  EXPECT_EQ(write_work.ops, 0u);
  EXPECT_EQ(write_work.bytes, 3u * layout_.tables()[0].row_bytes());
}

TEST_F(RowValues, AreRefusedWholeUnderAPolicyOtherThanSum) {
  MergePolicySpec average;
  average.name = "average";
  MergePolicySpec sum;
  ShardMerger merger(layout_, MemoryIndex{0}, 1,
                     ValueOrThrow(CreateMergePolicies({average, sum}, layout_, MemoryIndex{0})));
  const Status status = Merge(merger, Batch(1, {3}, 4.0f, kRowValues, 2), 1).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "a batch of row values names table 'factors', merged by 'average': values are written only where the "
            "merge is sum");
  EXPECT_EQ(merger.master()[1].IntRow(4)[0], 0) << "nothing of a refused batch is applied";
  EXPECT_FALSE(merger.diverged());
}

TEST_F(RowValues, ANonFiniteValueDivergesTheRun) {
  ShardMerger merger(layout_, MemoryIndex{0}, 1);
  const Status status = Merge(merger, Batch(1, {6}, std::nanf(""), kRowValues), 1).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "diverged: table 'factors' row 6 element 0: written value nan in the batch of clock 7 (memory rank 0)");
  EXPECT_TRUE(merger.diverged());
}

// The writer DrainDeltasInto fills: each changed row's bytes, as floats.
struct CollectingWriter {
  std::vector<std::int64_t> rows;
  std::vector<std::vector<float>> bytes;
  std::vector<std::byte> room = std::vector<std::byte>(64);
  std::int64_t open = -1;
  std::byte* BeginRow(TableId, RowId row) {
    open = row.value;
    return room.data();
  }
  void EndRow(bool changed) {
    if (!changed) return;
    rows.push_back(open);
    const float* f = reinterpret_cast<const float*>(room.data());
    bytes.emplace_back(f, f + 3);
  }
};

TEST_F(RowValues, TheReplicaDrainsValuesOrDeltasOfTheRowsThatChanged) {
  for (const bool values : {false, true}) {
    model::Replica replica(layout_.tables(), model::WorkingSet{std::vector<std::int64_t>{3, 4, 8}, std::nullopt});
    auto set = [&](std::int64_t row, float v) {  // a touch, as a kernel's
      for (float& x : replica.FloatRow(TableId{0}, RowId{row})) x = v;
    };
    set(3, 2.0f);
    set(4, 5.0f);
    CollectingWriter first;
    replica.DrainDeltasInto(first);  // the values so far are the base
    set(3, 2.5f);
    set(4, 5.0f);  // touched, unchanged: not sent
    CollectingWriter writer;
    replica.DrainDeltasInto(writer, {}, values);
    ASSERT_EQ(writer.rows, std::vector<std::int64_t>{3}) << "values " << values;
    EXPECT_EQ(writer.bytes[0][0], values ? 2.5f : 0.5f) << "values " << values;
  }
}

}  // namespace
}  // namespace stalelearn::sync
