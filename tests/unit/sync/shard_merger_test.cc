// Divergence in the merge: a NaN or infinity a merge writes into a row (sum),
// or finds in a delta a policy holds (average: refused before anything is
// applied), or an overflow, is reported with
// one line naming table, row, element, clock and memory rank; the merger
// stays diverged. Large batches (merged in parallel) report the first bad
// row of the batch, as small ones do.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/shard_merger.h"

namespace stalelearn::sync {
namespace {

using model::MemoryIndex;

class ShardMergerDivergence : public ::testing::Test {
 protected:
  // Rows 0..4999 on shard 0, 5000..9999 on shard 1.
  model::ModelLayout layout_{{{"factors", model::ElementType::kFloat32, 10000, 3},
                              {"counts", model::ElementType::kInt32, 10, 2}},
                             2,
                             model::PartitionScheme::kRange};

  // Rows `rows` of table 0 with delta {1, 1, 1}, except `bad_row` whose
  // element 2 is `bad_value`; clock 41.
  std::vector<std::byte> Encode(const std::vector<std::int64_t>& rows, std::int64_t bad_row, float bad_value) {
    BatchEncoder encoder(layout_.tables());
    for (std::int64_t r : rows) {
      float delta[3] = {1.0f, 1.0f, 1.0f};
      if (r == bad_row) delta[2] = bad_value;
      encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
    }
    return encoder.Seal(1, /*clock=*/41, kEndOfClock);
  }

  DecodedBatch Decode(const std::vector<std::byte>& bytes, MemoryIndex shard = MemoryIndex{0}) {
    Result<DecodedBatch> batch = DecodeBatch(bytes, 1, layout_, shard);
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    return *batch;
  }
};

TEST_F(ShardMergerDivergence, NanDeltaNamesTableRowElementClockAndRank) {
  ShardMerger merger(layout_, MemoryIndex{1}, 1);
  const std::vector<std::byte> bytes = Encode({5003, 5007, 5001}, 5007, std::nanf(""));
  const Status status = merger.Merge(Decode(bytes, MemoryIndex{1})).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "diverged: table 'factors' row 5007 element 2: merged value nan in the batch of clock 41 (memory rank 1)");
  EXPECT_TRUE(merger.diverged());
}

TEST_F(ShardMergerDivergence, PolicyThatHoldsDeltasRefusesANanDeltaBeforeApplyingAnything) {
  // average holds deltas until the window ends: the delta itself is checked.
  MergePolicySpec average;
  average.name = "average";
  MergePolicySpec sum;
  ShardMerger merger(layout_, MemoryIndex{0}, 1,
                     ValueOrThrow(CreateMergePolicies({average, sum}, layout_, MemoryIndex{0})));
  const std::vector<std::byte> bytes = Encode({3, 7, 1}, 7, std::nanf(""));
  const Status status = merger.Merge(Decode(bytes)).status();
  EXPECT_EQ(status.message(),
            "diverged: table 'factors' row 7 element 2: delta nan in the batch of clock 41 (memory rank 0)");
  EXPECT_TRUE(merger.diverged());
  merger.BeginWindow();
  merger.EndWindow();
  EXPECT_EQ(merger.master()[0].FloatRow(3)[0], 0.0f) << "nothing of a diverged batch is applied";
}

TEST_F(ShardMergerDivergence, OverflowIntoInfinityIsReportedAfterTheMerge) {
  ShardMerger merger(layout_, MemoryIndex{0}, 1);
  merger.mutable_master()[0].FloatRow(12)[2] = std::numeric_limits<float>::max();
  const std::vector<std::byte> bytes = Encode({11, 12}, 12, std::numeric_limits<float>::max());
  const Status status = merger.Merge(Decode(bytes)).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "diverged: table 'factors' row 12 element 2: merged value inf in the batch of clock 41 (memory rank 0)");
}

