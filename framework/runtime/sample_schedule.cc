#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/app_facets.h"

#include "framework/core/planted_defect.h"

#include "framework/runtime/app.h"
#include "framework/runtime/locality_plan.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>

namespace stalelearn::runtime {

std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Shuffle(std::vector<std::int64_t>& v, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::size_t i = v.size(); i > 1; --i) {
    const std::size_t j = SplitMix64(state) % i;  // modulo bias is irrelevant for a training order
    std::swap(v[i - 1], v[j]);
  }
}

namespace {

// The dealing permutation of `total` samples, built once per process and
// kept for the most recent (total, seed): with --ranks C:M every rank is a
// thread, and each built its own copy two or three times (64 compute ranks
// on 18 M samples: 64 x 144 MB at once, the run's peak memory, and minutes
// of shuffling). Thread-safe.
std::shared_ptr<const std::vector<std::int64_t>> DealingPermutation(std::int64_t total, std::uint64_t seed) {
  static std::mutex mutex;
  static std::int64_t cached_total = -1;
  static std::uint64_t cached_seed = 0;
  static std::shared_ptr<const std::vector<std::int64_t>> cached;
  std::lock_guard lock(mutex);
  if (cached == nullptr || cached_total != total || cached_seed != seed) {
    cached.reset();  // the old one's memory first
    auto all = std::make_shared<std::vector<std::int64_t>>(static_cast<std::size_t>(total));
    std::iota(all->begin(), all->end(), 0);
    Shuffle(*all, seed ^ 0xD1B54A32D192ED03ull);
    cached = std::move(all);
    cached_total = total;
    cached_seed = seed;
  }
  return cached;
}

// Rank c's share of the plain deal: positions [begin, end) of the dealing
// permutation (even shares, the first total % ranks one larger).
std::pair<std::int64_t, std::int64_t> PlainShare(std::int64_t total, int compute_ranks, int c) {
  const std::int64_t base = total / compute_ranks;
  const std::int64_t extra = total % compute_ranks;
  const std::int64_t begin = c * base + std::min<std::int64_t>(c, extra);
  return {begin, begin + base + (c < extra ? 1 : 0)};
}

}  // namespace

std::vector<std::int64_t> AscendingSamples(std::span<const std::int64_t> samples) {
  if (samples.empty()) return {};
  // A bitmap over [0, max]: linear, where a sort of 20 M ids takes seconds.
  const std::int64_t max = *std::ranges::max_element(samples);
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(max / 64 + 1), 0);
  for (std::int64_t s : samples) bits[static_cast<std::size_t>(s / 64)] |= std::uint64_t{1} << (s % 64);
  std::vector<std::int64_t> sorted;
  sorted.reserve(samples.size());
  for (std::size_t w = 0; w < bits.size(); ++w) {
    for (std::uint64_t word = bits[w]; word != 0; word &= word - 1) {
      sorted.push_back(static_cast<std::int64_t>(w * 64) + std::countr_zero(word));
    }
  }
  return sorted;
}

SampleSchedule::SampleSchedule(std::int64_t total_samples, int compute_ranks, int compute_index,
                               std::int64_t samples_per_clock, std::uint64_t seed)
    : samples_per_clock_(samples_per_clock), seed_(seed), compute_index_(compute_index) {
  const std::shared_ptr<const std::vector<std::int64_t>> permutation = DealingPermutation(total_samples, seed);
  const std::vector<std::int64_t>& all = *permutation;
  const auto [begin, end] = PlainShare(total_samples, compute_ranks, compute_index);
  mine_.assign(all.begin() + begin, all.begin() + end);
  ascending_ = AscendingSamples(mine_);
  const auto [first_begin, first_end] = PlainShare(total_samples, compute_ranks, 0);
  SetClocks(first_end - first_begin);
}

