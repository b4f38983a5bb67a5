// Checks of the locality planner (framework/runtime/locality_plan.h), shared
// by locality_plan_test.cc and the planted-defect self-test: the working set
// of every planned sub-batch is recomputed from App::RowsOf alone and must
// fit the scratchpad.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "framework/runtime/app.h"

namespace stalelearn::testing {

// A ratings-like app with two keyed tables ("user", "item"; rows of 21
// floats) and `samples` seeded (user, item) pairs; an empty kernel.
class TwoTableApp final : public runtime::App {
 public:
  TwoTableApp(std::int64_t users, std::int64_t items, std::int64_t samples, std::uint64_t seed);
  std::string name() const override { return "two-table"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override;
  std::int64_t TrainingSamples() const override { return static_cast<std::int64_t>(pairs_.size()); }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override;
  // Never trained (layout tests): an empty kernel.
  void UpdateBatch(std::span<const std::int64_t>, runtime::ModelView&, runtime::KernelContext&) const override {}

 private:
  std::int64_t users_;
  std::int64_t items_;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs_;
};

inline constexpr const char* kSubBatchOverflowMessage = "a planned sub-batch's rows exceed the scratchpad";

// Plans all of a TwoTableApp's samples for a scratchpad of
// `scratchpad_bytes` and clocks of `samples_per_clock`, and checks every
// sub-batch (a clock's run of samples in one cell) of two epochs.
void CheckPlannedSubBatchesFitTheScratchpad(std::int64_t samples_per_clock = 1024,
                                            std::int64_t scratchpad_bytes = 64 << 10);

inline constexpr const char* kSharedStripeMessage = "two compute ranks wrote the same row in one clock";
inline constexpr const char* kUnsettledHandOverMessage =
    "a rank took a stripe whose visitor before was not its writer_before, or left it after settled_before";

// Stratified scheduling over 4 compute ranks, as the runtime plans it
// (RunStrata): in every clock of two epochs, the rows of the stratified
// table that the ranks' samples name are disjoint, each rank's clocks cover
// its share exactly once, every write lies in its rank's stripe, and at
// every hand-over the stripe's visitor before is the Focus's writer_before
// and left it by settled_before.
void CheckStratifiedRanksWriteDisjointRows(std::int64_t samples_per_clock = 512);

}  // namespace stalelearn::testing
