// Synthetic ratings: the same seed writes the same bytes, the counts are the
// ones asked for, the file reads back with the ratings reader, the noise
// floor follows the noise, the oracle bound follows the ratings per item,
// popularity follows the Zipf exponent, and bad arguments get one clear error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "framework/data/ratings.h"
#include "framework/data/synth_ratings.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::data {
namespace {

std::string Slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

SynthRatingsSpec SmallSpec() {
  SynthRatingsSpec spec;
  spec.users = 300;
  spec.items = 1000;
  spec.ratings = 20011;  // not a multiple of the users: counts differ by one
  spec.rank = 5;
  spec.seed = 7;
  return spec;
}

TEST(SynthRatingsTest, SameSeedWritesTheSameBytesAndAnotherSeedOthers) {
  testing::ScratchDir dir;
  const SynthRatingsSpec spec = SmallSpec();
  ASSERT_TRUE(WriteSynthRatings(spec, dir.path() / "a.tsv").ok());
  ASSERT_TRUE(WriteSynthRatings(spec, dir.path() / "b.tsv").ok());
  SynthRatingsSpec other = spec;
  other.seed = 8;
  ASSERT_TRUE(WriteSynthRatings(other, dir.path() / "c.tsv").ok());
  const std::string a = Slurp(dir.path() / "a.tsv");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, Slurp(dir.path() / "b.tsv"));
  EXPECT_NE(a, Slurp(dir.path() / "c.tsv"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "a.tsv.partial"));
}

TEST(SynthRatingsTest, WritesExactlyTheRatingsAskedForSpreadEvenlyOverUsers) {
  testing::ScratchDir dir;
  const SynthRatingsSpec spec = SmallSpec();
  Result<SynthRatingsResult> result = WriteSynthRatings(spec, dir.path() / "r.tsv");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->ratings, spec.ratings);
  EXPECT_EQ(result->users, spec.users);
  EXPECT_EQ(result->bytes, std::filesystem::file_size(dir.path() / "r.tsv"));

  Result<RatingsTable> table = ReadRatingsTsv(dir.path() / "r.tsv");  // also: no pair twice, values in range
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(static_cast<std::int64_t>(table->ratings.size()), spec.ratings);
  EXPECT_EQ(static_cast<std::int64_t>(table->num_users()), spec.users);
  EXPECT_EQ(static_cast<std::int64_t>(table->num_items()), result->items_rated);
  EXPECT_LE(table->item_ids.back(), spec.items);
  EXPECT_GE(table->item_ids.front(), 1);
  std::vector<std::int64_t> per_user(table->num_users(), 0);
  for (const Rating& r : table->ratings) ++per_user[static_cast<std::size_t>(r.user)];
  const auto [fewest, most] = std::minmax_element(per_user.begin(), per_user.end());
  EXPECT_EQ(*fewest, spec.ratings / spec.users);
  EXPECT_EQ(*most, spec.ratings / spec.users + 1);
}

TEST(SynthRatingsTest, NoiseFloorFollowsTheNoise) {
  testing::ScratchDir dir;
  SynthRatingsSpec spec = SmallSpec();
  spec.noise = 0.4;
  Result<SynthRatingsResult> noisy = WriteSynthRatings(spec, dir.path() / "n.tsv");
  ASSERT_TRUE(noisy.ok());
  EXPECT_LT(noisy->clipped_fraction, 0.05);  // mean 3.5: about 3% reach 5 stars
  EXPECT_NEAR(noisy->noise_floor, 0.4, 0.03);
  spec.noise = 0;
  Result<SynthRatingsResult> exact = WriteSynthRatings(spec, dir.path() / "e.tsv");
  ASSERT_TRUE(exact.ok());
  EXPECT_LT(exact->noise_floor, 0.01);  // two decimals: rounding only
  // The ratings vary with the planted model: far more than the noise floor.
  Result<RatingsTable> table = ReadRatingsTsv(dir.path() / "e.tsv");
  ASSERT_TRUE(table.ok());
  double sum = 0, squares = 0;
  for (const Rating& r : table->ratings) sum += r.value, squares += double{r.value} * r.value;
  const double n = static_cast<double>(table->ratings.size());
  EXPECT_GT(std::sqrt(squares / n - (sum / n) * (sum / n)), 0.5);
}