TEST_F(ShardMergerDivergence, FiniteBatchesMergeAndStayHealthy) {
  ShardMerger merger(layout_, MemoryIndex{0}, 2);
  const std::vector<std::byte> bytes = Encode({1, 2, 3}, -1, 0.0f);
  ASSERT_TRUE(merger.Merge(Decode(bytes)).ok());
  EXPECT_FALSE(merger.diverged());
  EXPECT_EQ(merger.master()[0].FloatRow(2)[2], 1.0f);
}

TEST_F(ShardMergerDivergence, LargeParallelBatchReportsItsFirstBadRow) {
  ShardMerger merger(layout_, MemoryIndex{0}, 4);
  std::vector<std::int64_t> rows;
  for (std::int64_t r = 0; r < 5000; ++r) rows.push_back(r);
  // Two bad rows; the one earlier in the batch is named, whatever the threads do.
  BatchEncoder encoder(layout_.tables());
  for (std::int64_t r : rows) {
    float delta[3] = {1.0f, 1.0f, 1.0f};
    if (r == 4100) delta[0] = std::numeric_limits<float>::infinity();
    if (r == 3000) delta[1] = -std::numeric_limits<float>::infinity();
    encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
  }
  const std::vector<std::byte> bytes = encoder.Seal(1, 41, kEndOfClock);
  const Status status = merger.Merge(Decode(bytes)).status();
  EXPECT_EQ(status.message(),
            "diverged: table 'factors' row 3000 element 1: merged value -inf in the batch of clock 41 (memory rank 0)");
}

// Row order: our encoders send rows in increasing order, which DecodeBatch
// marks and the merger takes as proof the rows are distinct. Any other order
// is legal too and gets the bitmap check, which still refuses a repeated row.
TEST_F(ShardMergerDivergence, DecodeMarksIncreasingRowsOnly) {
  EXPECT_TRUE(Decode(Encode({1, 2, 40}, -1, 0.0f)).increasing);
  EXPECT_FALSE(Decode(Encode({40, 2, 1}, -1, 0.0f)).increasing);
  EXPECT_FALSE(Decode(Encode({2, 2}, -1, 0.0f)).increasing) << "a repeated row is not increasing";
  EXPECT_TRUE(Decode(Encode({}, -1, 0.0f)).increasing);
}

TEST_F(ShardMergerDivergence, RowsInAnyOrderMergeAndARepeatedRowIsRefusedWhole) {
  ShardMerger merger(layout_, MemoryIndex{0}, 1);
  ASSERT_TRUE(merger.Merge(Decode(Encode({40, 2, 7}, -1, 0.0f))).ok());
  for (const std::int64_t r : {2, 7, 40}) EXPECT_EQ(merger.master()[0].FloatRow(r)[0], 1.0f) << "row " << r;
  for (const std::vector<std::int64_t>& rows : {std::vector<std::int64_t>{9, 3, 9}, std::vector<std::int64_t>{3, 3}}) {
    const Status status = merger.Merge(Decode(Encode(rows, -1, 0.0f))).status();
    EXPECT_EQ(status.code(), StatusCode::kDataLoss);
    EXPECT_NE(status.message().find("names row"), std::string::npos) << status.message();
  }
  EXPECT_EQ(merger.master()[0].FloatRow(3)[0], 0.0f) << "nothing of a refused batch is applied";
  EXPECT_EQ(merger.master()[0].FloatRow(9)[0], 0.0f);
}

// A row request names rows and carries no deltas: the poller answers it, and
// a merge that took one would read deltas that are not there.
TEST_F(ShardMergerDivergence, ARowRequestIsRefusedAndNothingIsMerged) {
  ShardMerger merger(layout_, MemoryIndex{0}, 1);
  const std::uint64_t keys[] = {EntryKey(model::TableId{0}, model::RowId{2}), EntryKey(model::TableId{0}, model::RowId{7})};
  const DecodedBatch request = Decode(EncodeRowRequest(keys, 1));
  ASSERT_EQ(request.entries.size(), 2u);
  const Status status = merger.Merge(request).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_EQ(merger.master()[0].FloatRow(2)[0], 0.0f);
  EXPECT_FALSE(merger.diverged());
}

}  // namespace
}  // namespace stalelearn::sync
