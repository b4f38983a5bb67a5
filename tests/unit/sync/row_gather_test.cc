// Row requests and replies (sync/row_gather.h): a kRowRequest batch carries
// keys alone and is validated like any batch (rows inside the shard, checksum);
// the memory rank's reply holds the rows from its master in request order,
// with their count and checksum, and a request whose rows would not fit the
// reply area writes nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/model/hash64.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/row_gather.h"

namespace stalelearn::sync {
namespace {

using model::MemoryIndex;
using model::RowId;
using model::TableId;

class RowGather : public ::testing::Test {
 protected:
  // Rows 0..49 of each table on shard 0, 50..99 on shard 1.
  model::ModelLayout layout_{{{"items", model::ElementType::kFloat32, 100, 3},
                              {"counts", model::ElementType::kInt32, 100, 2}},
                             2,
                             model::PartitionScheme::kRange};

  std::vector<std::uint64_t> Keys(std::initializer_list<std::pair<std::uint32_t, std::int64_t>> rows) {
    std::vector<std::uint64_t> keys;
    for (const auto& [table, row] : rows) keys.push_back(EntryKey(TableId{table}, RowId{row}));
    return keys;
  }
};

TEST_F(RowGather, ARequestCarriesKeysAloneAndIsValidatedLikeABatch) {
  const std::vector<std::uint64_t> keys = Keys({{0, 3}, {0, 7}, {1, 49}});
  const std::vector<std::byte> bytes = EncodeRowRequest(keys, /*sequence=*/5, AwaitedClocks{2, 9});
  EXPECT_EQ(bytes.size(), sizeof(BatchHeader) + 3 * kEntryPrefixBytes);
  const Result<DecodedBatch> batch = DecodeBatch(bytes, 5, layout_, MemoryIndex{0});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_NE(batch->header.flags & kRowRequest, 0u);
  EXPECT_EQ(batch->header.flags & kEndOfClock, 0u) << "a request ends no clock";
  EXPECT_EQ(AwaitedBy(batch->header), (AwaitedClocks{2, 9}));
  ASSERT_EQ(batch->entries.size(), 3u);
  EXPECT_EQ(batch->entries[2].table.value, 1u);
  EXPECT_EQ(batch->entries[2].row.value, 49);
  EXPECT_EQ(batch->entries[0].delta, nullptr);
  EXPECT_TRUE(batch->increasing);

  EXPECT_EQ(DecodeBatch(EncodeRowRequest(Keys({{0, 60}}), 1), 1, layout_, MemoryIndex{0}).status().code(),
            StatusCode::kOutOfRange)
      << "a row of the other shard";
  std::vector<std::byte> corrupt = bytes;
  corrupt.back() ^= std::byte{1};
  EXPECT_EQ(DecodeBatch(corrupt, 5, layout_, MemoryIndex{0}).status().code(), StatusCode::kDataLoss);
}

TEST_F(RowGather, AReplyHoldsTheMastersRowsInRequestOrder) {
  model::TableSet master = layout_.MakeShard(MemoryIndex{0});
  for (std::int64_t r = 0; r < 50; ++r) {
    for (int e = 0; e < 3; ++e) master[0].FloatRow(r)[e] = static_cast<float>(10 * r + e);
    master[1].IntRow(r)[1] = static_cast<std::int32_t>(r);
  }
  const std::vector<std::uint64_t> keys = Keys({{0, 4}, {0, 31}, {1, 2}});
  const DecodedBatch request = ValueOrThrow(DecodeBatch(EncodeRowRequest(keys, 7), 7, layout_, MemoryIndex{0}));
  EXPECT_EQ(RowRequestBytes(request, layout_), 2u * 12 + 8);
  std::vector<std::byte> area(sizeof(RowReplyHeader) + 64, std::byte{0});
  ASSERT_TRUE(WriteRowReply(request, master, area, /*published_at_ps=*/1234).ok());
  RowReplyHeader h;
  std::memcpy(&h, area.data(), sizeof h);
  EXPECT_EQ(h.sequence, 7u);
  EXPECT_EQ(h.rows, 3u);
  EXPECT_EQ(h.published_at_ps, 1234);
  const std::span<const std::byte> rows(area.data() + sizeof h, 2 * 12 + 8);
  EXPECT_EQ(h.checksum, model::Hash64(rows));
  float f[3];
  std::memcpy(f, rows.data() + 12, sizeof f);
  EXPECT_EQ(f[0], 310.0f) << "the second row asked for, second";
  EXPECT_EQ(f[2], 312.0f);
  std::int32_t count[2];
  std::memcpy(count, rows.data() + 24, sizeof count);
  EXPECT_EQ(count[1], 2);
}

TEST_F(RowGather, ARequestThatDoesNotFitItsReplyAreaWritesNothing) {
  const model::TableSet master = layout_.MakeShard(MemoryIndex{0});
  const DecodedBatch request =
      ValueOrThrow(DecodeBatch(EncodeRowRequest(Keys({{0, 1}, {0, 2}, {0, 3}}), 2), 2, layout_, MemoryIndex{0}));
  std::vector<std::byte> area(sizeof(RowReplyHeader) + 35, std::byte{0});  // 36 bytes needed
  const Status status = WriteRowReply(request, master, area, 0);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(), "a request for 3 rows (36 bytes) exceeds the reply area (35 bytes)");
  for (const std::byte b : area) ASSERT_EQ(b, std::byte{0});
}

}  // namespace
}  // namespace stalelearn::sync