// The oracle bound is the noise floor plus what estimating each item from its
// other ratings must cost: close to the floor when every item has hundreds
// of ratings, far above it when most items have one, falling as ratings are
// added, and the items' whole prior variance (0.09 + 0.25) when no item has
// a second rating.
TEST(SynthRatingsTest, OracleBoundAddsWhatFewRatingsPerItemCost) {
  testing::ScratchDir dir;
  const auto bound = [&](std::int64_t items, std::int64_t ratings, double zipf) {
    SynthRatingsSpec spec = SmallSpec();
    spec.items = items;
    spec.ratings = ratings;
    spec.zipf = zipf;
    Result<SynthRatingsResult> r = WriteSynthRatings(spec, dir.path() / "o.tsv");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::pair(r->noise_floor, r->oracle_bound) : std::pair(0.0, 0.0);
  };
  // 300 users rate all 20 items: 300 ratings per item.
  const auto [dense_floor, dense] = bound(20, 300 * 20, 0);
  EXPECT_GT(dense, dense_floor);
  EXPECT_LT(dense, dense_floor * 1.03);
  // 6000 ratings over 100,000 items: almost every item rated once.
  const auto [sparse_floor, sparse] = bound(100000, 6000, 0);
  const double prior = 0.3 * 0.3 + 0.25;  // an item's bias and interaction variance
  EXPECT_NEAR(sparse * sparse, sparse_floor * sparse_floor + prior, 0.03);
  // Between the two, more ratings on the same items lower it.
  const double fewer = bound(1000, 3000, 1).second;
  const double more = bound(1000, 30000, 1).second;
  EXPECT_GT(fewer, more);
  EXPECT_GT(more, dense_floor);
}

// Ratings of the most rated item over the median item's.
double PopularitySkew(const SynthRatingsSpec& spec, const std::filesystem::path& file) {
  if (!WriteSynthRatings(spec, file).ok()) return -1;
  Result<RatingsTable> table = ReadRatingsTsv(file);
  if (!table.ok()) return -1;
  std::vector<double> count(table->num_items(), 0);
  for (const Rating& r : table->ratings) ++count[static_cast<std::size_t>(r.item)];
  std::sort(count.begin(), count.end());
  return count.back() / count[count.size() / 2];
}

TEST(SynthRatingsTest, ZipfExponentSkewsItemPopularity) {
  testing::ScratchDir dir;
  SynthRatingsSpec spec = SmallSpec();
  spec.zipf = 0;
  const double uniform = PopularitySkew(spec, dir.path() / "u.tsv");
  spec.zipf = 1.2;
  const double skewed = PopularitySkew(spec, dir.path() / "z.tsv");
  EXPECT_GT(uniform, 0);
  EXPECT_LT(uniform, 3);    // 20 per item on average, Poisson-like spread
  EXPECT_GT(skewed, 20);    // the top item is hundreds of times the median one
}

TEST(SynthRatingsTest, BadArgumentsGetOneLineNamingTheOption) {
  struct Case {
    void (*change)(SynthRatingsSpec&);
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](SynthRatingsSpec& s) { s.users = 0; }, "--users must be in [1, "},
      {[](SynthRatingsSpec& s) { s.items = -3; }, "--items must be in [1, "},
      {[](SynthRatingsSpec& s) { s.ratings = 0; }, "--ratings must be in [1, "},
      {[](SynthRatingsSpec& s) { s.rank = 0; }, "--rank must be in [1, 1024], got 0"},
      {[](SynthRatingsSpec& s) { s.zipf = -1; }, "--zipf must be in [0, 10], got -1"},
      {[](SynthRatingsSpec& s) { s.noise = std::nan(""); }, "--noise must be in [0, 10], got nan"},
      {[](SynthRatingsSpec& s) { s.ratings = 300 * 1000 + 1; }, "more than --items 1000"},
  };
  testing::ScratchDir dir;
  for (const Case& c : cases) {
    SynthRatingsSpec spec = SmallSpec();
    c.change(spec);
    Result<SynthRatingsResult> result = WriteSynthRatings(spec, dir.path() / "bad.tsv");
    ASSERT_FALSE(result.ok()) << c.expected;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(c.expected), std::string::npos) << result.status().message();
    EXPECT_EQ(result.status().message().find('\n'), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "bad.tsv"));
}

TEST(SynthRatingsTest, EveryItemRatedByEveryUserStillFinishes) {
  // Distinct draws from a steep Zipf table fall back to the most popular free
  // items: a user rating all items must not loop forever.
  testing::ScratchDir dir;
  SynthRatingsSpec spec;
  spec.users = 3;
  spec.items = 50;
  spec.ratings = 150;
  spec.zipf = 4;
  Result<SynthRatingsResult> result = WriteSynthRatings(spec, dir.path() / "all.tsv");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->items_rated, 50);
  EXPECT_TRUE(ReadRatingsTsv(dir.path() / "all.tsv").ok());
}

}  // namespace
}  // namespace stalelearn::data