namespace {

// Deals whole groups of samples (the GroupsSamples facet): a seeded
// permutation of the groups, cut where the running sample count crosses each
// rank's even share. Returns every rank's share; fills `mine` (reserved to
// its size: no regrowth of a 20 M-sample vector) with rank `index`'s samples
// in dealing order when it is not null, and `rank_of` with every sample's rank.
std::vector<std::int64_t> DealGroups(const App& app, const AppFacets& facets, std::int64_t groups,
                                     int compute_ranks, std::uint64_t seed, int index,
                                     std::vector<std::int64_t>* mine, std::vector<std::uint16_t>* rank_of = nullptr) {
  const std::int64_t total = app.TrainingSamples();
  std::vector<std::int64_t> order(static_cast<std::size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  Shuffle(order, seed ^ 0xD1B54A32D192ED03ull);
  std::vector<std::int64_t> shares(static_cast<std::size_t>(compute_ranks), 0);
  std::vector<std::int32_t> owners(order.size());
  std::int64_t dealt = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const SampleRange range = facets.GroupSamples(order[i]);
    // The rank whose even share holds this group's first sample.
    const auto owner = static_cast<int>(std::min<std::int64_t>(compute_ranks - 1, dealt * compute_ranks / total));
    owners[i] = owner;
    if (rank_of != nullptr) {
      std::fill(rank_of->begin() + range.begin, rank_of->begin() + range.end, static_cast<std::uint16_t>(owner));
    }
    shares[static_cast<std::size_t>(owner)] += range.end - range.begin;
    dealt += range.end - range.begin;
  }
  if (mine != nullptr) {
    mine->reserve(static_cast<std::size_t>(shares[static_cast<std::size_t>(index)]));
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (owners[i] != index) continue;
      const SampleRange range = facets.GroupSamples(order[i]);
      for (std::int64_t s = range.begin; s < range.end; ++s) mine->push_back(s);
    }
  }
  return shares;
}

std::int64_t ClocksFor(std::int64_t largest_share, std::int64_t samples_per_clock, int strata) {
  const std::int64_t clocks = std::max<std::int64_t>(1, (largest_share + samples_per_clock - 1) / samples_per_clock);
  // A whole number of clocks per sub-epoch (locality_plan.h: kStripesPerRank per rank).
  const std::int64_t sub_epochs = RunStrata(strata, 0).stripes();
  return (clocks + sub_epochs - 1) / sub_epochs * sub_epochs;
}

}  // namespace

SampleSchedule::SampleSchedule(const App& app, int compute_ranks, int compute_index, std::int64_t samples_per_clock,
                               std::uint64_t seed, int strata)
    : samples_per_clock_(samples_per_clock), seed_(seed), compute_index_(compute_index) {
  const std::int64_t total = app.TrainingSamples();
  const AppFacets facets = AppFacets::Of(app);
  const std::int64_t groups = facets.SampleGroups(app);
  if (groups == total) {  // every sample its own group: the plain deal
    *this = SampleSchedule(total, compute_ranks, compute_index, samples_per_clock, seed);
    if (strata > 1) SetClocks(clocks_per_epoch_ * samples_per_clock, strata);
  } else {
    const std::vector<std::int64_t> shares =
        DealGroups(app, facets, groups, compute_ranks, seed, compute_index, &mine_);
    SetClocks(*std::ranges::max_element(shares), strata);
    ascending_ = AscendingSamples(mine_);
  }
}

void SampleSchedule::SetClocks(std::int64_t largest_share, int strata) {
  clocks_per_epoch_ = ClocksFor(largest_share, samples_per_clock_, strata);
}

