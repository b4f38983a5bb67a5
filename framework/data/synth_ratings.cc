#include "framework/data/synth_ratings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace stalelearn::data {
namespace {

constexpr double kMinRating = 0.5;
constexpr double kMaxRating = 5.0;
constexpr double kBiasSd = 0.3;
constexpr double kInteractionSd = 0.5;  // of <p_u, q_i>
constexpr int kMaxRank = 1024;
constexpr std::int64_t kMaxIds = (std::int64_t{1} << 31) - 1;  // readers index users and items with 32 bits
constexpr std::size_t kFlushBytes = 1 << 20;

// Stream tags: every random quantity has its own stream, derived from the
// seed, so changing one part of the generator never shifts another.
constexpr std::uint64_t kTagPermutation = 1, kTagItem = 2, kTagUser = 3;

std::uint64_t Mix64(std::uint64_t z) {  // SplitMix64 finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// SplitMix64 stream with uniform and Gaussian draws written out here (the
// standard library's distributions differ between implementations).
class Stream {
 public:
  Stream(std::uint64_t seed, std::uint64_t tag, std::uint64_t index)
      : state_(Mix64(Mix64(seed ^ (tag << 56)) ^ index)) {}
  std::uint64_t Next() { return Mix64(state_ += 0x9E3779B97F4A7C15ull); }
  // [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // [0, bound): Lemire's multiply-high (bias < bound / 2^64).
  std::uint64_t Below(std::uint64_t bound) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(Next()) * bound) >> 64);
  }
  // Marsaglia's polar method (log and sqrt only), one spare kept.
  double Gaussian() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double x, y, s;
    do {
      x = 2 * Uniform() - 1;
      y = 2 * Uniform() - 1;
      s = x * x + y * y;
    } while (s >= 1 || s == 0);
    const double f = std::sqrt(-2 * std::log(s) / s);
    spare_ = y * f;
    has_spare_ = true;
    return x * f;
  }

 private:
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// Vose's alias table over popularity ranks 0..n-1 with weight (r+1)^-zipf:
// O(1) per draw, exact up to double rounding.
class ZipfAlias {
 public:
  ZipfAlias(std::int64_t n, double zipf) : accept_(static_cast<std::size_t>(n)), alias_(static_cast<std::size_t>(n)) {
    std::vector<double> scaled(accept_.size());
    double total = 0;
    for (std::size_t r = 0; r < scaled.size(); ++r) total += scaled[r] = std::pow(static_cast<double>(r + 1), -zipf);
    std::vector<std::uint32_t> small, large;
    for (std::size_t r = 0; r < scaled.size(); ++r) {
      scaled[r] *= static_cast<double>(scaled.size()) / total;
      (scaled[r] < 1 ? small : large).push_back(static_cast<std::uint32_t>(r));
    }
    while (!small.empty() && !large.empty()) {
      const std::uint32_t s = small.back(), l = large.back();
      small.pop_back();
      accept_[s] = scaled[s];
      alias_[s] = l;
      scaled[l] -= 1 - scaled[s];
      if (scaled[l] < 1) {
        large.pop_back();
        small.push_back(l);
      }
    }
    for (std::uint32_t r : large) accept_[r] = 1, alias_[r] = r;
    for (std::uint32_t r : small) accept_[r] = 1, alias_[r] = r;  // rounding leftovers
  }
  std::uint32_t Draw(Stream& rng) const {
    const auto r = static_cast<std::uint32_t>(rng.Below(accept_.size()));
    return rng.Uniform() < accept_[r] ? r : alias_[r];
  }

 private:
  std::vector<double> accept_;
  std::vector<std::uint32_t> alias_;
};

// The expected squared error that not knowing item i's bias and factors adds
// to a rating of i by a random user, when every user's bias and factors are
// known and i's are estimated, Bayes-optimally, from `others` of its ratings:
// x^T S x with x = (1, p_u) and S the posterior covariance of (b_i, q_i),
// (P0 + X^T X / noise^2)^-1. X^T X (the raters' x x^T summed) is replaced by
// its mean, others * diag(1, factor_var I); S is convex in X^T X, so by
// Jensen this is at most the true expected excess: a lower bound.
double ItemEstimationExcess(std::uint32_t others, int rank, double factor_var, double noise) {
  const double bias_var = kBiasSd * kBiasSd;
  const double n = others;
  if (noise == 0) return others == 0 ? bias_var + rank * factor_var * factor_var : 0.0;
  const double precision = n / (noise * noise);  // of one rating, per unit of x's second moment
  const double bias = 1 / (1 / bias_var + precision);
  const double factor = 1 / (1 / factor_var + precision * factor_var);
  return bias + rank * factor_var * factor;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

Status WriteOrFail(std::FILE* f, const std::string& bytes, const std::filesystem::path& file) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    return Internal(fmt::format("{}: write failed: {}", file.string(), std::strerror(errno)));
  }
  return Status::Ok();
}

