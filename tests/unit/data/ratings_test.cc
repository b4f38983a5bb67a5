// Ratings TSV reader and the deterministic train/test split.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "framework/data/ratings.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data {
namespace {

constexpr std::string_view kGood =
    "userId\tmovieId\trating\ttimestamp\n"
    "7\t300\t4.5\t1000\n"
    "3\t100\t0.5\t1001\r\n"
    "7\t100\t5\t1002\n";

TEST(RatingsTsvTest, ReadsAndRemapsIdsInAscendingOrder) {
  Result<RatingsTable> table = ParseRatingsTsv(kGood, "r.tsv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->user_ids, (std::vector<std::int64_t>{3, 7}));
  EXPECT_EQ(table->item_ids, (std::vector<std::int64_t>{100, 300}));
  ASSERT_EQ(table->ratings.size(), 3u);
  const Rating& first = table->ratings[0];  // file order is kept
  EXPECT_EQ(first.user, UserIndex{1});
  EXPECT_EQ(first.item, ItemIndex{1});
  EXPECT_FLOAT_EQ(first.value, 4.5f);
  EXPECT_EQ(first.timestamp, 1000);
  EXPECT_EQ(table->ratings[1].user, UserIndex{0});
  EXPECT_FLOAT_EQ(table->ratings[1].value, 0.5f);  // CRLF stripped
  EXPECT_EQ(table->ratings[2].timestamp, 1002);
}

// Parsed in pieces on several threads, a file gives what one piece gives,
// and the error named is the first by line, wherever the pieces are cut.
TEST(RatingsTsvTest, PiecesParseAsOneAndNameTheFirstBadLine) {
  std::string text = "userId\tmovieId\trating\ttimestamp\n";
  for (int i = 0; i < 997; ++i) text += fmt::format("{}\t{}\t{}\t{}\n", i % 37, i, 0.5 + (i % 10) * 0.5, i);
  text += "5\t5000\t3";  // no timestamp and no final newline: the last piece's last line
  RatingsReadOptions one;
  one.parse_pieces = 1;
  const Result<RatingsTable> serial = ParseRatingsTsv(text, "p.tsv", one);
  ASSERT_FALSE(serial.ok());  // 3 fields where the header has 4
  EXPECT_NE(serial.status().message().find("p.tsv:999:"), std::string::npos) << serial.status().message();
  text.back() = '3';
  text += "\t7\n";
  for (int pieces : {1, 2, 3, 7, 64}) {
    RatingsReadOptions options;
    options.parse_pieces = pieces;
    const Result<RatingsTable> table = ParseRatingsTsv(text, "p.tsv", options);
    ASSERT_TRUE(table.ok()) << pieces << ": " << table.status().ToString();
    ASSERT_EQ(table->ratings.size(), 998u) << pieces;
    const Result<RatingsTable> reference = ParseRatingsTsv(text, "p.tsv", one);
    for (std::size_t i = 0; i < 998; ++i) {
      ASSERT_EQ(table->ratings[i].user, reference->ratings[i].user) << pieces << " rating " << i;
      ASSERT_EQ(table->ratings[i].item, reference->ratings[i].item) << pieces << " rating " << i;
      ASSERT_EQ(table->ratings[i].timestamp, static_cast<std::int64_t>(i < 997 ? i : 7)) << pieces;
    }
    // Two bad lines: the earlier one is named, whichever piece holds it.
    std::string bad = text;
    // Rating i (item i) is on line i + 2: spoil the lines of items 300 and 800.
    bad.insert(bad.rfind('\n', bad.find("\t300\t")) + 1, "x");
    bad.insert(bad.rfind('\n', bad.find("\t800\t")) + 1, "y");
    const Result<RatingsTable> failed = ParseRatingsTsv(bad, "p.tsv", options);
    ASSERT_FALSE(failed.ok()) << pieces;
    EXPECT_NE(failed.status().message().find("p.tsv:302:"), std::string::npos) << pieces << ": " << failed.status().message();
  }
}

// Ids in a small range are indexed through an array over the range, others
// (negative, or far above their count) by sorting: both give the same
// indices. The second file is the first with every id mapped through an
// increasing function into the sorted case.
TEST(RatingsTsvTest, FarApartAndNegativeIdsAreRemappedAsSmallOnesAre) {
  const auto file = [](auto user, auto item) {
    std::string text = "userId\tmovieId\trating\n";
    const int pairs[][2] = {{7, 300}, {3, 100}, {7, 100}, {0, 2}, {3, 300}, {12, 7}};
    for (const auto& p : pairs) text += fmt::format("{}\t{}\t3\n", user(p[0]), item(p[1]));
    return text;
  };
  const auto same = [](std::int64_t id) { return id; };
  const auto far = [](std::int64_t id) { return id * 1'000'000'000'000 - 5; };
  Result<RatingsTable> small = ParseRatingsTsv(file(same, same), "small.tsv");
  Result<RatingsTable> spread = ParseRatingsTsv(file(far, far), "far.tsv");
  ASSERT_TRUE(small.ok() && spread.ok());
  EXPECT_EQ(small->user_ids, (std::vector<std::int64_t>{0, 3, 7, 12}));
  EXPECT_EQ(small->item_ids, (std::vector<std::int64_t>{2, 7, 100, 300}));
  EXPECT_EQ(spread->user_ids, (std::vector<std::int64_t>{far(0), far(3), far(7), far(12)}));
  ASSERT_EQ(small->ratings.size(), spread->ratings.size());
  for (std::size_t i = 0; i < small->ratings.size(); ++i) {
    EXPECT_EQ(small->ratings[i].user, spread->ratings[i].user) << "rating " << i;
    EXPECT_EQ(small->ratings[i].item, spread->ratings[i].item) << "rating " << i;
    EXPECT_EQ(small->user_ids[static_cast<std::size_t>(small->ratings[i].user)] * 1'000'000'000'000 - 5,
              spread->user_ids[static_cast<std::size_t>(spread->ratings[i].user)]);
  }
  EXPECT_EQ(small->ratings[5].user, UserIndex{3});  // user 12, the largest
  EXPECT_EQ(small->ratings[3].item, ItemIndex{0});  // item 2, the smallest
}

TEST(RatingsTsvTest, TimestampColumnIsOptional) {
  Result<RatingsTable> table = ParseRatingsTsv("userId\tmovieId\trating\n1\t2\t3\n", "r.tsv");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->ratings.size(), 1u);
  EXPECT_EQ(table->ratings[0].timestamp, 0);
}

TEST(RatingsTsvTest, ReadsFromFileAndReportsAMissingOne) {
  testing::ScratchDir dir;
  Result<RatingsTable> table = ReadRatingsTsv(dir.Write("r.tsv", kGood));
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->ratings.size(), 3u);
  EXPECT_EQ(ReadRatingsTsv(dir.path() / "absent.tsv").status().code(), StatusCode::kNotFound);
}

