// Ratings datasets (user, item, rating triples): a TSV reader and a
// deterministic train/test split.
//
// File format: a header line naming the columns, in this order,
//   user<TAB>item<TAB>rating[<TAB>timestamp]
// (any names that are not numbers; `stalelearn data synth ratings` writes
// user/item/rating), then one rating per line with the same number of
// fields. Ids are integers, ratings finite numbers inside [min_rating,
// max_rating], timestamps integers. A (user, item) pair may appear once. Any
// other line is rejected with InvalidArgument "file:line: reason", which
// names a column by the file's own name for it.
//
// Ids are remapped to dense indices in ascending id order, so the mapping does
// not depend on the order of the lines.
//
// Thread-safety: free functions are reentrant; the returned values are plain
// data owned by the caller.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::data {

// Dense, 0-based indices (strong types: a user index is never an item index).
enum class UserIndex : std::uint32_t {};
enum class ItemIndex : std::uint32_t {};

struct Rating {
  UserIndex user;
  ItemIndex item;
  float value;
  std::int64_t timestamp;  // 0 when the file has no timestamp column
};

struct RatingsTable {
  std::vector<Rating> ratings;         // in file order
  std::vector<std::int64_t> user_ids;  // UserIndex -> original id, ascending
  std::vector<std::int64_t> item_ids;  // ItemIndex -> original id, ascending

  std::size_t num_users() const { return user_ids.size(); }
  std::size_t num_items() const { return item_ids.size(); }
};

struct RatingsReadOptions {
  double min_rating = 0.5;
  double max_rating = 5.0;
  // Pieces the data lines are parsed in, on as many threads (0: one per
  // core, at most 8, for text of 16 MiB or more; else 1).
  int parse_pieces = 0;
};

Result<RatingsTable> ReadRatingsTsv(const std::filesystem::path& file, const RatingsReadOptions& options = {});
// Same, from text in memory; `source` names it in error messages.
Result<RatingsTable> ParseRatingsTsv(std::string_view text, std::string_view source,
                                     const RatingsReadOptions& options = {});

struct RatingsSplit {
  std::vector<Rating> train;  // both parts keep the table's order
  std::vector<Rating> test;
};

// Holds out exactly round(test_fraction * n) ratings, 0 <= test_fraction < 1.
// Algorithm (portable, documented so other tools can reproduce it): a
// SplitMix64 stream seeded with `seed` drives a partial Fisher-Yates shuffle
// of the indices 0..n-1 (step i, for i < k, swaps i with i + Bounded(n - i),
// where Bounded(m) draws r = next() until r >= 2^64 mod m and returns r mod m);
// the first k shuffled indices form the test set. The same table, fraction and
// seed always give the same split.
Result<RatingsSplit> SplitRatings(const RatingsTable& table, double test_fraction, std::uint64_t seed);
// The same split, taking the table's ratings: the training part stays in
// their array, compacted in place (no second copy of 18 M ratings).
Result<RatingsSplit> SplitRatings(std::vector<Rating>&& ratings, double test_fraction, std::uint64_t seed);

}  // namespace stalelearn::data
