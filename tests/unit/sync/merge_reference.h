// Sequential reference of the merge policies' published formulas
// (framework/sync/merge_policy.h), written independently of the policies:
// full tables indexed by global row, one plain loop per element, no
// parallelism, no shared code with framework/sync. Tests feed it and a
// ShardMerger the same batches and compare the rows.
//
// Not thread-safe; a value type.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "framework/sync/merge_policy.h"
#include "framework/sync/merge_policy_adagrad.pb.h"
#include "framework/sync/merge_policy_adam.pb.h"

namespace stalelearn::sync::testing {

class ReferenceMerge {
 public:
  // `spec`: resolved or not (its options then take the declared defaults).
  ReferenceMerge(const MergePolicySpec& spec, std::int64_t rows, std::int32_t width)
      : spec_(BuiltinSpec(spec.name, spec.options.get())),
        batches_per_clock_(spec.batches_per_clock),
        width_(width),
        master_(Rows(rows, 0.0f)),
        accumulator_(Rows(rows, spec_.name == "adagrad" ? OptionsOf<AdagradOptions>(spec_).initial_accumulator() : 0.0f)),
        m_(Rows(rows, 0.0f)),
        v_(Rows(rows, 0.0f)),
        step_(static_cast<std::size_t>(rows), 0) {}

  // One batch's delta for `row` (global); `stale_epochs_x1024` is the
  // batch's header field (staleness_aware divides by 1 + it / 1024).
  void Apply(std::int64_t row, std::span<const float> delta, std::uint32_t stale_epochs_x1024 = 0) {
    std::vector<float>& x = master_[row];
    const std::string& name = spec_.name;
    if (name == "sum") {
      for (std::int32_t i = 0; i < width_; ++i) x[i] += delta[i];
    } else if (name == "staleness_aware") {
      const float scale = 1024.0f / (1024.0f + static_cast<float>(stale_epochs_x1024));
      for (std::int32_t i = 0; i < width_; ++i) x[i] += delta[i] * scale;
    } else if (name == "average") {
      auto [it, fresh] = window_.try_emplace(row, std::vector<float>(width_, 0.0f), 0);
      for (std::int32_t i = 0; i < width_; ++i) it->second.first[i] += delta[i];
      ++it->second.second;
    } else if (name == "adagrad") {
      const AdagradOptions& o = OptionsOf<AdagradOptions>(spec_);
      for (std::int32_t i = 0; i < width_; ++i) {
        const float g = -delta[i];
        float& a = accumulator_[row][i];
        a = a + g * g;
        x[i] = x[i] - (o.learning_rate() * g) / (std::sqrt(a) + o.epsilon());
      }
    } else if (name == "adam") {
      const AdamOptions& o = OptionsOf<AdamOptions>(spec_);
      const int t = ++step_[row];
      const float b1 = o.beta1();
      const float b2 = o.beta2();
      const float c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(b1), t));
      const float c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(b2), t));
      const float lr = o.learning_rate() / static_cast<float>(batches_per_clock_);  // a clock's share
      for (std::int32_t i = 0; i < width_; ++i) {
        const float g = -delta[i];
        float& m = m_[row][i];
        float& v = v_[row][i];
        m = b1 * m + (1.0f - b1) * g;
        v = b2 * v + (1.0f - b2) * g * g;
        const float m_hat = m / c1;
        const float v_hat = v / c2;
        x[i] = x[i] - (lr * m_hat) / (std::sqrt(v_hat) + o.epsilon());
      }
    } else {
      ADD_FAILURE() << "the reference does not know policy '" << name << "'";
    }
  }

  // The window closes (average applies the mean of each row's deltas).
  void EndWindow() {
    for (const auto& [row, sum_and_count] : window_) {
      const auto& [sum, count] = sum_and_count;
      for (std::int32_t i = 0; i < width_; ++i) master_[row][i] += sum[i] / static_cast<float>(count);
    }
    window_.clear();
  }

  float value(std::int64_t row, std::int32_t i) const { return master_[row][i]; }
  void set_value(std::int64_t row, std::int32_t i, float x) { master_[row][i] = x; }

 private:
  std::vector<std::vector<float>> Rows(std::int64_t rows, float value) const {
    return std::vector<std::vector<float>>(static_cast<std::size_t>(rows), std::vector<float>(width_, value));
  }

  MergePolicySpec spec_;  // resolved
  int batches_per_clock_;
  std::int32_t width_;
  std::vector<std::vector<float>> master_;
  std::vector<std::vector<float>> accumulator_;
  std::vector<std::vector<float>> m_, v_;
  std::vector<int> step_;
  std::map<std::int64_t, std::pair<std::vector<float>, int>> window_;  // row -> (sum of deltas, contributors)
};

}  // namespace stalelearn::sync::testing
