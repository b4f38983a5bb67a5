// staleness_aware: master += delta / (1 + e), e the batch's staleness in
// epochs (BatchHeader::stale_epochs_x1024 / 1024: the clocks of the slowest
// other compute rank missing from the model the deltas were computed on,
// over the sender's clocks per epoch). Staleness-aware asynchronous SGD
// (Zhang, Gupta, Lian and Liu, IJCAI 2016) divides each step by its
// staleness; counted in epochs, not clocks, the same rule fits every batch
// size and rank count. e = 0 (always so with one compute rank) merges
// exactly as sum (x * 1 is exact).
//
// Why it is not the default: what makes a config converge at any rank
// count is the number of steps a rank has not seen, about global samples
// per clock x (s + 1), and the derived samples per clock
// (training.global_samples_per_clock) holds it, so nothing needs scaling.
// Measured on the shipped matrix-factorization config (docs/guide/experiments.md,
// "One config at every rank count"), scaling cost accuracy wherever sum converged and
// rescued no config whose batches were too large, under every variant tried
// (1 / (1 + tau) in clocks, 1 / (1 + tau / k), 1 / max(1, e), this rule).
// It stays for staleness experiments and for tables whose rate of change a
// user wants damped by staleness.
//
// float32 tables only. No state: the scale is the batch's, so the merger
// adds the scaled rows itself (adds_delta).
#include "framework/core/planted_defect.h"
#include "framework/sync/merge_policy.h"

namespace stalelearn::sync {
namespace {

class StalenessAwarePolicy final : public MergePolicy {
 public:
  explicit StalenessAwarePolicy(std::int32_t width) {
    const double elements = width;
    work_.flops = 2 * elements;                         // scale and add
    work_.bytes = 3 * elements * model::kElementBytes;  // read delta, read + write master
    work_.random_row_accesses = 1;
  }

  std::string_view name() const override { return "staleness_aware"; }
  std::unique_ptr<MergePolicy> Clone() const override { return std::make_unique<StalenessAwarePolicy>(*this); }
  // Apply is the unscaled add; ShardMerger's inline add (adds_delta) is what
  // merges batches, with DeltaScale.
  void Apply(model::RowBlock& master, std::int64_t local_row, const std::byte* delta) override {
    master.AddDelta(local_row, delta);
  }
  metrics::WorkCounters ApplyWork() const override { return work_; }
  bool adds_delta() const override { return true; }
  float DeltaScale(std::uint32_t stale_epochs_x1024) const override {
    // Planted defect (self-tests only): stale deltas are summed unscaled
    // (MergePolicyVsReference/staleness_aware catches it).
    if (DefectPlanted(PlantedDefect::kStalenessScalingOff)) return 1.0f;
    return static_cast<float>(kOneEpoch) / static_cast<float>(kOneEpoch + stale_epochs_x1024);
  }

 private:
  static constexpr std::uint32_t kOneEpoch = 1024;
  metrics::WorkCounters work_;
};

}  // namespace

Status RegisterStalenessAwareMergePolicy(MergePolicyRegistry& registry) {
  return registry.Add("staleness_aware", "master += delta / (1 + the batch's staleness in epochs)",
                      /*merges_int32=*/false,
                      [](const MergePolicySpec&, const MergePolicyShape& shape) -> std::unique_ptr<MergePolicy> {
                        return std::make_unique<StalenessAwarePolicy>(shape.width);
                      });
}

}  // namespace stalelearn::sync
