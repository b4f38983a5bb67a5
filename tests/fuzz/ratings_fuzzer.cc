// Fuzzes the ratings TSV reader and the train/test split
// (framework/data/ratings.h): any text is rejected with a Status or gives a
// table whose indices, ids and ratings keep the documented rules.
#include <cmath>

#include "framework/data/ratings.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace stalelearn;
  const data::RatingsReadOptions options;
  Result<data::RatingsTable> parsed = data::ParseRatingsTsv(fuzz::AsText(data, size), "fuzz", options);
  if (!parsed.ok()) {
    FUZZ_CHECK(!parsed.status().message().empty());
    return 0;
  }
  const data::RatingsTable& t = *parsed;
  for (std::size_t i = 1; i < t.user_ids.size(); ++i) FUZZ_CHECK(t.user_ids[i - 1] < t.user_ids[i]);
  for (std::size_t i = 1; i < t.item_ids.size(); ++i) FUZZ_CHECK(t.item_ids[i - 1] < t.item_ids[i]);
  for (const data::Rating& r : t.ratings) {
    FUZZ_CHECK(static_cast<std::size_t>(r.user) < t.num_users());
    FUZZ_CHECK(static_cast<std::size_t>(r.item) < t.num_items());
    FUZZ_CHECK(std::isfinite(r.value) && r.value >= options.min_rating && r.value <= options.max_rating);
  }
  Result<data::RatingsSplit> split = data::SplitRatings(t, 0.25, size);
  FUZZ_CHECK(split.ok());
  FUZZ_CHECK(split->train.size() + split->test.size() == t.ratings.size());
  return 0;
}
