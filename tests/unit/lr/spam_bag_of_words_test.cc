// The SpamAssassin bag-of-words converter on self-written mails: body
// extraction, tokens, the document-frequency filter, the LIBSVM and vocabulary
// files, corpus errors, and the lr app's catalog entries.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "apps/lr/datasets.h"
#include "apps/lr/spam_bag_of_words.h"
#include "framework/data/libsvm.h"
#include "framework/data/text_lines.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::apps::lr {
namespace {

namespace fs = std::filesystem;
using Tokens = std::vector<std::string>;

TEST(MailBodyTest, StartsAfterTheFirstBlankLine) {
  EXPECT_EQ(MailBody("Subject: Free money\nFrom: x@y\n\nHello there\n\nBye\n"), "Hello there\n\nBye\n");
  EXPECT_EQ(MailBody("Subject: crlf\r\n\r\nBody\r\n"), "Body\r\n");
  EXPECT_EQ(MailBody("\nonly a body\n"), "only a body\n");
  EXPECT_EQ(MailBody("Subject: headers only\nTo: z\n"), "");
  EXPECT_EQ(MailBody(""), "");
  // A folded header line starts with white space: not blank.
  EXPECT_EQ(MailBody("Received: a\n \tb\n\nbody"), "body");
}

TEST(DistinctTokensTest, LowercaseLettersAndApostrophesFromALetterOn) {
  EXPECT_EQ(DistinctTokens("Hello WORLD, hello again"), (Tokens{"again", "hello", "world"}));
  EXPECT_EQ(DistinctTokens("don't O'Neil 'quoted' it's''"), (Tokens{"don't", "it's''", "o'neil", "quoted'"}));
}

TEST(DistinctTokensTest, DigitsPunctuationAndNonAsciiSeparateAndSingleLettersDrop) {
  EXPECT_EQ(DistinctTokens("a1b2 x 123abc e-mail no_way"), (Tokens{"abc", "mail", "no", "way"}));
  // UTF-8 "café" and Latin-1 "naïve": non-ASCII bytes are separators.
  EXPECT_EQ(DistinctTokens("caf\xc3\xa9 na\xefve \xff\xfe"), (Tokens{"caf", "na", "ve"}));
  EXPECT_EQ(DistinctTokens("' '' 1 2 3 !"), Tokens{});
}

TEST(DistinctTokensTest, SortsBytewiseAndKeepsEachTokenOnce) {
  EXPECT_EQ(DistinctTokens("zz aa zz b'c bc AA"), (Tokens{"aa", "b'c", "bc", "zz"}));
}

std::vector<LabelledMail> ThreeMails() {
  return {{+1, {"buy", "now", "viagra"}}, {-1, {"lunch", "now"}}, {+1, {"buy", "lunch", "now", "unique"}}};
}

TEST(BagOfWordsTest, KeepsWordsOfAtLeastTheMinimumDocumentFrequency) {
  const BagOfWords bag = BuildBagOfWords(ThreeMails(), 2);
  EXPECT_EQ(bag.vocabulary, (Tokens{"buy", "lunch", "now"}));
  EXPECT_EQ(bag.labels, (std::vector<int>{+1, -1, +1}));
  EXPECT_EQ(bag.rows, (std::vector<std::vector<std::uint32_t>>{{0, 2}, {1, 2}, {0, 1, 2}}));
  EXPECT_EQ(bag.nonzeros(), 7u);
  EXPECT_EQ(BuildBagOfWords(ThreeMails(), 1).vocabulary.size(), 5u);
  EXPECT_EQ(BuildBagOfWords(ThreeMails(), 3).vocabulary, Tokens{"now"});
}

TEST(BagOfWordsTest, WritesLibsvmWithOneBasedIdsAndTheVocabularyInIdOrder) {
  const BagOfWords bag = BuildBagOfWords(ThreeMails(), 2);
  EXPECT_EQ(FormatLibsvm(bag), "+1 1:1 3:1\n-1 2:1 3:1\n+1 1:1 2:1 3:1\n");
  EXPECT_EQ(FormatVocabulary(bag), "buy\nlunch\nnow\n");
  Result<data::SparseDataset> parsed = data::ParseLibsvm(FormatLibsvm(bag), "bag");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->rows(), 3u);
  EXPECT_EQ(parsed->num_columns, 3u);
  EXPECT_EQ(parsed->nonzeros(), 7u);
}

