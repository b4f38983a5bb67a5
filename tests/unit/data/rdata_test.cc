// The R reader (apps/cli/rdata: unserialize, lazyload, frame) on fixtures
// these tests write themselves, valid and corrupt.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "apps/cli/rdata/frame.h"
#include "apps/cli/rdata/lazyload.h"
#include "apps/cli/rdata/unserialize.h"
#include "framework/data/text_lines.h"
#include "tests/unit/data/rdata_fixture.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data::rdata {
namespace {

using testing::ScratchDir;
using testing::XdrWriter;

const std::vector<std::string> kAllColumns = {"userId", "movieId", "rating", "genre", "title", "timestamp"};

class FixtureFrameTest : public ::testing::TestWithParam<int> {};

TEST_P(FixtureFrameTest, UnserializesDataFrameWithFactorAndSharedSymbols) {
  Result<RObjectPtr> frame = Unserialize(testing::SerializeFixtureFrame(GetParam()));
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  Result<DataFrameShape> shape = InspectDataFrame(**frame);
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->rows, 5u);
  EXPECT_EQ(shape->column_names, kAllColumns);
  // "class" is written once as a symbol and later as a REFSXP: both resolve.
  const RObject& genre = *(*frame)->elements[3];
  EXPECT_TRUE(genre.Inherits("factor"));
  EXPECT_TRUE((*frame)->Inherits("data.frame"));
  ASSERT_NE(genre.Attribute("levels"), nullptr);
  EXPECT_EQ(genre.Attribute("levels")->strings.size(), 2u);
}

TEST_P(FixtureFrameTest, LazyLoadDbExportsTheExpectedTsv) {
  ScratchDir dir;
  testing::XdrWriter other(GetParam());
  other.Reals({1.0, 2.0});
  testing::WriteLazyLoadDb(dir.path(),
                           {{"other", other.bytes()}, {"ratings", testing::SerializeFixtureFrame(GetParam())}});
  Result<LazyLoadDb> db = LazyLoadDb::Open(dir.path() / "Rdata");
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ(db->ObjectNames(), (std::vector<std::string>{"other", "ratings"}));
  Result<RObjectPtr> frame = db->Load("ratings");
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  Result<std::string> tsv = DataFrameToTsv(**frame, kAllColumns);
  ASSERT_TRUE(tsv.ok()) << tsv.status().ToString();
  EXPECT_EQ(*tsv, testing::FixtureFrameTsv());
}

INSTANTIATE_TEST_SUITE_P(SerializationVersions, FixtureFrameTest, ::testing::Values(2, 3));

TEST(RDataFrameTest, ExportsColumnsInTheRequestedOrder) {
  Result<RObjectPtr> frame = Unserialize(testing::SerializeFixtureFrame(3));
  ASSERT_TRUE(frame.ok());
  Result<std::string> tsv = DataFrameToTsv(**frame, std::vector<std::string>{"rating", "userId"});
  ASSERT_TRUE(tsv.ok()) << tsv.status().ToString();
  EXPECT_EQ(*tsv, "rating\tuserId\n2.5\t1\n3\t1\n0.5\t2\n5\t7\n1e+05\t7\n");
}

TEST(RDataFrameTest, UnknownColumnListsTheColumnsThereAre) {
  Result<RObjectPtr> frame = Unserialize(testing::SerializeFixtureFrame(3));
  ASSERT_TRUE(frame.ok());
  Result<std::string> tsv = DataFrameToTsv(**frame, std::vector<std::string>{"userId", "year"});
  ASSERT_FALSE(tsv.ok());
  EXPECT_EQ(tsv.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tsv.status().message().find("no column 'year' (it has: userId, movieId"), std::string::npos)
      << tsv.status().message();
}

TEST(RDataFrameTest, NonFrameIsRejected) {
  XdrWriter w(3);
  w.Integers({1, 2, 3});
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(InspectDataFrame(**object).status().code(), StatusCode::kInvalidArgument);
}

