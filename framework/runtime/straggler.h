// Straggler patterns of a compute rank (training.straggler, config.proto):
//
//   persistent  rank `rank` computes `slowdown` times slower at every clock;
//   transient   at each clock each compute rank is delayed, independently,
//               with probability p: that clock's compute lasts (1 + X) times
//               as long, X ~ Exponential(mean transient_delay).
//
// After a clock's compute did `work` in d (wall), the loop calls
// EndComputeStep, which hands both and ComputeScale(clock) to the rank's time
// service (transport/rank_time.h): real time sleeps (ComputeScale(clock) - 1)
// * d; virtual time charges `work` scaled by ComputeScale(clock) as simulated
// compute and sleeps nothing. The draws are
// a pure function of (seed, rank, clock), not of call order or timing, so a
// seed delays the same clocks in every run and on every backend.
//
// Value type; const methods are safe from any thread. One per compute rank.
#pragma once

#include <chrono>
#include <cstdint>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"
#include "framework/transport/rank_time.h"

namespace stalelearn::runtime {

class Straggler {
 public:
  // `compute_rank`: this rank's compute index; `default_seed`: Config.seed,
  // used when config.seed is 0.
  Straggler(const proto::StragglerConfig& config, int compute_rank, std::uint64_t default_seed);

  // How many times longer than normal clock `clock`'s compute lasts (>= 1).
  double ComputeScale(std::int64_t clock) const;
  // The transient pattern's extra factor X for `clock` (0 when not delayed).
  double TransientExtra(std::int64_t clock) const;
  bool active() const { return persistent_extra_ > 0 || transient_probability_ > 0; }

  // Ends clock `clock`'s compute step that did `work` in `compute_time`:
  // `time` charges it scaled, or sleeps the delay. The virtual clock's
  // (scheduler's) error, if any.
  Status EndComputeStep(transport::RankTime& time, const WorkCounters& work, std::chrono::nanoseconds compute_time,
                        std::int64_t clock) const;

 private:
  double persistent_extra_;  // slowdown - 1 on the slowed rank, else 0
  double transient_probability_;
  double transient_mean_;
  std::uint64_t seed_;
  int rank_;
};

}  // namespace stalelearn::runtime
