// Dataset catalog: names, data directory resolution, summaries.
#include <gtest/gtest.h>

#include "framework/data/catalog.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data {
namespace {

TEST(CatalogTest, FindsKnownDatasetsAndListsThemForUnknownOnes) {
  Result<DatasetEntry> movielens = FindDataset("movielens");
  ASSERT_TRUE(movielens.ok());
  EXPECT_EQ(movielens->format, DatasetFormat::kRatingsTsv);
  EXPECT_EQ(DatasetPath(*movielens, "/d"), std::filesystem::path("/d/movielens/ratings.tsv"));
  Result<DatasetEntry> unknown = FindDataset("mnist");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "unknown data set 'mnist' (known: movielens, heart_scale)");
}

TEST(CatalogTest, DataDirComesFromStalelearnDataThenHome) {
  EXPECT_EQ(ResolveDataDir("/data", "/home/u"), std::filesystem::path("/data"));
  EXPECT_EQ(ResolveDataDir("", "/home/u"), std::filesystem::path("/home/u/.cache/stalelearn"));
  EXPECT_EQ(ResolveDataDir(std::nullopt, "/home/u"), std::filesystem::path("/home/u/.cache/stalelearn"));
  EXPECT_EQ(ResolveDataDir(std::nullopt, std::nullopt), std::filesystem::path("./.cache/stalelearn"));
}

TEST(CatalogTest, SummarizesRatingsAndLibsvmFiles) {
  testing::ScratchDir dir;
  const std::filesystem::path ratings =
      dir.Write("r.tsv", "userId\tmovieId\trating\ttimestamp\n1\t5\t3\t0\n2\t5\t4\t0\n2\t9\t1\t0\n");
  Result<DatasetEntry> movielens = FindDataset("movielens");
  ASSERT_TRUE(movielens.ok());
  Result<DatasetSummary> summary = Summarize(*movielens, ratings);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(FormatSummary(*movielens, *summary),
            "movielens: 3 ratings, 2 users, 2 movies (rows=2 columns=2 nonzeros=3)");

  const std::filesystem::path sparse = dir.Write("s.txt", "1 1:1 4:2\n-1 2:1\n");
  Result<DatasetEntry> heart = FindDataset("heart_scale");
  ASSERT_TRUE(heart.ok());
  summary = Summarize(*heart, sparse);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(FormatSummary(*heart, *summary), "heart_scale: 2 samples, 4 features (rows=2 columns=4 nonzeros=3)");
}

TEST(CatalogTest, SummaryOfAMalformedFileCarriesFileAndLine) {
  testing::ScratchDir dir;
  const std::filesystem::path sparse = dir.Write("s.txt", "1 1:1\n1 1:1 1:2\n");
  Result<DatasetEntry> heart = FindDataset("heart_scale");
  ASSERT_TRUE(heart.ok());
  Result<DatasetSummary> summary = Summarize(*heart, sparse);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("s.txt:2: index 1 after 1"), std::string::npos)
      << summary.status().message();
}

}  // namespace
}  // namespace stalelearn::data
