// framework/model: partitioning, replica touch tracking and deltas, shard
// layout round trips, hashing.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "framework/core/error.h"
#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/model/replica.h"
#include "framework/model/row_partition.h"
#include "framework/model/shard_layout.h"

namespace stalelearn::model {
namespace {

class PartitionTest : public ::testing::TestWithParam<std::tuple<PartitionScheme, std::int64_t, int>> {};

TEST_P(PartitionTest, EveryRowHasExactlyOneOwnerAndLocalSlot) {
  const auto [scheme, rows, shards] = GetParam();
  RowPartition p(rows, shards, scheme);
  std::int64_t total = 0;
  for (int m = 0; m < shards; ++m) total += p.ShardRows(MemoryIndex{m});
  EXPECT_EQ(total, rows);
  std::set<std::pair<int, std::int64_t>> seen;
  for (std::int64_t r = 0; r < rows; ++r) {
    const MemoryIndex owner = p.Owner(RowId{r});
    const std::int64_t local = p.LocalIndex(RowId{r});
    ASSERT_GE(local, 0);
    ASSERT_LT(local, p.ShardRows(owner)) << "row " << r;
    EXPECT_EQ(p.GlobalRow(owner, local), RowId{r});
    EXPECT_TRUE(seen.insert({owner.value, local}).second) << "two rows share a slot";
  }
}

// ShardsHolding names exactly the owners of the range's rows, for every
// range (checked against Owner row by row).
TEST_P(PartitionTest, ShardsHoldingARangeAreItsRowsOwners) {
  const auto [scheme, rows, shards] = GetParam();
  RowPartition p(rows, shards, scheme);
  for (std::int64_t first = 0; first <= rows; ++first) {
    for (std::int64_t last = first; last <= rows; last += std::max<std::int64_t>(1, rows / 9)) {
      std::vector<std::uint8_t> expected(static_cast<std::size_t>(shards), 0);
      for (std::int64_t r = first; r < last; ++r) expected[static_cast<std::size_t>(p.Owner(RowId{r}).value)] = 1;
      ASSERT_EQ(p.ShardsHolding(first, last), expected) << "rows " << first << ".." << last;
    }
  }
}

// A range's rows on shard m are its local indices ShardRowsBelow(first) ..
// ShardRowsBelow(last) - 1: the count of its rows below each row, and one
// run of the shard (an evaluation part's read: ReplicaRefresher::ReadMergedRows).
TEST_P(PartitionTest, ShardRowsBelowARowCountTheShardsRowsBeforeIt) {
  const auto [scheme, rows, shards] = GetParam();
  RowPartition p(rows, shards, scheme);
  for (int m = 0; m < shards; ++m) {
    const MemoryIndex shard{m};
    std::int64_t below = 0;
    for (std::int64_t r = 0; r <= rows; ++r) {
      ASSERT_EQ(p.ShardRowsBelow(shard, r), below) << "shard " << m << ", row " << r;
      if (r < rows && p.Owner(RowId{r}) == shard) {
        EXPECT_EQ(p.LocalIndex(RowId{r}), below) << "local indices follow global ids";
        ++below;
      }
    }
    EXPECT_EQ(below, p.ShardRows(shard));
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, PartitionTest,
                         ::testing::Combine(::testing::Values(PartitionScheme::kRange, PartitionScheme::kHash),
                                            ::testing::Values<std::int64_t>(1, 7, 100),
                                            ::testing::Values(1, 2, 3, 8)));

std::vector<TableSpec> TwoTables() {
  return {{"f", ElementType::kFloat32, 10, 3}, {"i", ElementType::kInt32, 5, 2}};
}

TEST(Replica, DeltasCoverOnlyChangedTouchedRows) {
  Replica replica(TwoTables());
  replica.mutable_tables()[0].FloatRow(4)[1] = 2.0f;  // initial value, not a delta
  replica.FloatRow(TableId{0}, RowId{4})[1] += 0.5f;
  replica.FloatRow(TableId{0}, RowId{4})[1] += 0.25f;  // second touch keeps the first "before"
  (void)replica.FloatRow(TableId{0}, RowId{7});        // touched, unchanged: no delta
  replica.IntRow(TableId{1}, RowId{2})[0] -= 3;
  EXPECT_EQ(replica.touched_rows(), 3u);

  std::map<std::pair<std::uint32_t, std::int64_t>, std::vector<std::byte>> deltas;
  replica.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte> d) {
    deltas[{t.value, r.value}].assign(d.begin(), d.end());
  });
  ASSERT_EQ(deltas.size(), 2u);
  float f[3];
  std::memcpy(f, deltas[{0, 4}].data(), sizeof f);
  EXPECT_FLOAT_EQ(f[0], 0.0f);
  EXPECT_FLOAT_EQ(f[1], 0.75f);
  std::int32_t i[2];
  std::memcpy(i, deltas[{1, 2}].data(), sizeof i);
  EXPECT_EQ(i[0], -3);
  EXPECT_EQ(i[1], 0);
  EXPECT_EQ(replica.touched_rows(), 0u);

