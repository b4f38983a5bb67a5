// Row requests as bitmaps (kRowBitmap, sync/batch_codec.h): keys that do not
// fit a ring slot go as a bitmap over their range, which decodes to the same
// entries; a bitmap is validated as keys are (rows inside the table and the
// shard, the entry count) and a bitmap that names rows past its range, holds
// the wrong number of words, names an unknown table or comes in a batch that
// is no request is corrupt, each with one line.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/model/hash64.h"
#include "framework/sync/batch_codec.h"

namespace stalelearn::sync {
namespace {

using model::MemoryIndex;
using model::RowId;
using model::TableId;

class RowBitmapRequest : public ::testing::Test {
 protected:
  // Rows 0..99 of each table on shard 0, 100..199 on shard 1.
  model::ModelLayout layout_{{{"items", model::ElementType::kFloat32, 200, 3},
                              {"counts", model::ElementType::kInt32, 200, 2}},
                             2,
                             model::PartitionScheme::kRange};

  static std::vector<std::uint64_t> Keys(std::uint32_t table, std::initializer_list<std::int64_t> rows) {
    std::vector<std::uint64_t> keys;
    for (const std::int64_t row : rows) keys.push_back(EntryKey(TableId{table}, RowId{row}));
    return keys;
  }
  // A slot the keys do not fit: one byte short of header and keys.
  static std::size_t ShortSlot(const std::vector<std::uint64_t>& keys) {
    return sizeof(BatchHeader) + keys.size() * kEntryPrefixBytes - 1;
  }
  Status Decode(const std::vector<std::byte>& bytes) {
    return DecodeBatch(bytes, 1, layout_, MemoryIndex{0}).status();
  }
  // `request` with `payload`, `flags` and `entries`, sealed again.
  static std::vector<std::byte> Sealed(const std::vector<std::byte>& request, const std::vector<std::byte>& payload,
                                       std::uint32_t flags, std::uint32_t entries) {
    std::vector<std::byte> bytes(request.begin(), request.begin() + sizeof(BatchHeader));
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    BatchHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    h.flags = flags;
    h.entry_count = entries;
    h.payload_bytes = payload.size();
    h.payload_checksum = model::Hash64(std::span<const std::byte>(payload));
    std::memcpy(bytes.data(), &h, sizeof h);
    StampVisibleAt(bytes, 0);  // seals the header again
    return bytes;
  }
  // `request` with a bitmap payload of `range` and `words`.
  static std::vector<std::byte> Edited(const std::vector<std::byte>& request, const RowBitmap& range,
                                       const std::vector<std::uint64_t>& words, std::uint32_t flags,
                                       std::uint32_t entries) {
    std::vector<std::byte> payload(sizeof range + words.size() * 8);
    std::memcpy(payload.data(), &range, sizeof range);
    if (!words.empty()) std::memcpy(payload.data() + sizeof range, words.data(), words.size() * 8);
    return Sealed(request, payload, flags, entries);
  }
};

TEST_F(RowBitmapRequest, KeysThatOutgrowASlotGoAsABitmapThatDecodesToTheSameRows) {
  const std::vector<std::uint64_t> keys = Keys(0, {1, 2, 5, 40, 64, 99});
  const std::vector<std::byte> as_keys = EncodeRowRequest(keys, 1, AwaitedClocks{1, 6});
  const std::vector<std::byte> as_bitmap = EncodeRowRequest(keys, 1, AwaitedClocks{1, 6}, ShortSlot(keys));
  // Rows 1..99: 99 bits in 2 words, after the 24-byte range.
  EXPECT_EQ(as_bitmap.size(), sizeof(BatchHeader) + sizeof(RowBitmap) + 2 * 8);
  EXPECT_EQ(EncodedRowRequestBytes(keys, ShortSlot(keys)), as_bitmap.size());
  EXPECT_EQ(EncodedRowRequestBytes(keys), as_keys.size()) << "keys where they fit";
  const DecodedBatch from_keys = ValueOrThrow(DecodeBatch(as_keys, 1, layout_, MemoryIndex{0}));
  const DecodedBatch from_bitmap = ValueOrThrow(DecodeBatch(as_bitmap, 1, layout_, MemoryIndex{0}));
  EXPECT_EQ(from_keys.header.flags & kRowBitmap, 0u);
  EXPECT_NE(from_bitmap.header.flags & kRowBitmap, 0u);
  EXPECT_EQ(AwaitedBy(from_bitmap.header), (AwaitedClocks{1, 6}));
  ASSERT_EQ(from_bitmap.entries.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(from_bitmap.entries[i].table.value, from_keys.entries[i].table.value) << i;
    EXPECT_EQ(from_bitmap.entries[i].row.value, from_keys.entries[i].row.value) << i;
    EXPECT_EQ(from_bitmap.entries[i].local_row, from_keys.entries[i].local_row) << i;
    EXPECT_EQ(from_bitmap.entries[i].delta, nullptr);
  }
  EXPECT_TRUE(from_bitmap.increasing);
  // Keys of two tables have no one range: they go as keys, whatever the slot.
  const std::vector<std::uint64_t> two = {EntryKey(TableId{0}, RowId{3}), EntryKey(TableId{1}, RowId{4})};
  EXPECT_EQ(EncodeRowRequest(two, 1, std::nullopt, ShortSlot(two)).size(), sizeof(BatchHeader) + 16);
  // A bitmap larger than the keys (two rows far apart) is not taken either.
  const std::vector<std::uint64_t> far = Keys(0, {0, 199});
  EXPECT_EQ(EncodedRowRequestBytes(far, ShortSlot(far)), sizeof(BatchHeader) + 16);
}

TEST_F(RowBitmapRequest, ABitmapIsValidatedAsKeysAre) {
  const std::vector<std::uint64_t> theirs = Keys(0, {90, 150, 151});
  const std::vector<std::uint64_t> keys = Keys(0, {1, 2, 5, 40, 64});
  const std::vector<std::byte> good = EncodeRowRequest(keys, 1, std::nullopt, ShortSlot(keys));
  ASSERT_TRUE(Decode(good).ok()) << Decode(good).ToString();
  const std::uint32_t flags = kRowRequest | kRowBitmap;
  const RowBitmap range{0, 0, 1, 64};
  const std::vector<std::uint64_t> words = {(1ull << 0) | (1ull << 1) | (1ull << 4) | (1ull << 39) | (1ull << 63)};
  ASSERT_TRUE(Decode(Edited(good, range, words, flags, 5)).ok()) << "the same request, sealed again";
  struct Refused {
    std::vector<std::byte> request;
    StatusCode code;
    std::string message;
  };
  const std::vector<Refused> refused = {
      {EncodeRowRequest(theirs, 1, std::nullopt, ShortSlot(theirs)), StatusCode::kOutOfRange,
       "batch row 150 of table 'items' belongs to memory rank 1, not 0"},
      {Edited(good, RowBitmap{0, 0, 150, 64}, words, flags, 5), StatusCode::kOutOfRange,
       "row bitmap of rows [150, +64) outside table 'items' (200 rows)"},
      {Edited(good, RowBitmap{0, 0, 1, 63}, words, flags, 5), StatusCode::kDataLoss,
       "row bitmap names rows past its range"},
      {Edited(good, RowBitmap{0, 0, 1, 65}, words, flags, 5), StatusCode::kDataLoss,
       "row bitmap of 8 bytes for 65 rows"},
      {Edited(good, RowBitmap{7, 0, 1, 64}, words, flags, 5), StatusCode::kDataLoss, "row bitmap names table 7 of 2"},
      {Edited(good, RowBitmap{0, 1, 1, 64}, words, flags, 5), StatusCode::kDataLoss,
       "row bitmap's reserved word is not zero"},
      {Edited(good, range, words, flags, 4), StatusCode::kDataLoss, "batch holds 5 entries, header says 4"},
      {Edited(good, range, words, kRowBitmap, 5), StatusCode::kDataLoss,
       "a row bitmap in a batch that is no row request"},
      {Sealed(good, std::vector<std::byte>(8), flags, 0), StatusCode::kDataLoss, "row bitmap shorter than its range"},
  };
  for (const Refused& r : refused) {
    const Status status = Decode(r.request);
    EXPECT_EQ(status.code(), r.code) << r.message;
    EXPECT_EQ(status.message(), r.message);
  }
}

}  // namespace
}  // namespace stalelearn::sync
