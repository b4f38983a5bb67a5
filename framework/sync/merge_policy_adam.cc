// adam (FedAdam, Reddi et al. 2021, with Kingma & Ba's bias correction):
// g = -delta; t = the row's step count after this step (1 at its first);
// c1 = 1 - beta1^t, c2 = 1 - beta2^t (double, rounded to float); per element
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   master -= (lr' * (m / c1)) / (sqrt(v / c2) + epsilon)
// lr' = lr / batches_per_clock (the compute ranks). Adam scales every step to
// about lr whatever the gradient's size, so N ranks' batches would move a
// weight about N lr per clock, each computed on a model the others' steps of
// that clock have not reached: a network trained this way lost accuracy as
// the compute ranks grew (docs/guide/experiments.md, "One config at every rank count"). Divided,
// a clock moves a weight about lr at every rank count, as one step of the
// clock's global batch would, and what a stale read misses is the same
// (s + 1) clocks' worth. AdaGrad needs no such division: its accumulator
// grows with every batch, so its steps shrink with the contributors.
// State (float32 tables only): m and v per master element, stored row by row
// (m then v, so one row's moments are one access), and a step count per row.
// Rows are independent, so distinct rows may be applied concurrently.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "framework/core/target_clones.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/merge_policy_adam.pb.h"

namespace stalelearn::sync {
namespace {

struct AdamConstants {
  float beta1, beta2, learning_rate, epsilon, c1, c2;
};

// One row's step, `width` elements. The pointers never overlap (master row,
// its moments, the batch's delta), so the loop vectorises: AVX2 where the
// CPU has it, 8 lanes of the divisions and the root that made the scalar
// loop compute-bound (a 64-rank clock of a 1.6 MB network spent most of its
// merge there). No FMA, and IEEE division and square root round each lane
// as the scalar instruction does, so every clone computes the same bits.
STALELEARN_TARGET_CLONES_AVX2 void AdamRow(float* __restrict row, float* __restrict m, float* __restrict v,
                                           const std::byte* __restrict delta, std::int32_t width,
                                           const AdamConstants k) {
  for (std::int32_t i = 0; i < width; ++i) {
    float d;
    std::memcpy(&d, delta + i * model::kElementBytes, sizeof d);
    const float g = -d;
    m[i] = k.beta1 * m[i] + (1.0f - k.beta1) * g;
    v[i] = k.beta2 * v[i] + (1.0f - k.beta2) * g * g;
    row[i] -= (k.learning_rate * (m[i] / k.c1)) / (std::sqrt(v[i] / k.c2) + k.epsilon);
  }
}

class AdamPolicy final : public MergePolicy {
 public:
  AdamPolicy(const AdamOptions& options, int batches_per_clock, const MergePolicyShape& shape)
      : width_(shape.width),
        learning_rate_(options.learning_rate() / static_cast<float>(batches_per_clock)),
        beta1_(options.beta1()),
        beta2_(options.beta2()),
        epsilon_(options.epsilon()),
        moments_(2 * static_cast<std::size_t>(shape.rows) * static_cast<std::size_t>(shape.width), 0.0f),
        steps_(static_cast<std::size_t>(shape.rows), 0) {
    const double elements = width_;
    // Per element: negate; m: 2 mul + add; v: 3 mul + add; 2 corrections,
    // scale, root, add epsilon, divide, subtract. Per row: count, 2 powers, 2
    // subtractions.
    work_.flops = 15 * elements + 5;
    // Read delta, read + write master, m and v; read + write the step count.
    work_.bytes = 7 * elements * model::kElementBytes + 8;
    work_.random_row_accesses = 3;  // master row, moments row, step count
    TabulateCorrections();
  }

  std::string_view name() const override { return "adam"; }
  std::unique_ptr<MergePolicy> Clone() const override { return std::make_unique<AdamPolicy>(*this); }

  void Apply(model::RowBlock& master, std::int64_t local_row, const std::byte* delta) override {
    const auto [c1, c2] = CorrectionsAt(++steps_[static_cast<std::size_t>(local_row)]);
    std::span<float> row = master.FloatRow(local_row);
    float* m = moments_.data() + 2 * static_cast<std::size_t>(local_row) * static_cast<std::size_t>(width_);
    AdamRow(row.data(), m, m + width_, delta, width_, {beta1_, beta2_, learning_rate_, epsilon_, c1, c2});
  }
  metrics::WorkCounters ApplyWork() const override { return work_; }
  std::size_t state_bytes() const override {
    return moments_.size() * sizeof(float) + steps_.size() * sizeof(std::uint32_t);
  }
  // State bytes: the moments, then the step counts.
  std::vector<std::byte> SaveState() const override {
    std::vector<std::byte> out;
    const auto m = std::as_bytes(std::span(moments_));
    const auto t = std::as_bytes(std::span(steps_));
    out.insert(out.end(), m.begin(), m.end());
    out.insert(out.end(), t.begin(), t.end());
    return out;
  }
  Status RestoreState(std::span<const std::byte> bytes) override {
    const std::size_t m = moments_.size() * sizeof(float);
    const std::size_t t = steps_.size() * sizeof(std::uint32_t);
    if (bytes.size() != m + t) return DataLoss(fmt::format("adam state: {} bytes, expected {}", bytes.size(), m + t));
    std::memcpy(moments_.data(), bytes.data(), m);
    std::memcpy(steps_.data(), bytes.data() + m, t);
    return Status::Ok();
  }

 private:
  struct Corrections {
    float c1, c2;
  };
  // The formula itself.
  Corrections ComputeCorrections(std::uint32_t step) const {
    return {static_cast<float>(1.0 - std::pow(static_cast<double>(beta1_), static_cast<double>(step))),
            static_cast<float>(1.0 - std::pow(static_cast<double>(beta2_), static_cast<double>(step)))};
  }
  // Tabulates the corrections of the first steps, so that two std::pow per
  // row (most of a narrow row's step) leave the merge; the values are the
  // formula's. Both corrections only grow with the step, so once both have
  // rounded to 1 they stay 1.
  void TabulateCorrections() {
    constexpr std::uint32_t kMaxTabulated = 1u << 16;
    for (std::uint32_t step = 1; step <= kMaxTabulated; ++step) {
      const Corrections c = ComputeCorrections(step);
      corrections_.push_back(c);
      if (c.c1 == 1.0f && c.c2 == 1.0f) {
        corrections_saturate_ = true;
        return;
      }
    }
  }
  Corrections CorrectionsAt(std::uint32_t step) const {
    if (step <= corrections_.size()) return corrections_[step - 1];
    return corrections_saturate_ ? Corrections{1.0f, 1.0f} : ComputeCorrections(step);
  }

  std::int32_t width_;
  float learning_rate_;
  float beta1_;
  float beta2_;
  float epsilon_;
  std::vector<float> moments_;        // [row][m: width][v: width]
  std::vector<std::uint32_t> steps_;  // [row]: steps applied to the row
  std::vector<Corrections> corrections_;  // [step - 1], for the first steps
  bool corrections_saturate_ = false;     // both are 1 after the table
  metrics::WorkCounters work_;
};

}  // namespace

// The options message (AdamOptions, merge_policy_adam.proto) is the config
// section `adam { ... }` and the spec's options, which only this file reads.
Status RegisterAdamMergePolicy(MergePolicyRegistry& registry) {
  return registry.Add(
      "adam", "server Adam on the pseudo-gradient -delta, bias-corrected per row", /*merges_int32=*/false,
      [](const MergePolicySpec& spec, const MergePolicyShape& shape) -> std::unique_ptr<MergePolicy> {
        return std::make_unique<AdamPolicy>(OptionsOf<AdamOptions>(spec), spec.batches_per_clock, shape);
      },
      &AdamOptions::default_instance());
}

}  // namespace stalelearn::sync