  // After draining, the next clock's delta starts from the new value.
  replica.FloatRow(TableId{0}, RowId{4})[1] += 1.0f;
  int calls = 0;
  replica.DrainDeltas([&](TableId, RowId, std::span<const std::byte> d) {
    std::memcpy(f, d.data(), sizeof f);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_FLOAT_EQ(f[1], 1.0f);
}

// Deltas leave in increasing row order, whatever order the kernel touched the
// rows in: the memory rank's merge then walks its shard forwards and sees the
// rows are distinct without a bitmap. Both ways of finding the order: the
// touched bits (many rows of a small table) and a sort (a few rows of a
// large one).
TEST(Replica, DrainsRowsInIncreasingOrderWhateverTheTouchOrder) {
  for (const std::int64_t rows : {std::int64_t{100}, std::int64_t{1'000'000}}) {
    Replica replica({{"t", ElementType::kFloat32, rows, 2}});
    const std::vector<std::int64_t> touched = {rows - 1, 3, 64, 2, 63, 65, rows / 2};
    for (const std::int64_t r : touched) replica.FloatRow(TableId{0}, RowId{r})[0] += static_cast<float>(r + 1);
    std::vector<std::int64_t> drained;
    std::vector<float> first;
    replica.DrainDeltas([&](TableId, RowId r, std::span<const std::byte> d) {
      drained.push_back(r.value);
      float f;
      std::memcpy(&f, d.data(), sizeof f);
      first.push_back(f);
    });
    std::vector<std::int64_t> expected = touched;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(drained, expected) << rows << " rows";
    for (std::size_t i = 0; i < drained.size(); ++i) {
      EXPECT_EQ(first[i], static_cast<float>(drained[i] + 1)) << "row " << drained[i] << ": its own delta";
    }
    EXPECT_EQ(replica.touched_rows(), 0u);
    // The touched marks are all cleared: the next clock drains only its own rows.
    replica.FloatRow(TableId{0}, RowId{64})[1] = 9.0f;
    drained.clear();
    replica.DrainDeltas([&](TableId, RowId r, std::span<const std::byte>) { drained.push_back(r.value); });
    EXPECT_EQ(drained, (std::vector<std::int64_t>{64})) << rows << " rows";
  }
}

// A partial replica too large for the caches drains through the prefetching
// loop (Replica::kDrainPrefetchBytes) and, with many rows touched, from the
// scan of the touched bits: every touched row once, in increasing order,
// named by its global row, with exactly its own delta.
TEST(Replica, ALargePartialReplicaDrainsEveryTouchedRowOnceInOrder) {
  constexpr std::int64_t kRows = 1'200'000;
  WorkingSet held(1);
  held[0].emplace();
  for (std::int64_t r = 0; r < kRows; r += 3) held[0]->push_back(r);  // 400k rows x 12 bytes: 4.8 MB
  Replica replica({{"t", ElementType::kFloat32, kRows, 3}}, held);
  std::vector<std::int64_t> touched;
  std::uint64_t state = 7;
  for (int i = 0; i < 6000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    touched.push_back(static_cast<std::int64_t>((state >> 33) % (kRows / 3)) * 3);
  }
  std::map<std::int64_t, float> expected;
  for (const std::int64_t r : touched) {  // some rows twice: one delta, the sum
    replica.FloatRow(TableId{0}, RowId{r})[2] += 0.5f;
    expected[r] += 0.5f;
  }
  std::vector<std::int64_t> drained;
  replica.DrainDeltas([&](TableId, RowId r, std::span<const std::byte> d) {
    float f[3];
    std::memcpy(f, d.data(), sizeof f);
    EXPECT_EQ(f[0], 0.0f);
    EXPECT_EQ(f[2], expected.at(r.value)) << "row " << r.value;
    drained.push_back(r.value);
  });
  std::vector<std::int64_t> rows;
  for (const auto& [r, delta] : expected) rows.push_back(r);
  EXPECT_EQ(drained, rows);
  EXPECT_EQ(replica.touched_rows(), 0u);
}

// FloatRows is FloatRow for a block of rows: the same rows, each touched once
// (its first value kept for the delta), and a row outside the working set
// still an error.
TEST(Replica, FloatRowsServesAndTouchesEachRowAsFloatRowDoes) {
  Replica replica(TwoTables(), WorkingSet{std::vector<std::int64_t>{1, 4, 8}, std::nullopt});
  const RowId rows[] = {RowId{8}, RowId{1}, RowId{8}};
  float* out[3] = {};
  replica.FloatRows(TableId{0}, rows, out);
  EXPECT_EQ(out[0], replica.FloatRow(TableId{0}, RowId{8}).data());
  EXPECT_EQ(out[1], replica.FloatRow(TableId{0}, RowId{1}).data());
  EXPECT_EQ(out[0], out[2]) << "a repeated row is the same row";
  EXPECT_EQ(replica.touched_rows(), 2u);
  out[0][0] += 1.0f;
  out[2][0] += 2.0f;
  std::map<std::int64_t, float> deltas;
  replica.DrainDeltas([&](TableId, RowId r, std::span<const std::byte> d) {
    std::memcpy(&deltas[r.value], d.data(), sizeof(float));
  });
  EXPECT_EQ(deltas, (std::map<std::int64_t, float>{{8, 3.0f}})) << "row 1 unchanged; row 8 against its first value";
  const RowId outside[] = {RowId{1}, RowId{5}};
  EXPECT_THROW(replica.FloatRows(TableId{0}, outside, out), Error);
}

// A dense table keeps no touch log: every changed row asked for since the
// last drain is drained (value now minus the copy at the last Rebase or
// drain), and Rebase makes values
// written around the view (an installed snapshot) the new base.
TEST(Replica, DenseTableDrainsItsFullDeltaAndRebaseResetsIt) {
  constexpr std::int64_t kRows = 5;
  Replica replica({{"dense", ElementType::kFloat32, kRows, 2, /*dense=*/true}, {"sparse", ElementType::kInt32, 3, 1}});
  using Key = std::pair<std::uint32_t, std::int64_t>;  // (table, row)
  using Deltas = std::map<Key, std::vector<float>>;
  const auto drain = [&] {
    Deltas deltas;
    replica.DrainDeltas([&](TableId t, RowId r, std::span<const std::byte> d) {
      std::vector<float>& v = deltas[{t.value, r.value}];
      v.resize(d.size() / sizeof(float));
      std::memcpy(v.data(), d.data(), d.size());
    });
    return deltas;
  };

  for (std::int64_t r = 0; r < kRows; ++r) {
    replica.FloatRow(TableId{0}, RowId{r})[0] += static_cast<float>(r + 1);
    replica.FloatRow(TableId{0}, RowId{r})[1] -= 0.5f;
  }
  replica.IntRow(TableId{1}, RowId{1})[0] += 4;
  EXPECT_EQ(replica.touched_rows(), 1u) << "dense rows are not logged";
  Deltas deltas = drain();
  ASSERT_EQ(deltas.size(), static_cast<std::size_t>(kRows) + 1);
  for (std::int64_t r = 0; r < kRows; ++r) {
    EXPECT_EQ(deltas[Key(0, r)], (std::vector<float>{static_cast<float>(r + 1), -0.5f})) << "row " << r;
  }
  EXPECT_EQ(deltas.count(Key(1, 1)), 1u);
  EXPECT_TRUE(drain().empty()) << "a drain makes the current values the base";

  // Only rows asked for since the drain are diffed: a row read through
  // ReadFloatRow is no delta, one asked for with FloatRow(s) is.
  EXPECT_EQ(replica.ReadFloatRow(TableId{0}, RowId{2})[0], 3.0f);
  replica.FloatRow(TableId{0}, RowId{3})[1] = 7.0f;
  float* rows[1];
  const RowId four[] = {RowId{4}};
  replica.FloatRows(TableId{0}, four, rows);
  rows[0][0] += 1.0f;
  deltas = drain();
  ASSERT_EQ(deltas.size(), 2u);
  EXPECT_EQ(deltas[Key(0, 3)], (std::vector<float>{0.0f, 7.5f}));
  EXPECT_EQ(deltas[Key(0, 4)], (std::vector<float>{1.0f, 0.0f}));

  // An installed snapshot is not a delta once rebased...
  for (std::int64_t r = 0; r < kRows; ++r) replica.mutable_tables()[0].FloatRow(r)[0] = 100.0f;
  replica.Rebase();
  EXPECT_TRUE(drain().empty()) << "Rebase must reset the dense base";
  // ...and the next delta is taken against it.
  replica.FloatRow(TableId{0}, RowId{2})[0] += 1.0f;
  deltas = drain();
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[Key(0, 2)], (std::vector<float>{1.0f, 0.0f}));
}

// A refresh installs a few rows of a dense table and rebases only those
// (NoteWritten, RebaseWritten): an installed value is no delta, and the next
// clock's delta of an installed row is taken against the installed value.
TEST(Replica, RebaseWrittenMakesTheNotedRowsTheBase) {
  constexpr std::int64_t kRows = 130;  // three words of bits
  Replica replica({{"dense", ElementType::kFloat32, kRows, 1, /*dense=*/true}});
  const auto drained_rows = [&] {
    std::map<std::int64_t, float> deltas;
    replica.DrainDeltas([&](TableId, RowId r, std::span<const std::byte> d) {
      std::memcpy(&deltas[r.value], d.data(), sizeof(float));
    });
    return deltas;
  };
  for (const std::int64_t r : {0, 64, 129}) {
    replica.mutable_tables()[0].FloatRow(r)[0] = 50.0f;  // installed
    replica.NoteWritten(TableId{0}, r);
  }
  replica.RebaseWritten();
  for (const std::int64_t r : {0, 1, 64, 129}) replica.FloatRow(TableId{0}, RowId{r})[0] += 2.0f;
  const std::map<std::int64_t, float> deltas = drained_rows();
  EXPECT_EQ(deltas, (std::map<std::int64_t, float>{{0, 2.0f}, {1, 2.0f}, {64, 2.0f}, {129, 2.0f}}))
      << "an installed row was not rebased: its install went out as a delta";
  EXPECT_TRUE(drained_rows().empty());
}

TEST(RowBlock, IntegerDeltasWrapExactly) {
  RowBlock block(ElementType::kInt32, 1, 1);
  block.IntRow(0)[0] = 2147483647;
  const std::int32_t one = 1;
  block.AddDelta(0, reinterpret_cast<const std::byte*>(&one));
  EXPECT_EQ(block.IntRow(0)[0], -2147483647 - 1);
  const std::int32_t minus_one = -1;
  block.AddDelta(0, reinterpret_cast<const std::byte*>(&minus_one));
  EXPECT_EQ(block.IntRow(0)[0], 2147483647);
}

TEST(ModelLayout, SerializeThenInstallRestoresEveryShardsRows) {
  for (PartitionScheme scheme : {PartitionScheme::kRange, PartitionScheme::kHash}) {
    const ModelLayout layout(TwoTables(), 3, scheme);
    TableSet original = MakeTableSet(layout.tables());
    for (std::int64_t r = 0; r < 10; ++r) {
      for (int c = 0; c < 3; ++c) original[0].FloatRow(r)[c] = static_cast<float>(r * 10 + c);
    }
    for (std::int64_t r = 0; r < 5; ++r) original[1].IntRow(r)[1] = static_cast<std::int32_t>(r + 100);

    TableSet rebuilt = MakeTableSet(layout.tables());
    for (int m = 0; m < 3; ++m) {
      const MemoryIndex shard{m};
      TableSet rows = layout.MakeShard(shard);
      for (std::size_t t = 0; t < rows.size(); ++t) {
        for (std::int64_t local = 0; local < rows[t].rows(); ++local) {
          const RowId global = layout.partition(TableId{static_cast<std::uint32_t>(t)}).GlobalRow(shard, local);
          std::memcpy(rows[t].RowBytes(local), original[t].RowBytes(global.value), rows[t].row_bytes());
          EXPECT_EQ(layout.RowOffset(TableId{static_cast<std::uint32_t>(t)}, global),
                    layout.TableOffset(shard, TableId{static_cast<std::uint32_t>(t)}) + local * rows[t].row_bytes());
        }
      }
      std::vector<std::byte> bytes(layout.ShardBytes(shard));
      layout.SerializeShard(rows, bytes.data());
      layout.InstallShard(shard, bytes.data(), rebuilt);
    }
    EXPECT_EQ(ModelChecksum(rebuilt), ModelChecksum(original));
    EXPECT_EQ(rebuilt[0].FloatRow(9)[2], 92.0f);
  }
}

TEST(Hash64, DependsOnEveryByteAndLength) {
  std::vector<std::byte> a(37, std::byte{7});
  const std::uint64_t h = Hash64(a);
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<std::byte> b = a;
    b[i] ^= std::byte{1};
    EXPECT_NE(Hash64(b), h) << "byte " << i;
  }
  std::vector<std::byte> longer = a;
  longer.push_back(std::byte{0});
  EXPECT_NE(Hash64(longer), h);
  EXPECT_EQ(HexDigest(0xABCull), "0000000000000abc");
}

TEST(Hash64, IsXxh3AndStreamingEqualsOneShotForAnySplit) {
  EXPECT_EQ(Hash64({}), 0x2D06800538D394C2ull);  // XXH3_64bits of no bytes, seed 0 (xxHash's test vector)
  std::vector<std::byte> bytes(1000);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 131 + 7);
  const std::uint64_t whole = Hash64(bytes, 42);
  EXPECT_NE(whole, Hash64(bytes, 43));
  for (std::size_t split : {0, 1, 7, 64, 999, 1000}) {
    Hasher hasher(42);
    hasher.Update(std::span(bytes).first(split));
    hasher.Update(std::span(bytes).subspan(split));
    EXPECT_EQ(hasher.Finish(), whole) << "split at " << split;
  }
}

// Hash64 takes the library's run-time dispatched (AVX2/AVX-512) code: its
// values must be the baseline XXH3's, bit for bit, at every size class (the
// vector code runs past 240 bytes), or batches would fail their checksums
// between machines with different CPUs.
TEST(Hash64, DispatchedCodeGivesTheBaselineValues) {
  std::vector<std::byte> bytes(1 << 20);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  for (const std::size_t n : {0, 1, 16, 17, 128, 129, 240, 241, 1000, 4096, 65537, 1 << 20}) {
    const std::span<const std::byte> part = std::span(bytes).first(n);
    EXPECT_EQ(Hash64(part, 7), XXH3_64bits_withSeed(part.data(), part.size(), 7)) << n << " bytes";
    Hasher hasher(7);
    hasher.Update(part);
    EXPECT_EQ(hasher.Finish(), Hash64(part, 7)) << n << " bytes, streaming";
  }
}

}  // namespace
}  // namespace stalelearn::model
