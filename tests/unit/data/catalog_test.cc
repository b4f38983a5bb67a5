// Dataset catalog: entries added at start-up, names, data directory
// resolution, fetched-file resolution, summaries. The entries are made up
// here: the catalog knows no data set of its own.
#include <gtest/gtest.h>

#include "framework/data/catalog.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data {
namespace {

DatasetEntry Entry(std::string name, std::string relative_path, DatasetFormat format = DatasetFormat::kLibsvm) {
  DatasetEntry entry;
  entry.name = std::move(name);
  entry.relative_path = std::move(relative_path);
  entry.format = format;
  return entry;
}

DatasetEntry RatingsEntry() {
  DatasetEntry entry = Entry("stars", "stars/ratings.tsv", DatasetFormat::kRatingsTsv);
  entry.sample_noun = "ratings";
  entry.row_noun = "users";
  entry.column_noun = "items";
  return entry;
}

DatasetEntry SparseEntry() { return Entry("sparse", "sparse/s.txt"); }

DatasetCatalog TwoEntries() {
  DatasetCatalog catalog;
  EXPECT_TRUE(catalog.Add(RatingsEntry()).ok());
  EXPECT_TRUE(catalog.Add(SparseEntry()).ok());
  return catalog;
}

TEST(CatalogTest, FindsAddedDatasetsAndListsThemForUnknownOnes) {
  const DatasetCatalog catalog = TwoEntries();
  Result<const DatasetEntry*> stars = catalog.Find("stars");
  ASSERT_TRUE(stars.ok());
  EXPECT_EQ((*stars)->format, DatasetFormat::kRatingsTsv);
  EXPECT_EQ(DatasetPath(**stars, "/d"), std::filesystem::path("/d/stars/ratings.tsv"));
  Result<const DatasetEntry*> unknown = catalog.Find("mnist");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "unknown data set 'mnist' (known: stars, sparse)");
  ASSERT_EQ(catalog.entries().size(), 2u);
  EXPECT_EQ(catalog.entries()[0].name, "stars");
  EXPECT_EQ(catalog.entries()[1].name, "sparse");
}

TEST(CatalogTest, AnEmptyCatalogSaysSo) {
  const DatasetCatalog catalog;
  EXPECT_EQ(catalog.Find("x").status().message(), "unknown data set 'x' (known: none)");
}

TEST(CatalogTest, RefusesDuplicatesAndEntriesWithoutNameOrPath) {
  DatasetCatalog catalog = TwoEntries();
  Status twice = catalog.Add(SparseEntry());
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(twice.message(), "data set 'sparse' is added twice");
  EXPECT_EQ(catalog.Add(Entry("", "x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog.Add(Entry("nopath", "")).message(), "data set 'nopath' needs a path under the data directory");
  EXPECT_EQ(catalog.entries().size(), 2u);
}

TEST(CatalogTest, FetchCommandDefaultsToTheFetchScript) {
  DatasetCatalog catalog = TwoEntries();
  DatasetEntry custom = SparseEntry();
  custom.name = "custom";
  custom.fetch_command = "make custom";
  ASSERT_TRUE(catalog.Add(custom).ok());
  EXPECT_EQ((*catalog.Find("sparse"))->fetch_command, "deploy/fetch-data.sh sparse");
  EXPECT_EQ((*catalog.Find("custom"))->fetch_command, "make custom");
}

TEST(CatalogTest, DataDirComesFromStalelearnDataThenHome) {
  EXPECT_EQ(ResolveDataDir("/data", "/home/u"), std::filesystem::path("/data"));
  EXPECT_EQ(ResolveDataDir("", "/home/u"), std::filesystem::path("/home/u/.cache/stalelearn"));
  EXPECT_EQ(ResolveDataDir(std::nullopt, "/home/u"), std::filesystem::path("/home/u/.cache/stalelearn"));
  EXPECT_EQ(ResolveDataDir(std::nullopt, std::nullopt), std::filesystem::path("./.cache/stalelearn"));
}

TEST(CatalogTest, ResolvesAFetchedFileOrSaysHowToFetchIt) {
  const DatasetCatalog catalog = TwoEntries();
  testing::ScratchDir dir;
  Result<std::filesystem::path> missing = ResolveDatasetFile(catalog, "sparse", dir.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "sparse is not fetched (no " + (dir.path() / "sparse/s.txt").string() +
                                            "): run deploy/fetch-data.sh sparse");
  std::filesystem::create_directories(dir.path() / "sparse");
  dir.Write("sparse/s.txt", "1 1:1\n");
  Result<std::filesystem::path> fetched = ResolveDatasetFile(catalog, "sparse", dir.path());
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_EQ(*fetched, dir.path() / "sparse/s.txt");
  EXPECT_EQ(ResolveDatasetFile(catalog, "other", dir.path()).status().message(),
            "unknown data set 'other' (known: stars, sparse)");
}

TEST(CatalogTest, SummarizesRatingsAndLibsvmFilesByFormat) {
  const DatasetCatalog catalog = TwoEntries();
  testing::ScratchDir dir;
  const std::filesystem::path ratings =
      dir.Write("r.tsv", "userId\tmovieId\trating\ttimestamp\n1\t5\t3\t0\n2\t5\t4\t0\n2\t9\t1\t0\n");
  const DatasetEntry& stars = **catalog.Find("stars");
  Result<DatasetSummary> summary = Summarize(stars, ratings);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(FormatSummary(stars, *summary), "stars: 3 ratings, 2 users, 2 items (rows=2 columns=2 nonzeros=3)");

  const std::filesystem::path sparse_file = dir.Write("s.txt", "1 1:1 4:2\n-1 2:1\n");
  const DatasetEntry& sparse = **catalog.Find("sparse");
  summary = Summarize(sparse, sparse_file);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(FormatSummary(sparse, *summary), "sparse: 2 samples, 4 features (rows=2 columns=4 nonzeros=3)");
}

TEST(CatalogTest, AnEntrysOwnSummarizerIsUsedAndItsNotePrinted) {
  DatasetEntry entry = Entry("counted", "c");
  entry.summarize = [](const std::filesystem::path& file) -> Result<DatasetSummary> {
    STALELEARN_ASSIGN_OR_RETURN(DatasetSummary summary, SummarizeFormat(DatasetFormat::kLibsvm, file));
    summary.note = "seen by the entry's summarizer";
    return summary;
  };
  DatasetCatalog catalog;
  ASSERT_TRUE(catalog.Add(std::move(entry)).ok());
  testing::ScratchDir dir;
  const std::filesystem::path file = dir.Write("c", "1 2:1\n");
  const DatasetEntry& counted = **catalog.Find("counted");
  Result<DatasetSummary> summary = Summarize(counted, file);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(FormatSummary(counted, *summary),
            "counted: 1 samples, 2 features (rows=1 columns=2 nonzeros=1); seen by the entry's summarizer");
}

TEST(CatalogTest, SummaryOfAMalformedFileCarriesFileAndLine) {
  const DatasetCatalog catalog = TwoEntries();
  testing::ScratchDir dir;
  const std::filesystem::path sparse = dir.Write("s.txt", "1 1:1\n1 1:1 1:2\n");
  Result<DatasetSummary> summary = Summarize(**catalog.Find("sparse"), sparse);
  ASSERT_FALSE(summary.ok());
  EXPECT_NE(summary.status().message().find("s.txt:2: index 1 after 1"), std::string::npos)
      << summary.status().message();
}

}  // namespace
}  // namespace stalelearn::data