TEST(BagOfWordsTest, AMailWithNoKeptWordIsALabelOnlyRowTheReaderAccepts) {
  const std::vector<LabelledMail> mails = {{-1, {"alpha"}}, {+1, {"beta"}}, {-1, {"beta"}}};
  const BagOfWords bag = BuildBagOfWords(mails, 2);
  EXPECT_EQ(FormatLibsvm(bag), "-1\n+1 1:1\n-1 1:1\n");
  Result<data::SparseDataset> parsed = data::ParseLibsvm(FormatLibsvm(bag), "bag");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->rows(), 3u);
}

// A package/data look-alike: the five folders, a .json beside each mail.
class SpamCorpusTest : public ::testing::Test {
 protected:
  void WriteMail(const std::string& folder, const std::string& name, const std::string& mail) {
    fs::create_directories(corpus() / folder);
    scratch_.Write("package-data/" + folder + "/" + name, mail);
  }
  void WriteFiveFolders() {
    // Written out of name order: rows must come sorted by name.
    WriteMail("easy-ham-1", "00002.b.txt", "Subject: Lunch\n\nLunch at noon? Reply now.\n");
    WriteMail("easy-ham-1", "00001.a.txt", "Subject: Meeting\nX-Mailer: Headerword\n\nThe meeting is at noon.\n");
    WriteMail("easy-ham-1", "00001.a.json", "{\"text\": \"not a mail\"}");
    WriteMail("easy-ham-2", "00001.c.txt", "Subject: hi\n\nNoon works; see you.\n");
    WriteMail("hard-ham-1", "00001.d.txt", "Subject: Offer\r\n\r\nA special OFFER from your bank, reply now\r\n");
    WriteMail("spam-1", "00001.e.txt", "Subject: WIN\nX-Mailer: Headerword\n\nWIN money NOW!!! Special offer\n");
    WriteMail("spam-2", "00001.f.txt", "Subject: $$$\n\nMoney money money. Don't wait, win now\n");
  }
  fs::path corpus() const { return scratch_.path() / "package-data"; }
  void SetUp() override { fs::create_directories(corpus()); }

  data::testing::ScratchDir scratch_{};
};

TEST_F(SpamCorpusTest, ReadsTheFoldersInOrderLabelledAndTokenizesBodiesOnly) {
  WriteFiveFolders();
  Result<std::vector<LabelledMail>> mails = ReadSpamCorpus(corpus());
  ASSERT_TRUE(mails.ok()) << mails.status().ToString();
  ASSERT_EQ(mails->size(), 6u);
  std::vector<int> labels;
  for (const LabelledMail& mail : *mails) labels.push_back(mail.label);
  EXPECT_EQ(labels, (std::vector<int>{-1, -1, -1, -1, +1, +1}));
  EXPECT_EQ((*mails)[0].tokens, (Tokens{"at", "is", "meeting", "noon", "the"}));  // 00001.a before 00002.b
  EXPECT_EQ((*mails)[1].tokens, (Tokens{"at", "lunch", "noon", "now", "reply"}));
  EXPECT_EQ((*mails)[5].tokens, (Tokens{"don't", "money", "now", "wait", "win"}));
  for (const LabelledMail& mail : *mails) {
    for (const std::string& token : mail.tokens) EXPECT_NE(token, "headerword") << "headers are not tokenized";
  }
}

TEST_F(SpamCorpusTest, PrepareWritesTheLibsvmFileAndItsVocabularyBesideIt) {
  WriteFiveFolders();
  const fs::path out = scratch_.path() / "out" / "spam.libsvm";
  fs::create_directories(out.parent_path());
  ASSERT_TRUE(PrepareSpamBagOfWords(corpus(), out).ok());
  EXPECT_EQ(VocabularyPathFor(out), scratch_.path() / "out" / "spam.vocab");
  Result<std::string> vocabulary = data::ReadWholeFile(VocabularyPathFor(out));
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status().ToString();
  // Words of >= 2 mails: at(2) money(2) noon(3) now(4) offer(2) reply(2)
  // special(2) win(2); "headerword" (headers only), "you"/"your" and the
  // other words of one mail drop out.
  EXPECT_EQ(*vocabulary, "at\nmoney\nnoon\nnow\noffer\nreply\nspecial\nwin\n");
  Result<std::string> libsvm = data::ReadWholeFile(out);
  ASSERT_TRUE(libsvm.ok()) << libsvm.status().ToString();
  EXPECT_EQ(*libsvm, "-1 1:1 3:1\n-1 1:1 3:1 4:1 6:1\n-1 3:1\n-1 4:1 5:1 6:1 7:1\n+1 2:1 4:1 5:1 7:1 8:1\n"
                     "+1 2:1 4:1 8:1\n");
}

