// A deterministic random stream for app kernels: SplitMix64 (passes
// BigCrush; one 64-bit word of state), seeded from (seed, rank, clock) by the
// runtime so that a run draws the same numbers whatever the thread timing,
// which keeps single-process emulation bit-reproducible. The draws are
// written out here (no std:: distributions, whose results differ between
// standard libraries).
//
//   RandomStream rng = RandomStream::For(seed, rank, clock);
//   double u = rng.Uniform();           // [0, 1)
//   std::int64_t k = rng.Below(topics);  // [0, topics)
//
// Not thread-safe: one stream per kernel call (value type, cheap to copy).
#pragma once

#include <cmath>
#include <cstdint>

namespace stalelearn::runtime {

class RandomStream {
 public:
  explicit RandomStream(std::uint64_t state) : state_(state) {}
  // The stream of compute rank `rank` at clock `clock` (-1: initialisation)
  // of a run seeded with `seed`.
  static RandomStream For(std::uint64_t seed, int rank, std::int64_t clock) {
    RandomStream mix(seed ^ 0x5851F42D4C957F2Dull);
    std::uint64_t s = mix.Next() ^ (static_cast<std::uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull;
    RandomStream mix2(s);
    return RandomStream(mix2.Next() ^ static_cast<std::uint64_t>(clock + 2) * 0xD1B54A32D192ED03ull);
  }

  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  float UniformFloat() { return static_cast<float>(Next() >> 40) * 0x1.0p-24f; }
  // Uniform integer in [0, n), n >= 1 (Lemire's multiply-shift; the bias is
  // below 2^-32 for n < 2^32).
  std::int64_t Below(std::int64_t n) {
    return static_cast<std::int64_t>((static_cast<unsigned __int128>(Next()) * static_cast<std::uint64_t>(n)) >> 64);
  }
  // Standard normal (Box-Muller, one of the pair).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
};

}  // namespace stalelearn::runtime
