// The SpamAssassin bag of words as deploy/fetch-data.sh spam makes it, checked
// against the documented (deploy/README.md) figures (skipped when not fetched: tests never use the
// network).
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "apps/lr/datasets.h"
#include "apps/lr/spam_bag_of_words.h"
#include "framework/core/error.h"
#include "framework/data/libsvm.h"
#include "framework/data/text_lines.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::apps::lr {
namespace {

std::filesystem::path FetchedSpamFile() {
  data::DatasetCatalog catalog;
  ThrowIfError(RegisterDatasets(catalog));
  return data::DatasetPath(*ValueOrThrow(catalog.Find("spam")), data::testing::FetchedDataDir());
}

TEST(SpamRealDataTest, HasTheShapeAndLabelsOfDataMd) {
  const std::filesystem::path file = FetchedSpamFile();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh spam";
  Result<data::SparseDataset> data = data::ReadLibsvm(file);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->rows(), 6046u);
  EXPECT_EQ(data->num_columns, 47379u);
  EXPECT_EQ(data->nonzeros(), 989654u);
  EXPECT_EQ(std::count(data->labels.begin(), data->labels.end(), -1.0f), 4150);
  EXPECT_EQ(std::count(data->labels.begin(), data->labels.end(), +1.0f), 1896);
  EXPECT_TRUE(std::all_of(data->values.begin(), data->values.end(), [](float v) { return v == 1.0f; }));
  // Rows are ham folders first, then spam.
  EXPECT_TRUE(std::is_sorted(data->labels.begin(), data->labels.end()));
}

TEST(SpamRealDataTest, VocabularyIsSortedDistinctTokensOnePerFeature) {
  const std::filesystem::path file = FetchedSpamFile();
  const std::filesystem::path vocabulary_file = VocabularyPathFor(file);
  if (!std::filesystem::exists(vocabulary_file)) {
    GTEST_SKIP() << vocabulary_file << " not fetched: run deploy/fetch-data.sh spam";
  }
  Result<std::string> text = data::ReadWholeFile(vocabulary_file);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  data::LineCursor cursor(*text);
  const std::regex token("[a-z][a-z']+");
  std::string_view line, previous;
  std::size_t words = 0;
  while (cursor.Next(line)) {
    ++words;
    ASSERT_TRUE(std::regex_match(line.begin(), line.end(), token)) << "line " << words << ": " << line;
    ASSERT_LT(previous, line) << "line " << words;
    previous = line;
  }
  EXPECT_EQ(words, 47379u);
}

}  // namespace
}  // namespace stalelearn::apps::lr