TEST(RatingsTsvTest, ADirectoryIsRejectedByName) {
  testing::ScratchDir dir;
  Result<RatingsTable> table = ReadRatingsTsv(dir.path());
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find(dir.path().string() + ": is a directory"), std::string::npos)
      << table.status().message();
}

struct MalformedCase {
  std::string name;
  std::string text;
  std::string expected;  // substring of the message, with file:line
};

class MalformedRatingsTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedRatingsTest, IsRejectedWithFileLineAndReason) {
  Result<RatingsTable> table = ParseRatingsTsv(GetParam().text, "f.tsv");
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find(GetParam().expected), std::string::npos)
      << "message: " << table.status().message();
}

const std::string kHeader = "userId\tmovieId\trating\ttimestamp\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedRatingsTest,
    ::testing::Values(
        MalformedCase{"EmptyFile", "", "f.tsv:1: empty file"},
        // A file without a header would lose its first rating to one.
        MalformedCase{"NoHeader", "1\t2\t3\n4\t5\t3\n", "f.tsv:1: expected a header line naming the columns"},
        MalformedCase{"TwoColumnHeader", "user\titem\n1\t2\n", "f.tsv:1: expected a header line naming the columns"},
        // Errors name a column by the file's own name for it.
        MalformedCase{"OwnColumnNames", "customer\tproduct\tstars\nc1\t2\t3\n",
                      "f.tsv:2: customer 'c1' is not an integer"},
        // Bytes that are not printable are quoted as \xNN: a NUL must not cut the message short.
        MalformedCase{"BinaryHeader", std::string("gz\x1f\x8b\0\r\n", 7), "got 'gz\\x1f\\x8b\\x00'"},
        MalformedCase{"BinaryField", kHeader + std::string("1\t2\t3\0x\t4\n", 10),
                      "f.tsv:2: rating '3\\x00x' is not a finite number"},
        MalformedCase{"TooFewFields", kHeader + "1\t2\t3\t4\n1\t2\t3\n",
                      "f.tsv:3: expected 4 tab-separated fields, got 3"},
        MalformedCase{"TooManyFields", kHeader + "1\t2\t3\t4\t5\n", "f.tsv:2: expected 4 tab-separated fields, got 5"},
        MalformedCase{"SpaceSeparated", kHeader + "1 2 3 4\n", "f.tsv:2: expected 4 tab-separated fields, got 1"},
        MalformedCase{"NonNumericUser", kHeader + "u1\t2\t3\t4\n", "f.tsv:2: userId 'u1' is not an integer"},
        MalformedCase{"FractionalMovie", kHeader + "1\t2.5\t3\t4\n", "f.tsv:2: movieId '2.5' is not an integer"},
        MalformedCase{"NonNumericRating", kHeader + "1\t2\tgood\t4\n", "f.tsv:2: rating 'good' is not a finite number"},
        MalformedCase{"NanRating", kHeader + "1\t2\tnan\t4\n", "f.tsv:2: rating 'nan' is not a finite number"},
        MalformedCase{"RatingTooHigh", kHeader + "1\t2\t5.5\t4\n", "f.tsv:2: rating 5.5 outside [0.5, 5]"},
        MalformedCase{"RatingTooLow", kHeader + "1\t2\t0\t4\n", "f.tsv:2: rating 0 outside [0.5, 5]"},
        MalformedCase{"BadTimestamp", kHeader + "1\t2\t3\tyesterday\n",
                      "f.tsv:2: timestamp 'yesterday' is not an integer"},
        MalformedCase{"DuplicateHeader", kHeader + "1\t2\t3\t4\n" + kHeader, "f.tsv:3: duplicate header line"},
        MalformedCase{"DuplicatePair", kHeader + "1\t2\t3\t4\n5\t2\t3\t4\n1\t2\t4\t9\n",
                      "f.tsv:4: duplicate rating of item 2 by user 1 (first at line 2)"},
        MalformedCase{"EmptyLine", kHeader + "1\t2\t3\t4\n\n5\t2\t3\t4\n", "f.tsv:3: empty line"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

RatingsTable ManyRatings(std::size_t n) {
  std::string text = kHeader;
  for (std::size_t i = 0; i < n; ++i) {
    text += std::to_string(i % 37) + "\t" + std::to_string(i) + "\t3\t" + std::to_string(i) + "\n";
  }
  Result<RatingsTable> table = ParseRatingsTsv(text, "many.tsv");
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return std::move(table).value();
}

std::vector<std::int64_t> Timestamps(const std::vector<Rating>& ratings) {
  std::vector<std::int64_t> out;
  for (const Rating& r : ratings) out.push_back(r.timestamp);
  return out;
}

TEST(RatingsSplitTest, SameSeedSameSplitDifferentSeedDifferentSplit) {
  const RatingsTable table = ManyRatings(1000);
  Result<RatingsSplit> a = SplitRatings(table, 0.1, 42);
  Result<RatingsSplit> b = SplitRatings(table, 0.1, 42);
  Result<RatingsSplit> c = SplitRatings(table, 0.1, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(Timestamps(a->test), Timestamps(b->test));
  EXPECT_EQ(Timestamps(a->train), Timestamps(b->train));
  EXPECT_NE(Timestamps(a->test), Timestamps(c->test));
}

TEST(RatingsSplitTest, FractionIsRespectedAndPartsCoverEverythingOnce) {
  const RatingsTable table = ManyRatings(1001);
  for (double fraction : {0.0, 0.1, 0.25, 0.5}) {
    Result<RatingsSplit> split = SplitRatings(table, fraction, 7);
    ASSERT_TRUE(split.ok());
    EXPECT_EQ(split->test.size(), static_cast<std::size_t>(std::llround(fraction * 1001))) << fraction;
    std::vector<std::int64_t> all = Timestamps(split->train);
    std::vector<std::int64_t> test = Timestamps(split->test);
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));  // table order kept
    EXPECT_TRUE(std::is_sorted(test.begin(), test.end()));
    all.insert(all.end(), test.begin(), test.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, Timestamps(table.ratings));
  }
}

TEST(RatingsSplitTest, TestSetIsSpreadOverTheFile) {
  const RatingsTable table = ManyRatings(1000);
  Result<RatingsSplit> split = SplitRatings(table, 0.5, 1);
  ASSERT_TRUE(split.ok());
  // A random half has elements in both halves of the file; a prefix would not.
  const auto in_first_half = std::count_if(split->test.begin(), split->test.end(),
                                           [](const Rating& r) { return r.timestamp < 500; });
  EXPECT_GT(in_first_half, 200);
  EXPECT_LT(in_first_half, 300);
}

TEST(RatingsSplitTest, FractionOutsideRangeIsRejected) {
  const RatingsTable table = ManyRatings(10);
  EXPECT_EQ(SplitRatings(table, 1.0, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitRatings(table, -0.1, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitRatings(table, std::nan(""), 1).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stalelearn::data
