// The batch wire format: round trip, and every kind of bad batch is refused
// with a reason (I3, I7).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/shard_merger.h"
#include "framework/sync/staleness_gate.h"

namespace stalelearn::sync {
namespace {

using model::MemoryIndex;

class BatchCodecTest : public ::testing::Test {
 protected:
  // Rows 0..4 on shard 0, 5..9 on shard 1.
  model::ModelLayout layout_{{{"w", model::ElementType::kFloat32, 10, 3}}, 2, model::PartitionScheme::kRange};

  std::vector<std::byte> Encode(std::vector<std::int64_t> rows, std::uint64_t sequence = 7) {
    BatchEncoder encoder(layout_.tables());
    for (std::int64_t r : rows) {
      const float delta[3] = {static_cast<float>(r), 1.0f, -1.0f};
      encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
    }
    return encoder.Seal(sequence, /*clock=*/3, kEndOfClock);
  }
};

TEST_F(BatchCodecTest, RoundTripKeepsHeaderAndEntries) {
  const std::vector<std::byte> bytes = Encode({1, 4, 2});
  Result<DecodedBatch> batch = DecodeBatch(bytes, 7, layout_, MemoryIndex{0});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->header.sequence, 7u);
  EXPECT_EQ(batch->header.clock, 3u);
  EXPECT_EQ(batch->header.flags, kEndOfClock);
  ASSERT_EQ(batch->entries.size(), 3u);
  EXPECT_EQ(batch->entries[1].row, model::RowId{4});
  EXPECT_EQ(batch->entries[1].local_row, 4);
  float delta[3];
  std::memcpy(delta, batch->entries[1].delta, sizeof delta);
  EXPECT_EQ(delta[0], 4.0f);
  EXPECT_EQ(delta[2], -1.0f);
}

TEST_F(BatchCodecTest, EmptyBatchIsValid) {
  const std::vector<std::byte> bytes = Encode({});
  Result<DecodedBatch> batch = DecodeBatch(bytes, 7, layout_, MemoryIndex{1});
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE(batch->entries.empty());
}

TEST_F(BatchCodecTest, WrongSequenceIsDataLoss) {
  const std::vector<std::byte> bytes = Encode({1});
  EXPECT_EQ(DecodeBatch(bytes, 8, layout_, MemoryIndex{0}).status().code(), StatusCode::kDataLoss);
}

TEST_F(BatchCodecTest, AnyFlippedPayloadByteIsDataLoss) {
  const std::vector<std::byte> good = Encode({0, 3});
  for (std::size_t i = sizeof(BatchHeader); i < good.size(); ++i) {
    std::vector<std::byte> bad = good;
    bad[i] ^= std::byte{0x10};
    EXPECT_EQ(DecodeBatch(bad, 7, layout_, MemoryIndex{0}).status().code(), StatusCode::kDataLoss) << "byte " << i;
  }
}

TEST_F(BatchCodecTest, FlippedHeaderByteIsDataLoss) {
  const std::vector<std::byte> good = Encode({0});
  for (std::size_t i = 0; i < sizeof(BatchHeader); ++i) {  // every header byte, the stamp included
    std::vector<std::byte> bad = good;
    bad[i] ^= std::byte{0x01};
    EXPECT_FALSE(DecodeBatch(bad, 7, layout_, MemoryIndex{0}).ok()) << "byte " << i;
  }
}

TEST_F(BatchCodecTest, StampedBatchDecodesWithItsVisibleTime) {
  std::vector<std::byte> bytes = Encode({0, 3});
  StampVisibleAt(bytes, 123456789);
  Result<DecodedBatch> decoded = DecodeBatch(bytes, 7, layout_, MemoryIndex{0});
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header.visible_at_ps, 123456789);
  EXPECT_EQ(decoded->entries.size(), 2u);
}

TEST_F(BatchCodecTest, TruncatedBatchIsDataLoss) {
  std::vector<std::byte> bytes = Encode({0, 1});
  bytes.resize(bytes.size() - 4);
  EXPECT_EQ(DecodeBatch(bytes, 7, layout_, MemoryIndex{0}).status().code(), StatusCode::kDataLoss);
}

TEST_F(BatchCodecTest, RowOfAnotherShardIsOutOfRangeAndNamed) {
  const std::vector<std::byte> bytes = Encode({2, 6});
  const Status status = DecodeBatch(bytes, 7, layout_, MemoryIndex{0}).status();
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_NE(status.message().find("row 6"), std::string::npos) << status.message();
}

