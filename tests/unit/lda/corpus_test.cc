// The token-corpus converter and reader (apps/lda/corpus.h) on self-written
// texts, and the fetched Brown and SOTU corpora against the documented
// figures (skipped when not fetched: tests never use the network).
#include <gtest/gtest.h>

#include <algorithm>

#include "apps/lda/corpus.h"
#include "apps/lda/datasets.h"
#include "framework/core/error.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::apps::lda {
namespace {

using data::testing::ScratchDir;

const std::vector<std::string> kStopwords = {"and", "the", "was"};  // sorted

TEST(LdaCorpus, KeptTokensLowercaseDropShortWordsAndStopwords) {
  EXPECT_EQ(KeptTokens("The Jury's verdict, AND an ox-cart: no 42nd x9y", kStopwords),
            (std::vector<std::string>{"jury's", "verdict", "cart"}));
}

TEST(LdaCorpus, TokensAreRunsOfLettersAndApostrophesStartingWithALetter) {
  EXPECT_EQ(KeptTokens("'tis can't-stop 'quoted' don''t", {}),
            (std::vector<std::string>{"tis", "can't", "stop", "quoted'", "don''t"}));
}

TEST(LdaCorpus, BrownTagsAreStrippedAtTheLastSlash) {
  EXPECT_EQ(StripBrownTags("The/at Fulton/np-tl 1/2/cd ''/''\n\tjury/nn"), "The Fulton 1/2 ''  jury");  // whitespace becomes spaces
}

TEST(LdaCorpus, VocabularyKeepsWordsInEnoughDocumentsSortedAndDropsTheRest) {
  const std::vector<RawDocument> documents = {{"a", {"zeta", "alpha", "rare", "alpha"}},
                                              {"b", {"alpha", "zeta"}},
                                              {"c", {"beta"}},
                                              {"d", {"alpha"}}};
  const TokenCorpus corpus = BuildTokenCorpus(documents, /*min_document_frequency=*/2);
  EXPECT_EQ(corpus.vocabulary, (std::vector<std::string>{"alpha", "zeta"}));
  ASSERT_EQ(corpus.documents.size(), 4u);
  EXPECT_EQ(corpus.documents[0], (std::vector<std::uint32_t>{1, 0, 0}));
  EXPECT_EQ(corpus.documents[2], (std::vector<std::uint32_t>{}));
  EXPECT_EQ(corpus.tokens(), 6u);
  EXPECT_EQ(corpus.distinct_pairs(), 5u);  // a: alpha zeta, b: alpha zeta, d: alpha
}

TEST(LdaCorpus, FormatAndReadRoundTrip) {
  ScratchDir dir;
  TokenCorpus corpus;
  corpus.vocabulary = {"apple", "pear", "plum"};
  corpus.document_names = {"one", "empty", "two"};
  corpus.documents = {{0, 2, 2}, {}, {1}};
  const std::filesystem::path file = dir.Write("c.docs", FormatTokenCorpus(corpus));
  dir.Write("c.vocab", "apple\npear\nplum\n");
  Result<TokenCorpus> read = ReadTokenCorpus(file);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->vocabulary, corpus.vocabulary);
  EXPECT_EQ(read->document_names, corpus.document_names);
  EXPECT_EQ(read->documents, corpus.documents);
}

TEST(LdaCorpus, BadInputNamesTheFileAndLine) {
  ScratchDir dir;
  Result<TokenCorpus> bad_id = ReadTokenCorpus(dir.Write("bad.docs", "# c\nd1 0 1\nd2 3 x\n"));
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("bad.docs:3"), std::string::npos) << bad_id.status().ToString();
  dir.Write("big.vocab", "a\nb\n");
  Result<TokenCorpus> out_of_range = ReadTokenCorpus(dir.Write("big.docs", "d1 0 2\n"));
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("word id 2"), std::string::npos) << out_of_range.status().ToString();
  EXPECT_FALSE(ReadTokenCorpus(dir.Write("none.docs", "# nothing\n")).ok());
  EXPECT_FALSE(ReadTokenCorpus(dir.path() / "missing.docs").ok());
}

TEST(LdaCorpus, PrepareBrownMakesTheCorpusFromTaggedFiles) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path() / "package");
  dir.Write("stopwords.txt", "the\nand\n");
  // Five texts share "jury" (document frequency 5 keeps it); "court" is in four.
  for (int i = 1; i <= 5; ++i) {
    const std::string text = i < 5 ? "The/at jury/nn and/cc court/nn ./.\n" : "\tJury/nn-tl said/vbd ./.\n";
    dir.Write("package/ca0" + std::to_string(i), text);
  }
  dir.Write("package/README", "jury/nn");  // not a text: ignored
  const std::filesystem::path out = dir.path() / "brown.docs";
  const Status status = PrepareBrown(dir.path(), out);
  ASSERT_TRUE(status.ok()) << status.ToString();
  Result<TokenCorpus> corpus = ReadTokenCorpus(out);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  EXPECT_EQ(corpus->vocabulary, (std::vector<std::string>{"jury"}));
  EXPECT_EQ(corpus->document_names, (std::vector<std::string>{"ca01", "ca02", "ca03", "ca04", "ca05"}));
  EXPECT_EQ(corpus->tokens(), 5u);
  const Status missing = PrepareBrown(dir.path() / "nowhere", out);
  EXPECT_FALSE(missing.ok());
}

std::filesystem::path FetchedCorpus(const std::string& name) {
  data::DatasetCatalog catalog;
  ThrowIfError(RegisterDatasets(catalog));
  return data::DatasetPath(*ValueOrThrow(catalog.Find(name)), data::testing::FetchedDataDir());
}

TEST(LdaCorpusRealData, BrownHasTheDocumentedShape) {
  const std::filesystem::path file = FetchedCorpus("brown");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh brown";
  Result<TokenCorpus> corpus = ReadTokenCorpus(file);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  // The UCI bag of words of Brown (docs/guide/data.md): D 500, W 10,827, NNZ 243,610.
  EXPECT_EQ(corpus->documents.size(), 500u);
  EXPECT_EQ(corpus->vocabulary.size(), 10827u);
  EXPECT_EQ(corpus->distinct_pairs(), 243610u);
  EXPECT_TRUE(std::is_sorted(corpus->vocabulary.begin(), corpus->vocabulary.end()));
  EXPECT_EQ(corpus->document_names.front(), "ca01");
  EXPECT_EQ(corpus->document_names.back(), "cr09");
}

TEST(LdaCorpusRealData, SotuHasItsSpeeches) {
  const std::filesystem::path file = FetchedCorpus("sotu");
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched: run deploy/fetch-data.sh sotu";
  Result<TokenCorpus> corpus = ReadTokenCorpus(file);
  ASSERT_TRUE(corpus.ok()) << corpus.status().ToString();
  EXPECT_EQ(corpus->documents.size(), 233u);
  EXPECT_GT(corpus->vocabulary.size(), 5000u);
  for (const auto& document : corpus->documents) EXPECT_FALSE(document.empty());
}

}  // namespace
}  // namespace stalelearn::apps::lda