std::vector<std::uint16_t> DealtRanks(const App& app, int compute_ranks, std::uint64_t seed) {
  const std::int64_t total = app.TrainingSamples();
  std::vector<std::uint16_t> rank_of(static_cast<std::size_t>(total), 0);
  const AppFacets facets = AppFacets::Of(app);
  const std::int64_t groups = facets.SampleGroups(app);
  if (groups != total) {
    DealGroups(app, facets, groups, compute_ranks, seed, 0, nullptr, &rank_of);
    return rank_of;
  }
  // The plain deal: contiguous shares of the dealing permutation.
  const std::shared_ptr<const std::vector<std::int64_t>> permutation = DealingPermutation(total, seed);
  for (int c = 0; c < compute_ranks; ++c) {
    const auto [begin, end] = PlainShare(total, compute_ranks, c);
    for (std::int64_t at = begin; at < end; ++at) {
      rank_of[static_cast<std::size_t>((*permutation)[static_cast<std::size_t>(at)])] = static_cast<std::uint16_t>(c);
    }
  }
  return rank_of;
}

int StrataOf(const proto::Config& config, int compute_ranks) {
  return config.training().locality() == "stratified" ? std::max(1, compute_ranks) : 1;
}

std::int64_t SamplesPerClock(const proto::TrainingConfig& training, int compute_ranks) {
  if (training.samples_per_clock() > 0) return training.samples_per_clock();
  const std::int64_t global = training.global_samples_per_clock() > 0 ? training.global_samples_per_clock() : 4096;
  // Planted defect (self-tests only): every rank takes the whole global batch.
  const std::int64_t ranks = DefectPlanted(PlantedDefect::kSamplesPerClockNotDerived) ? 1 : std::max(1, compute_ranks);
  return std::max<std::int64_t>(1, (global + ranks - 1) / ranks);
}

std::int64_t ClocksPerEpochOf(const App& app, const proto::Config& config, int compute_ranks) {
  const std::int64_t total = app.TrainingSamples();
  const std::int64_t spc = SamplesPerClock(config.training(), compute_ranks);
  const int strata = StrataOf(config, compute_ranks);
  const AppFacets facets = AppFacets::Of(app);
  const std::int64_t groups = facets.SampleGroups(app);
  if (groups == total) {
    const std::int64_t largest = total / compute_ranks + (total % compute_ranks != 0 ? 1 : 0);
    // As the plain deal: its clocks, then rounded to the strata.
    return ClocksFor(ClocksFor(largest, spc, 1) * spc, spc, strata);
  }
  const std::vector<std::int64_t> shares = DealGroups(app, facets, groups, compute_ranks, config.seed(), 0, nullptr);
  return ClocksFor(*std::ranges::max_element(shares), spc, strata);
}

SampleSchedule ScheduleOf(const App& app, const proto::Config& config, int compute_ranks, int compute_index) {
  return SampleSchedule(app, compute_ranks, compute_index, SamplesPerClock(config.training(), compute_ranks),
                        config.seed(),
                        StrataOf(config, compute_ranks));
}

std::vector<std::int64_t> SampleSchedule::EpochOrder(int epoch) const {
  std::vector<std::int64_t> order;
  EpochOrderInto(epoch, order);
  return order;
}

void SampleSchedule::EpochOrderInto(int epoch, std::vector<std::int64_t>& order) const {
  order.assign(mine_.begin(), mine_.end());
  std::uint64_t state = seed_ + 0x1000193ull * static_cast<std::uint64_t>(epoch + 1) +
                        0x9E37ull * static_cast<std::uint64_t>(compute_index_ + 1);
  Shuffle(order, SplitMix64(state));
}

std::pair<std::int64_t, std::int64_t> SampleSchedule::ClockRange(std::int64_t size, std::int64_t clock_in_epoch) const {
  const std::int64_t begin = std::min(size, clock_in_epoch * samples_per_clock_);
  return {begin, std::min(size, begin + samples_per_clock_)};
}

std::span<const std::int64_t> SampleSchedule::ClockSamples(std::span<const std::int64_t> order,
                                                           std::int64_t clock_in_epoch) const {
  const auto [begin, end] = ClockRange(static_cast<std::int64_t>(order.size()), clock_in_epoch);
  return order.subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(end - begin));
}

}  // namespace stalelearn::runtime