// Appends "user<TAB>item<TAB>x.yy\n" (value given in hundredths).
void AppendLine(std::string& out, std::int64_t user, std::int64_t item, std::int64_t cents) {
  fmt::format_to(std::back_inserter(out), "{}\t{}\t{}.{:02d}\n", user, item, cents / 100, cents % 100);
}

}  // namespace

Status ValidateSynthRatingsSpec(const SynthRatingsSpec& spec) {
  auto count = [](std::string_view option, std::int64_t value, std::int64_t max) -> Status {
    if (value >= 1 && value <= max) return Status::Ok();
    return InvalidArgument(fmt::format("--{} must be in [1, {}], got {}", option, max, value));
  };
  STALELEARN_RETURN_IF_ERROR(count("users", spec.users, kMaxIds));
  STALELEARN_RETURN_IF_ERROR(count("items", spec.items, kMaxIds));
  STALELEARN_RETURN_IF_ERROR(count("ratings", spec.ratings, std::int64_t{1} << 40));
  STALELEARN_RETURN_IF_ERROR(count("rank", spec.rank, kMaxRank));
  const std::int64_t per_user = (spec.ratings + spec.users - 1) / spec.users;
  if (per_user > spec.items) {
    return InvalidArgument(fmt::format("--ratings {} over --users {} is up to {} distinct items per user, more than "
                                       "--items {}",
                                       spec.ratings, spec.users, per_user, spec.items));
  }
  if (!(spec.zipf >= 0 && spec.zipf <= 10)) {
    return InvalidArgument(fmt::format("--zipf must be in [0, 10], got {}", spec.zipf));
  }
  if (!(spec.noise >= 0 && spec.noise <= 10)) {
    return InvalidArgument(fmt::format("--noise must be in [0, 10], got {}", spec.noise));
  }
  return Status::Ok();
}

