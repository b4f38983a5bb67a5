// Which training samples a compute rank processes in which clock. Samples are
// dealt to compute ranks by a seeded permutation (contiguous shares of it);
// each epoch a rank visits its share in a fresh seeded order. Every rank runs
// the same number of clocks per epoch (ceil(largest share / samples per
// clock)), so clocks line up across ranks as SSP requires.
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "framework/proto/config.pb.h"

namespace stalelearn::runtime {

class App;

class SampleSchedule {
 public:
  SampleSchedule(std::int64_t total_samples, int compute_ranks, int compute_index, std::int64_t samples_per_clock,
                 std::uint64_t seed);
  // The app's samples; when the app groups samples (the GroupsSamples facet), whole
  // groups are dealt (a seeded permutation of the groups, cut where the
  // running sample count crosses each rank's even share).
  // `strata` > 1 (stratified scheduling, locality_plan.h): clocks per epoch
  // are rounded up to a multiple of it, so sub-epochs line up across ranks.
  SampleSchedule(const App& app, int compute_ranks, int compute_index, std::int64_t samples_per_clock,
                 std::uint64_t seed, int strata = 1);
  // This rank's samples (in dealing order).
  std::span<const std::int64_t> samples() const { return mine_; }
  // The same samples in increasing order (AscendingSamples), made once: the
  // working set and the locality plan both pass over them.
  std::span<const std::int64_t> ascending() const { return ascending_; }

  std::int64_t clocks_per_epoch() const { return clocks_per_epoch_; }
  std::int64_t share() const { return static_cast<std::int64_t>(mine_.size()); }
  // This rank's samples in epoch `epoch`'s visiting order.
  std::vector<std::int64_t> EpochOrder(int epoch) const;
  // The same order, written into `order` (its capacity reused: no fresh
  // pages per epoch).
  void EpochOrderInto(int epoch, std::vector<std::int64_t>& order) const;
  // The samples of clock `clock_in_epoch` within `order` (may be empty).
  std::span<const std::int64_t> ClockSamples(std::span<const std::int64_t> order, std::int64_t clock_in_epoch) const;
  // Where ClockSamples cuts an order of `size` samples: [first, last).
  std::pair<std::int64_t, std::int64_t> ClockRange(std::int64_t size, std::int64_t clock_in_epoch) const;

 private:
  void SetClocks(std::int64_t largest_share, int strata = 1);

  std::vector<std::int64_t> mine_;
  std::vector<std::int64_t> ascending_;  // mine_, sorted
  std::int64_t samples_per_clock_;
  std::int64_t clocks_per_epoch_;
  std::uint64_t seed_;
  int compute_index_;
};

// training.samples_per_clock, or when it is 0 each compute rank's share of
// training.global_samples_per_clock: ceil(global / compute_ranks), >= 1.
// (The runtime writes it into the config it resolves: train.cc.)
std::int64_t SamplesPerClock(const proto::TrainingConfig& training, int compute_ranks);
// The schedule of compute rank `compute_index` under `config` (its samples
// per clock, seed and locality: stratified rounds the clocks).
SampleSchedule ScheduleOf(const App& app, const proto::Config& config, int compute_ranks, int compute_index);
// Its clocks per epoch (the same on every rank), without dealing the samples.
std::int64_t ClocksPerEpochOf(const App& app, const proto::Config& config, int compute_ranks);
// The compute rank SampleSchedule deals each of the app's training samples
// to (by sample), for `compute_ranks` <= 65536 ranks.
std::vector<std::uint16_t> DealtRanks(const App& app, int compute_ranks, std::uint64_t seed);
// The strata of training.locality: compute_ranks when "stratified", else 1.
int StrataOf(const proto::Config& config, int compute_ranks);

// `samples` (distinct, non-negative) in increasing order: start-up passes
// over App::RowsOf read the app's sample arrays in address order instead of
// missing the cache once per sample of a shuffled deal.
std::vector<std::int64_t> AscendingSamples(std::span<const std::int64_t> samples);

// SplitMix64 step: a small, portable PRNG for seeding and shuffles.
std::uint64_t SplitMix64(std::uint64_t& state);
// A seeded Fisher-Yates shuffle of `v` (SplitMix64 draws).
void Shuffle(std::vector<std::int64_t>& v, std::uint64_t seed);

}  // namespace stalelearn::runtime