TEST_F(SpamCorpusTest, AnEmptyCorpusDirectoryNamesTheMissingFolder) {
  Result<std::vector<LabelledMail>> mails = ReadSpamCorpus(corpus());
  ASSERT_FALSE(mails.ok());
  EXPECT_EQ(mails.status().code(), StatusCode::kNotFound);
  const std::string message = mails.status().message();
  EXPECT_NE(message.find((corpus() / "easy-ham-1").string() + ": no such folder"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

TEST_F(SpamCorpusTest, AFolderWithoutMailIsReported) {
  WriteFiveFolders();
  fs::remove_all(corpus() / "spam-2");
  WriteMail("spam-2", "00001.f.json", "{}");
  Result<std::vector<LabelledMail>> mails = ReadSpamCorpus(corpus());
  ASSERT_FALSE(mails.ok());
  EXPECT_EQ(mails.status().message(), (corpus() / "spam-2").string() + ": holds no *.txt mail");
}

TEST_F(SpamCorpusTest, AMissingCorpusDirectoryIsReportedAndNothingIsWritten) {
  const fs::path out = scratch_.path() / "spam.libsvm";
  Status status = PrepareSpamBagOfWords(scratch_.path() / "nowhere", out);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), (scratch_.path() / "nowhere").string() + ": no such corpus directory");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(VocabularyPathFor(out)));
}

TEST_F(SpamCorpusTest, AnUnreadableMailIsReportedByName) {
  WriteFiveFolders();
  fs::create_directories(corpus() / "spam-1" / "00002.dir.txt");  // a directory named like a mail
  Result<std::vector<LabelledMail>> mails = ReadSpamCorpus(corpus());
  ASSERT_FALSE(mails.ok());
  EXPECT_NE(mails.status().message().find("00002.dir.txt"), std::string::npos) << mails.status().message();
}

TEST(LrDatasetsTest, RegistersSpamAndHeartScaleOnce) {
  data::DatasetCatalog catalog;
  ASSERT_TRUE(RegisterDatasets(catalog).ok());
  Result<const data::DatasetEntry*> spam = catalog.Find("spam");
  ASSERT_TRUE(spam.ok());
  EXPECT_EQ(data::DatasetPath(**spam, "/d"), fs::path("/d/spam/spam.libsvm"));
  EXPECT_TRUE((*spam)->prepare != nullptr);
  EXPECT_EQ((*spam)->fetch_command, "deploy/fetch-data.sh spam");
  Result<const data::DatasetEntry*> heart = catalog.Find("heart_scale");
  ASSERT_TRUE(heart.ok());
  EXPECT_EQ(data::DatasetPath(**heart, "/d"), fs::path("/d/heart_scale/heart_scale"));
  EXPECT_TRUE((*heart)->prepare == nullptr);
  EXPECT_EQ(RegisterDatasets(catalog).code(), StatusCode::kInvalidArgument);
}

TEST_F(SpamCorpusTest, TheCatalogEntryPreparesAndSummarizesWithLabelCounts) {
  WriteFiveFolders();
  data::DatasetCatalog catalog;
  ASSERT_TRUE(RegisterDatasets(catalog).ok());
  const data::DatasetEntry& spam = **catalog.Find("spam");
  const fs::path out = scratch_.path() / "spam.libsvm";
  ASSERT_TRUE(spam.prepare(corpus(), out).ok());
  Result<data::DatasetSummary> summary = data::Summarize(spam, out);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(data::FormatSummary(spam, *summary),
            "spam: 6 mails, 8 words (rows=6 columns=8 nonzeros=19); 2 spam (+1), 4 ham (-1)");
}

}  // namespace
}  // namespace stalelearn::apps::lr