TEST(RFormatTest, DoublesPrintAsRPrintsThem) {
  EXPECT_EQ(FormatRDouble(2.5), "2.5");
  EXPECT_EQ(FormatRDouble(3.0), "3");
  EXPECT_EQ(FormatRDouble(-1.5), "-1.5");
  EXPECT_EQ(FormatRDouble(0.0), "0");
  EXPECT_EQ(FormatRDouble(100000.0), "1e+05");
  EXPECT_EQ(FormatRDouble(123456.0), "123456");
  EXPECT_EQ(FormatRDouble(0.0001), "1e-04");
  EXPECT_EQ(FormatRDouble(0.001), "0.001");
  EXPECT_EQ(FormatRDouble(1.0 / 3.0), "0.333333333333333");
  EXPECT_EQ(FormatRDouble(1e-300), "1e-300");
  EXPECT_EQ(FormatRDouble(std::numeric_limits<double>::infinity()), "Inf");
  EXPECT_EQ(FormatRDouble(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatRDouble(std::nan("")), "NaN");
  EXPECT_EQ(FormatRDouble(std::bit_cast<double>(0x7FF00000000007A2ULL)), "NA");  // R's NA_real_
}

TEST(RUnserializeTest, CompactIntSeqExpandsToPlainIntegers) {
  XdrWriter w(3);
  w.CompactIntSeq(4, 7);
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ((*object)->type, SexpType::kInteger);
  EXPECT_EQ((*object)->integers, (std::vector<std::int32_t>{7, 8, 9, 10}));
}

TEST(RUnserializeTest, AltrepSequencesShareOneExpansionBudget) {
  // list(1:600, 1:600): each fits a budget of 1000 elements, both do not
  // (a few bytes each, many of them could otherwise exhaust memory).
  XdrWriter w(3);
  w.List({[](XdrWriter& x) { x.CompactIntSeq(600, 1); }, [](XdrWriter& x) { x.CompactIntSeq(600, 1); }});
  const UnserializeLimits limits{.max_expanded_elements = 1000};
  Result<RObjectPtr> object = Unserialize(w.bytes(), limits);
  ASSERT_FALSE(object.ok()) << "1200 elements expanded within a budget of 1000";
  EXPECT_EQ(object.status().code(), StatusCode::kDataLoss) << object.status().ToString();
  EXPECT_TRUE(Unserialize(w.bytes(), UnserializeLimits{.max_expanded_elements = 1200}).ok());
}

TEST(RUnserializeTest, EnvironmentsEnterTheReferenceTable) {
  // list(env, env) where env's enclosure is itself: R writes the environment
  // once and REFSXP 1 for every later mention.
  XdrWriter w(2);
  w.Flags(19);
  w.Int(2);
  w.Flags(4);            // ENVSXP, becomes reference 1
  w.Int(0);              // not locked
  w.Int(255 | 1 << 8);   // enclosure: itself
  w.Nil();               // frame
  w.Nil();               // hash table
  w.Nil();               // attributes
  w.Int(255 | 1 << 8);   // second element: the same environment
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  ASSERT_EQ((*object)->elements.size(), 2u);
  EXPECT_EQ((*object)->elements[0]->type, SexpType::kEnvironment);
  EXPECT_EQ((*object)->elements[0], (*object)->elements[1]);
}

TEST(RUnserializeTest, WrapperAltrepUnwrapsAndKeepsAttributes) {
  XdrWriter w(3);
  w.Flags(238);  // ALTREP wrap_real(c(1.5, 2), metadata) with names attribute
  w.Flags(2);
  w.Symbol("wrap_real");
  w.Flags(2);
  w.Symbol("base");
  w.Flags(2);
  w.Integers({14});
  w.Nil();
  w.Flags(2);  // state: pairlist(wrapped, metadata)
  w.Reals({1.5, 2});
  w.Flags(2);
  w.Integers({0, 0});
  w.Nil();
  w.Attributes({{"names", [](XdrWriter& x) { x.Strings({"a", "b"}); }}});
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ((*object)->reals, (std::vector<double>{1.5, 2}));
  ASSERT_NE((*object)->Attribute("names"), nullptr);
  EXPECT_EQ((*object)->Attribute("names")->strings[1], "b");
}

TEST(RUnserializeTest, CallContinuesAsPairlist) {
  XdrWriter w(3);
  w.Flags(6);  // LANGSXP: log(x, base = 2)
  w.Symbol("log");
  w.Flags(2);
  w.Symbol("x");
  w.Flags(2, false, true);
  w.Symbol("base");
  w.Reals({2});
  w.Nil();
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_TRUE(object.ok()) << object.status().ToString();
  EXPECT_EQ((*object)->type, SexpType::kLanguage);
  ASSERT_EQ((*object)->cells.size(), 3u);
  EXPECT_EQ((*object)->cells[0].value->text, "log");
  EXPECT_EQ((*object)->cells[2].tag, "base");
}

TEST(RUnserializeTest, BadMagicIsDataLoss) {
  std::vector<std::uint8_t> bytes = testing::SerializeFixtureFrame(3);
  bytes[0] = 'A';
  Result<RObjectPtr> object = Unserialize(bytes);
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(object.status().message().find("bad magic"), std::string::npos) << object.status().message();
  EXPECT_NE(Unserialize(testing::Gzip(testing::SerializeFixtureFrame(3))).status().message().find("gzip"),
            std::string::npos);
}

TEST(RUnserializeTest, EveryTruncationIsAnErrorNotACrash) {
  const std::vector<std::uint8_t> bytes = testing::SerializeFixtureFrame(3);
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    Result<RObjectPtr> object = Unserialize(std::span(bytes).first(size));
    ASSERT_FALSE(object.ok()) << "prefix of " << size << " bytes parsed";
    EXPECT_EQ(object.status().code(), StatusCode::kDataLoss) << object.status().ToString();
  }
}

