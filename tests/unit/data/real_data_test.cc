// Checks on the real data sets, when deploy/fetch-data.sh has fetched them
// (skipped otherwise: the tests never use the network). Their places come
// from the apps that register them. The SpamAssassin checks live with its
// converter (tests/unit/lr).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "apps/lr/datasets.h"
#include "apps/mf/datasets.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/data/libsvm.h"
#include "framework/data/ratings.h"
#include "framework/data/text_lines.h"
#include "tests/unit/data/md5.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data {
namespace {

std::filesystem::path FetchedPath(std::string_view name) {
  DatasetCatalog catalog;
  ThrowIfError(apps::mf::RegisterDatasets(catalog));
  ThrowIfError(apps::lr::RegisterDatasets(catalog));
  return DatasetPath(*ValueOrThrow(catalog.Find(name)), testing::FetchedDataDir());
}

TEST(Md5Test, MatchesRfc1321Vectors) {
  EXPECT_EQ(testing::Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(testing::Md5Hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(testing::Md5Hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(RealDataTest, MovieLensTsvHasTheMd5OfDataMd) {
  const std::filesystem::path path = FetchedPath("movielens");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not fetched: run deploy/fetch-data.sh movielens";
  Result<std::string> bytes = ReadWholeFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(bytes->size(), 2189249u);
  EXPECT_EQ(testing::Md5Hex(*bytes), "c40bdb5195a09b036b1f6ed7beb9a91f");
}

TEST(RealDataTest, MovieLensHasTheShapeOfDataMd) {
  const std::filesystem::path path = FetchedPath("movielens");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not fetched: run deploy/fetch-data.sh movielens";
  Result<RatingsTable> table = ReadRatingsTsv(path);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->ratings.size(), 100004u);
  EXPECT_EQ(table->num_users(), 671u);
  EXPECT_EQ(table->num_items(), 9066u);
  std::map<std::uint32_t, int> per_user;
  for (const Rating& r : table->ratings) {
    ++per_user[static_cast<std::uint32_t>(r.user)];
    ASSERT_EQ(r.value * 2, std::round(r.value * 2)) << "ratings come in half steps";
  }
  for (const auto& [user, count] : per_user) EXPECT_GE(count, 20) << "user index " << user;
}

TEST(RealDataTest, HeartScaleIs270By13) {
  const std::filesystem::path path = FetchedPath("heart_scale");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not fetched: run deploy/fetch-data.sh heart_scale";
  Result<SparseDataset> data = ReadLibsvm(path);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows(), 270u);
  EXPECT_EQ(data->num_columns, 13u);
  EXPECT_EQ(data->nonzeros(), 3378u);
  EXPECT_EQ(std::set<float>(data->labels.begin(), data->labels.end()), (std::set<float>{-1.0f, 1.0f}));
}

}  // namespace
}  // namespace stalelearn::data
