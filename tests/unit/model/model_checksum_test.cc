// framework/model/model_checksum.h: the model checksum adds up over parts of
// the rows (any number of ranks, each with a contiguous part), and still
// tells models apart.
#include "framework/model/model_checksum.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace stalelearn::model {
namespace {

TableSet RandomModel(std::uint32_t seed) {
  TableSet tables = MakeTableSet({{"users", ElementType::kFloat32, 37, 5},
                                  {"empty", ElementType::kFloat32, 0, 3},
                                  {"counts", ElementType::kInt32, 101, 4}});
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (std::int64_t r = 0; r < tables[0].rows(); ++r) {
    for (float& v : tables[0].FloatRow(r)) v = value(random);
  }
  for (std::int64_t r = 0; r < tables[2].rows(); ++r) {
    for (std::int32_t& v : tables[2].IntRow(r)) v = static_cast<std::int32_t>(random() % 1000);
  }
  return tables;
}

std::uint64_t SumOfParts(const TableSet& tables, int parts) {
  std::uint64_t sum = 0;
  for (int p = 0; p < parts; ++p) sum += ModelDigest(tables, RowsOfPart(tables, p, parts));
  return sum;
}

TEST(PartOfRows, PartsCoverEveryRowOnceInOrderAndDifferByAtMostOneRow) {
  for (const std::int64_t rows : {0, 1, 7, 64, 1000003}) {
    for (const int parts : {1, 2, 3, 8, 64}) {
      std::int64_t next = 0, smallest = rows, largest = 0;
      for (int p = 0; p < parts; ++p) {
        const RowRange r = PartOfRows(rows, p, parts);
        ASSERT_EQ(r.first, next) << rows << " rows, part " << p << " of " << parts;
        ASSERT_LE(r.first, r.last);
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
        next = r.last;
      }
      EXPECT_EQ(next, rows) << rows << " rows in " << parts << " parts";
      EXPECT_LE(largest - smallest, 1) << rows << " rows in " << parts << " parts";
    }
  }
}

TEST(ModelChecksum, PartsOfAnyCountAddUpToTheWholeModelsChecksum) {
  const TableSet model = RandomModel(1);
  const std::uint64_t whole = ModelChecksum(model);
  for (const int parts : {1, 2, 3, 5, 64, 200}) {
    EXPECT_EQ(ChecksumOfDigest(SumOfParts(model, parts)), whole) << parts << " parts";
  }
}

TEST(ModelChecksum, ARowCountedTwiceOrLeftOutDoesNotAddUp) {
  const TableSet model = RandomModel(2);
  std::vector<RowRange> first = RowsOfPart(model, 0, 2), second = RowsOfPart(model, 1, 2);
  const std::uint64_t exact = ModelDigest(model, first) + ModelDigest(model, second);
  ASSERT_EQ(ChecksumOfDigest(exact), ModelChecksum(model));
  second[2].first -= 1;  // the last row of part 0 of table 2 counted twice
  EXPECT_NE(ChecksumOfDigest(ModelDigest(model, first) + ModelDigest(model, second)), ModelChecksum(model));
  second[2].first += 2;  // ... and left out
  EXPECT_NE(ChecksumOfDigest(ModelDigest(model, first) + ModelDigest(model, second)), ModelChecksum(model));
}

TEST(ModelChecksum, AChangedElementSwappedRowsOrRowsMovedToAnotherTableChangeIt) {
  const TableSet model = RandomModel(3);
  const std::uint64_t original = ModelChecksum(model);
  EXPECT_EQ(ModelChecksum(RandomModel(3)), original) << "not a function of the model alone";

  TableSet changed = model;
  changed[2].IntRow(17)[1] += 1;
  EXPECT_NE(ModelChecksum(changed), original);

  TableSet swapped = model;
  std::swap_ranges(swapped[0].FloatRow(3).begin(), swapped[0].FloatRow(3).end(), swapped[0].FloatRow(4).begin());
  EXPECT_NE(ModelChecksum(swapped), original) << "rows are told apart by their ids";

  TableSet zero = MakeTableSet({{"a", ElementType::kFloat32, 2, 2}, {"b", ElementType::kFloat32, 2, 2}});
  TableSet moved = zero;
  zero[0].FloatRow(0)[0] = 1.0f;
  moved[1].FloatRow(0)[0] = 1.0f;
  EXPECT_NE(ModelChecksum(zero), ModelChecksum(moved)) << "tables are told apart";
}

}  // namespace
}  // namespace stalelearn::model