TEST(RUnserializeTest, FlippedBytesGiveAnObjectOrAnErrorNeverACrash) {
  const std::vector<std::uint8_t> bytes = testing::SerializeFixtureFrame(3);
  const UnserializeLimits small{.max_depth = 64, .max_expanded_elements = 1000};
  int errors = 0;
  for (std::size_t i = 2; i < bytes.size(); ++i) {
    for (std::uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<std::uint8_t> corrupt = bytes;
      corrupt[i] ^= mask;
      Result<RObjectPtr> object = Unserialize(corrupt, small);
      if (!object.ok()) {
        ++errors;
        EXPECT_TRUE(object.status().code() == StatusCode::kDataLoss ||
                    object.status().code() == StatusCode::kUnimplemented)
            << object.status().ToString();
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(RUnserializeTest, DanglingReferenceIsRejected) {
  XdrWriter w(2);
  w.Int(255 | (7 << 8));  // REFSXP to reference 7: none exist
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.status().message().find("reference 7 to none of the 0"), std::string::npos)
      << object.status().message();
}

TEST(RUnserializeTest, AbsurdLengthIsRejectedBeforeAllocating) {
  XdrWriter w(3);
  w.Flags(14);
  w.Int(-1);  // long length follows
  w.Int(0x7fffffff);
  w.Int(0);
  Result<RObjectPtr> object = Unserialize(w.bytes());
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.status().message().find("exceeds"), std::string::npos) << object.status().message();
}

TEST(RUnserializeTest, UnsupportedTypeAndVersionAreNamed) {
  XdrWriter bytecode(3);
  bytecode.Flags(21);
  EXPECT_NE(Unserialize(bytecode.bytes()).status().message().find("bytecode"), std::string::npos);
  XdrWriter version4(3);
  std::vector<std::uint8_t> bytes = version4.bytes();
  bytes[5] = 4;
  EXPECT_NE(Unserialize(bytes).status().message().find("version 4"), std::string::npos);
}

TEST(RUnserializeTest, DeeplyNestedListsHitTheDepthLimit) {
  XdrWriter w(3);
  for (int i = 0; i < 100; ++i) {
    w.Flags(19);
    w.Int(1);
  }
  w.Nil();
  EXPECT_TRUE(Unserialize(w.bytes()).ok());
  Result<RObjectPtr> object = Unserialize(w.bytes(), UnserializeLimits{.max_depth = 50});
  ASSERT_FALSE(object.ok());
  EXPECT_NE(object.status().message().find("nesting deeper than 50"), std::string::npos);
}

class LazyLoadCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteLazyLoadDb(dir_.path(), {{"ratings", testing::SerializeFixtureFrame(3)}});
    Result<std::string> rdb = ReadWholeFile(dir_.path() / "Rdata.rdb");
    ASSERT_TRUE(rdb.ok());
    rdb_ = *rdb;
  }
  Status LoadStatus() {
    Result<LazyLoadDb> db = LazyLoadDb::Open(dir_.path() / "Rdata");
    if (!db.ok()) return db.status();
    return db->Load("ratings").status();
  }

  ScratchDir dir_;
  std::string rdb_;
};

TEST_F(LazyLoadCorruptionTest, TruncatedRdbIsReported) {
  dir_.Write("Rdata.rdb", rdb_.substr(0, rdb_.size() / 2));
  Status status = LoadStatus();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("beyond the end of the file"), std::string::npos) << status.message();
}

TEST_F(LazyLoadCorruptionTest, CorruptZlibStreamIsReported) {
  std::string corrupt = rdb_;
  for (std::size_t i = 6; i < corrupt.size(); i += 3) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  dir_.Write("Rdata.rdb", corrupt);
  Status status = LoadStatus();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
  EXPECT_NE(status.message().find("entry 'ratings'"), std::string::npos) << status.message();
}

TEST_F(LazyLoadCorruptionTest, WrongDeclaredLengthIsReported) {
  std::string corrupt = rdb_;
  corrupt[3] = static_cast<char>(corrupt[3] + 1);  // uncompressed length off by one
  dir_.Write("Rdata.rdb", corrupt);
  Status status = LoadStatus();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss) << status.ToString();
}

TEST_F(LazyLoadCorruptionTest, IndexThatIsNotGzipIsReported) {
  dir_.Write("Rdata.rdx", "this is not a gzip stream at all");
  Status status = LoadStatus();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("Rdata.rdx"), std::string::npos) << status.message();
}

TEST_F(LazyLoadCorruptionTest, MissingIndexAndMissingObjectAreNotFound) {
  Result<LazyLoadDb> db = LazyLoadDb::Open(dir_.path() / "Rdata");
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->Load("movielens").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(LazyLoadDb::Open(dir_.path() / "Nothing").status().code(), StatusCode::kNotFound);
}

TEST(InflateTest, ExactSizeSucceedsAndOneByteLessFails) {
  const std::vector<std::uint8_t> data(10000, 'x');
  const std::vector<std::uint8_t> compressed = testing::Zlib(data);
  Result<std::vector<std::uint8_t>> exact = Inflate(compressed, data.size());
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(*exact, data);
  EXPECT_EQ(Inflate(compressed, data.size() - 1).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(Inflate(std::span(compressed).first(compressed.size() / 2), data.size()).status().message(),
            "compressed stream is truncated");
}

}  // namespace
}  // namespace stalelearn::data::rdata
