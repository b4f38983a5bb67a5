// Synthetic ratings at any scale, from a planted biased low-rank model, in
// the ratings TSV format ReadRatingsTsv reads (ratings.h), so any ratings app
// trains on them (`stalelearn data synth ratings`, apps/cli/data_command.cc).
//
// The planted model (all draws from one seed; see synth_ratings.cc):
//   r(u, i) = clamp(mean + b_u + b_i + <p_u, q_i> + noise, 0.5, 5), 2 decimals
//   b_u, b_i ~ N(0, 0.3^2); p_u, q_i ~ N(0, sqrt(0.25 / rank) I), so <p, q>
//   has standard deviation 0.5 whatever the rank; noise ~ N(0, noise^2).
// Users 1..U each rate floor((u+1)N/U) - floor(uN/U) distinct items (so the
// file holds exactly N ratings); each item is drawn by Zipf popularity
// (weight 1/rank^zipf, rank 1 the most popular) over a seeded random
// permutation of the item ids 1..I (popular items are not the low ids, so
// range partitioning spreads them). A user's items are written in ascending id.
//
// Streaming: memory is O(items * rank) (the item factors and the Zipf table),
// whatever the number of ratings; output goes through a 1 MiB buffer to a
// temporary file renamed into place at the end. The same spec gives the same
// bytes (integer arithmetic, portable random streams and libm's log/sqrt).
//
//   SynthRatingsSpec spec{.users = 1000, .items = 500, .ratings = 20000};
//   Result<SynthRatingsResult> r = WriteSynthRatings(spec, dir / "ratings.tsv");
//   // r->noise_floor: the RMSE of the planted model on the written ratings
//   // r->oracle_bound: what no learner can expect to beat on them (below)
//
// Thread-safety: reentrant; no shared state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "framework/core/status.h"

namespace stalelearn::data {

struct SynthRatingsSpec {
  std::int64_t users = 0;
  std::int64_t items = 0;
  std::int64_t ratings = 0;
  int rank = 20;
  double zipf = 1.0;   // item popularity exponent, >= 0 (0: uniform)
  double noise = 0.5;  // standard deviation of the Gaussian noise, >= 0
  std::uint64_t seed = 1;
  double mean = 3.5;   // the planted global mean
};

struct SynthRatingsResult {
  std::int64_t ratings = 0;
  std::int64_t users = 0;           // users with at least one rating
  std::int64_t items_rated = 0;     // distinct items rated
  std::uint64_t bytes = 0;          // of the written file
  double noise_floor = 0;           // RMSE of clamp(planted prediction) on the written values
  // A lower bound on the test RMSE any learner can expect on these ratings:
  // sqrt(noise_floor^2 + the mean excess an oracle still has that knows every
  // user's bias and factors exactly and estimates each item's, Bayes-
  // optimally, from the item's other ratings). Rarely rated items keep it
  // above the noise floor whatever the trainer. Gaussian model: clamping
  // (clipped_fraction) is left out, so it is approximate where much is clipped.
  double oracle_bound = 0;
  double clipped_fraction = 0;      // ratings clamped to [0.5, 5]
};

// InvalidArgument naming the option and value for a bad spec (non-positive
// counts, more ratings per user than items, rank outside [1, 1024], negative
// or non-finite zipf / noise).
Status ValidateSynthRatingsSpec(const SynthRatingsSpec& spec);

// Validates, then writes the file (atomically: a temporary beside it, renamed).
Result<SynthRatingsResult> WriteSynthRatings(const SynthRatingsSpec& spec, const std::filesystem::path& file);

// The parameters and results as "key: value" lines (written beside the data).
std::string DescribeSynthRatings(const SynthRatingsSpec& spec, const SynthRatingsResult& result);

}  // namespace stalelearn::data
