// adagrad (FedAdagrad, Reddi et al. 2021): g = -delta; per element
//   a += g * g;   master -= (lr * g) / (sqrt(a) + epsilon)
// State (float32 tables only): one accumulator per master element, started at
// the options' initial_accumulator. Rows are independent, so distinct rows may be
// applied concurrently.
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "framework/core/target_clones.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/merge_policy_adagrad.pb.h"

namespace stalelearn::sync {
namespace {

// One row's step, `width` elements; the pointers never overlap (master row,
// its accumulators, the batch's delta), so the loop vectorises, AVX2 where
// the CPU has it. No FMA, and division and square root round each lane as
// the scalar instruction does: every clone computes the same bits.
STALELEARN_TARGET_CLONES_AVX2 void AdagradRow(float* __restrict row, float* __restrict accumulator,
                                              const std::byte* __restrict delta, std::int32_t width,
                                              float learning_rate, float epsilon) {
  for (std::int32_t i = 0; i < width; ++i) {
    float d;
    std::memcpy(&d, delta + i * model::kElementBytes, sizeof d);
    const float g = -d;
    accumulator[i] += g * g;
    row[i] -= (learning_rate * g) / (std::sqrt(accumulator[i]) + epsilon);
  }
}

class AdagradPolicy final : public MergePolicy {
 public:
  AdagradPolicy(const AdagradOptions& options, const MergePolicyShape& shape)
      : width_(shape.width),
        learning_rate_(options.learning_rate()),
        epsilon_(options.epsilon()),
        accumulator_(static_cast<std::size_t>(shape.rows) * static_cast<std::size_t>(shape.width),
                     options.initial_accumulator()) {
    const double elements = width_;
    // Negate, square, accumulate, root, add epsilon, scale, divide, subtract.
    work_.flops = 8 * elements;
    // Read delta, read + write master, read + write accumulator.
    work_.bytes = 5 * elements * model::kElementBytes;
    work_.random_row_accesses = 2;  // master row, accumulator row
  }

  std::string_view name() const override { return "adagrad"; }
  std::unique_ptr<MergePolicy> Clone() const override { return std::make_unique<AdagradPolicy>(*this); }

  void Apply(model::RowBlock& master, std::int64_t local_row, const std::byte* delta) override {
    std::span<float> row = master.FloatRow(local_row);
    float* accumulator = accumulator_.data() + static_cast<std::size_t>(local_row) * static_cast<std::size_t>(width_);
    AdagradRow(row.data(), accumulator, delta, width_, learning_rate_, epsilon_);
  }
  metrics::WorkCounters ApplyWork() const override { return work_; }
  std::size_t state_bytes() const override { return accumulator_.size() * sizeof(float); }
  std::vector<std::byte> SaveState() const override {
    const auto bytes = std::as_bytes(std::span(accumulator_));
    return {bytes.begin(), bytes.end()};
  }
  Status RestoreState(std::span<const std::byte> bytes) override {
    if (bytes.size() != accumulator_.size() * sizeof(float)) {
      return DataLoss(fmt::format("adagrad state: {} bytes, expected {}", bytes.size(),
                                  accumulator_.size() * sizeof(float)));
    }
    std::memcpy(accumulator_.data(), bytes.data(), bytes.size());
    return Status::Ok();
  }

 private:
  std::int32_t width_;
  float learning_rate_;
  float epsilon_;
  std::vector<float> accumulator_;  // [row * width + element]
  metrics::WorkCounters work_;
};

}  // namespace

// The options message (AdagradOptions, merge_policy_adagrad.proto) is the
// config section `adagrad { ... }` and the spec's options, which only this
// file reads.
Status RegisterAdagradMergePolicy(MergePolicyRegistry& registry) {
  return registry.Add(
      "adagrad", "server AdaGrad on the pseudo-gradient -delta", /*merges_int32=*/false,
      [](const MergePolicySpec& spec, const MergePolicyShape& shape) -> std::unique_ptr<MergePolicy> {
        return std::make_unique<AdagradPolicy>(OptionsOf<AdagradOptions>(spec), shape);
      },
      &AdagradOptions::default_instance());
}

}  // namespace stalelearn::sync
