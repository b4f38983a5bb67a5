#include "framework/runtime/straggler.h"

#include <cmath>

#include "framework/metrics/work_counters.h"

namespace stalelearn::runtime {
namespace {

constexpr double kDefaultTransientDelay = 4;

// SplitMix64's finaliser: a well-mixed 64-bit hash.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from (seed, rank, clock, which draw).
double Uniform(std::uint64_t seed, int rank, std::int64_t clock, std::uint64_t draw) {
  const std::uint64_t h = Mix(Mix(Mix(Mix(seed) ^ static_cast<std::uint64_t>(rank)) ^
                                  static_cast<std::uint64_t>(clock)) ^ draw);
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

}  // namespace

Straggler::Straggler(const proto::StragglerConfig& config, int compute_rank, std::uint64_t default_seed)
    : persistent_extra_(config.rank() == compute_rank && config.slowdown() > 1 ? config.slowdown() - 1 : 0),
      transient_probability_(config.transient_probability()),
      transient_mean_(config.transient_delay() > 0 ? config.transient_delay() : kDefaultTransientDelay),
      seed_(config.seed() != 0 ? config.seed() : default_seed),
      rank_(compute_rank) {}

double Straggler::TransientExtra(std::int64_t clock) const {
  if (transient_probability_ <= 0 || Uniform(seed_, rank_, clock, 0) >= transient_probability_) return 0;
  return -transient_mean_ * std::log1p(-Uniform(seed_, rank_, clock, 1));
}

double Straggler::ComputeScale(std::int64_t clock) const { return 1 + persistent_extra_ + TransientExtra(clock); }

Status Straggler::EndComputeStep(transport::RankTime& time, const WorkCounters& work,
                                 std::chrono::nanoseconds compute_time, std::int64_t clock) const {
  return time.ChargeCompute(metrics::ToComputeWork(work), active() ? ComputeScale(clock) : 1, compute_time);
}

}  // namespace stalelearn::runtime