TEST_F(BatchCodecTest, MergerRejectsARowNamedTwiceAndAppliesNothing) {
  ShardMerger merger(layout_, MemoryIndex{0}, 2);
  const std::vector<std::byte> bytes = Encode({1, 2, 1});
  Result<DecodedBatch> batch = DecodeBatch(bytes, 7, layout_, MemoryIndex{0});
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(merger.Merge(*batch).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(merger.master()[0].FloatRow(2)[1], 0.0f);
  // The same rows in separate batches are fine.
  const std::vector<std::byte> ok = Encode({1, 2});
  Result<DecodedBatch> good = DecodeBatch(ok, 7, layout_, MemoryIndex{0});
  ASSERT_TRUE(merger.Merge(*good).ok());
  ASSERT_TRUE(merger.Merge(*good).ok());
  EXPECT_EQ(merger.master()[0].FloatRow(2)[1], 2.0f);
}

TEST_F(BatchCodecTest, RecycledBufferIsReusedAndEncodesTheSameBytes) {
  BatchEncoder encoder(layout_.tables());
  const float delta[3] = {1.0f, 2.0f, 3.0f};
  for (std::int64_t r : {0, 1, 2, 3}) encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(delta)));
  std::vector<std::byte> first = encoder.Seal(7, 3, kEndOfClock);
  const std::byte* memory = first.data();
  encoder.Recycle(std::move(first));
  for (std::int64_t r : {1, 4, 2}) {
    const float d[3] = {static_cast<float>(r), 1.0f, -1.0f};
    encoder.Add(model::TableId{0}, model::RowId{r}, std::as_bytes(std::span(d)));
  }
  const std::vector<std::byte> second = encoder.Seal(7, 3, kEndOfClock);
  EXPECT_EQ(second.data(), memory);  // no allocation for the second batch
  EXPECT_EQ(second, Encode({1, 4, 2}));
}

TEST_F(BatchCodecTest, DecodingWithAnAlreadyDecodedHeaderChecksThePayload) {
  std::vector<std::byte> bytes = Encode({1, 4, 2});
  const BatchHeader header = *DecodeHeader(bytes);
  EXPECT_TRUE(DecodeBatch(header, bytes, 7, layout_, MemoryIndex{0}).ok());
  bytes[sizeof(BatchHeader) + 20] ^= std::byte{1};
  EXPECT_EQ(DecodeBatch(header, bytes, 7, layout_, MemoryIndex{0}).status().code(), StatusCode::kDataLoss);
}

// An entry's key is 8 bytes: the table in 16 bits, the row in 48. The
// payload is exactly entries x (8 + row bytes), the highest row a table can
// have round-trips, and a table too large for the key is a one-line error.
TEST_F(BatchCodecTest, EntryKeysAreEightBytesAndHoldRowsUpTo2To48) {
  const std::vector<std::byte> batch = Encode({0, 3, 4});
  EXPECT_EQ(batch.size(), sizeof(BatchHeader) + 3 * (8 + 3 * sizeof(float)));
  const std::int64_t last = std::int64_t{1} << 48;  // rows 0 .. 2^48 - 1
  const std::vector<model::TableSpec> huge = {{"a", model::ElementType::kInt32, 2, 1},
                                              {"b", model::ElementType::kInt32, last, 1}};
  const std::uint64_t key = EntryKey(model::TableId{1}, model::RowId{last - 1});
  EXPECT_EQ(EntryTable(key).value, 1u);
  EXPECT_EQ(EntryRow(key).value, last - 1);
  BatchEncoder fits(huge);
  std::int32_t one = 1;
  fits.Add(model::TableId{1}, model::RowId{last - 1}, std::as_bytes(std::span(&one, 1)));
  const std::vector<std::byte> sealed = fits.Seal(1, 0, kEndOfClock);
  std::vector<std::pair<std::uint32_t, std::int64_t>> seen;
  ForEachOwnEntry(sealed, huge, [&](model::TableId t, model::RowId r, const std::byte*) { seen.push_back({t.value, r.value}); });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], std::make_pair(1u, last - 1));
  try {
    BatchEncoder too_many({{"c", model::ElementType::kInt32, last + 1, 1}});
    ADD_FAILURE() << "a table of 2^48 + 1 rows was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 2^48"), std::string::npos) << e.what();
  }
}

TEST(StalenessBound, AllowsExactlyWhenClocksUpToTMinusSMinus1AreMerged) {
  const StalenessBound s2 = StalenessBound::Of(2);
  EXPECT_TRUE(s2.Allows(0, 0));
  EXPECT_TRUE(s2.Allows(2, 0));
  EXPECT_FALSE(s2.Allows(3, 0));
  EXPECT_TRUE(s2.Allows(5, 3));
  EXPECT_FALSE(s2.Allows(5, 2));
  const StalenessBound bsp = StalenessBound::Of(0);
  EXPECT_TRUE(bsp.Allows(4, 4));
  EXPECT_FALSE(bsp.Allows(4, 3));
  EXPECT_TRUE(StalenessBound::Unbounded().Allows(1000, 0));
  // No other compute rank: the slowest "merged clock" is the maximum value.
  EXPECT_TRUE(s2.Allows(1000, std::numeric_limits<std::uint64_t>::max()));
  EXPECT_TRUE(bsp.Allows(1000, std::numeric_limits<std::uint64_t>::max()));
}

}  // namespace
}  // namespace stalelearn::sync