Result<SynthRatingsResult> WriteSynthRatings(const SynthRatingsSpec& spec, const std::filesystem::path& file) {
  STALELEARN_RETURN_IF_ERROR(ValidateSynthRatingsSpec(spec));
  const auto items = static_cast<std::size_t>(spec.items);
  const auto rank = static_cast<std::size_t>(spec.rank);
  const double factor_sd = std::sqrt(kInteractionSd / std::sqrt(static_cast<double>(spec.rank)));

  // Popularity rank -> item id - 1: a seeded Fisher-Yates permutation.
  std::vector<std::uint32_t> item_of_rank(items);
  for (std::size_t r = 0; r < items; ++r) item_of_rank[r] = static_cast<std::uint32_t>(r);
  Stream permute(spec.seed, kTagPermutation, 0);
  for (std::size_t r = items - 1; r > 0; --r) std::swap(item_of_rank[r], item_of_rank[permute.Below(r + 1)]);
  const ZipfAlias popularity(spec.items, spec.zipf);

  // Item factors then bias, row i - 1 for item id i; one stream per item.
  std::vector<float> item_rows(items * (rank + 1));
  for (std::size_t i = 0; i < items; ++i) {
    Stream rng(spec.seed, kTagItem, i);
    float* row = &item_rows[i * (rank + 1)];
    for (std::size_t f = 0; f < rank; ++f) row[f] = static_cast<float>(factor_sd * rng.Gaussian());
    row[rank] = static_cast<float>(kBiasSd * rng.Gaussian());
  }

  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  const std::filesystem::path temporary = file.string() + ".partial";
  std::unique_ptr<std::FILE, FileCloser> out(std::fopen(temporary.c_str(), "wb"));
  if (!out) return NotFound(fmt::format("{}: cannot create: {}", temporary.string(), std::strerror(errno)));

  SynthRatingsResult result;
  std::string buffer = "user\titem\trating\n";
  buffer.reserve(kFlushBytes + 256);
  std::vector<std::uint32_t> taken_by(items, 0);  // user index + 1 that last took the item
  std::vector<std::uint32_t> ratings_of_item(items, 0);
  std::vector<std::uint32_t> chosen;
  std::vector<double> user_row(rank);
  double squared_error = 0;
  std::int64_t clipped = 0;
  for (std::int64_t u = 0; u < spec.users; ++u) {
    const std::int64_t k = (u + 1) * spec.ratings / spec.users - u * spec.ratings / spec.users;
    if (k == 0) continue;
    Stream rng(spec.seed, kTagUser, static_cast<std::uint64_t>(u));
    for (double& v : user_row) v = factor_sd * rng.Gaussian();
    const double user_bias = kBiasSd * rng.Gaussian();
    const auto stamp = static_cast<std::uint32_t>(u + 1);
    // k distinct items by popularity; a very skewed popularity can make the
    // last ones rare draws, so after a bounded number of tries the rest are
    // the most popular items not yet taken (deterministic either way).
    chosen.clear();
    for (std::int64_t tries = 64 * k + 1024; static_cast<std::int64_t>(chosen.size()) < k && tries > 0; --tries) {
      const std::uint32_t item = item_of_rank[popularity.Draw(rng)];
      if (taken_by[item] != stamp) taken_by[item] = stamp, chosen.push_back(item);
    }
    for (std::size_t r = 0; static_cast<std::int64_t>(chosen.size()) < k; ++r) {
      const std::uint32_t item = item_of_rank[r];
      if (taken_by[item] != stamp) taken_by[item] = stamp, chosen.push_back(item);
    }
    std::sort(chosen.begin(), chosen.end());
    for (std::uint32_t item : chosen) {
      const float* q = &item_rows[static_cast<std::size_t>(item) * (rank + 1)];
      double planted = spec.mean + user_bias + q[rank];
      for (std::size_t f = 0; f < rank; ++f) planted += user_row[f] * q[f];
      const double noisy = planted + spec.noise * rng.Gaussian();
      if (noisy < kMinRating || noisy > kMaxRating) ++clipped;
      const std::int64_t cents = std::llround(std::clamp(noisy, kMinRating, kMaxRating) * 100);
      const double error = static_cast<double>(cents) / 100 - std::clamp(planted, kMinRating, kMaxRating);
      squared_error += error * error;
      AppendLine(buffer, u + 1, std::int64_t{item} + 1, cents);
      if (ratings_of_item[item]++ == 0) ++result.items_rated;
    }
    result.ratings += k;
    ++result.users;
    if (buffer.size() >= kFlushBytes) {
      STALELEARN_RETURN_IF_ERROR(WriteOrFail(out.get(), buffer, temporary));
      result.bytes += buffer.size();
      buffer.clear();
    }
  }
  STALELEARN_RETURN_IF_ERROR(WriteOrFail(out.get(), buffer, temporary));
  result.bytes += buffer.size();
  if (std::fclose(out.release()) != 0) {
    return Internal(fmt::format("{}: close failed: {}", temporary.string(), std::strerror(errno)));
  }
  std::filesystem::rename(temporary, file, ec);
  if (ec) return Internal(fmt::format("{}: cannot rename to {}: {}", temporary.string(), file.string(), ec.message()));
  result.noise_floor = std::sqrt(squared_error / static_cast<double>(result.ratings));
  result.clipped_fraction = static_cast<double>(clipped) / static_cast<double>(result.ratings);
  // Each rating as a test rating, its item's other ratings as training: no
  // split trains on more, and fewer ratings only add excess.
  double excess = 0;
  for (const std::uint32_t n : ratings_of_item) {
    if (n > 0) excess += n * ItemEstimationExcess(n - 1, spec.rank, factor_sd * factor_sd, spec.noise);
  }
  const double mean_excess = excess / static_cast<double>(result.ratings);
  result.oracle_bound = std::sqrt(result.noise_floor * result.noise_floor + mean_excess);
  return result;
}

std::string DescribeSynthRatings(const SynthRatingsSpec& spec, const SynthRatingsResult& result) {
  return fmt::format(
      "generator: stalelearn data synth ratings\nusers: {}\nitems: {}\nratings: {}\nrank: {}\nzipf: {}\nnoise: {}\n"
      "seed: {}\nmean: {}\nusers_rated: {}\nitems_rated: {}\nbytes: {}\nclipped_fraction: {:.6f}\n"
      "noise_floor_rmse: {:.6f}\noracle_bound_rmse: {:.6f}\n",
      spec.users, spec.items, spec.ratings, spec.rank, spec.zipf, spec.noise, spec.seed, spec.mean, result.users,
      result.items_rated, result.bytes, result.clipped_fraction, result.noise_floor, result.oracle_bound);
}

}  // namespace stalelearn::data
