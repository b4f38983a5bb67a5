// Checks of the merge policies that the planted-defect self-test
// (tests/selftest/) also runs with a defect planted.
#pragma once

namespace stalelearn::sync::testing {

// staleness_aware through a ShardMerger: batches marked fresh, one epoch and
// three epochs stale add their deltas times 1, 1/2 and 1/4 (exact in
// float). Guards kStalenessScalingOff.
inline constexpr const char* kUnscaledStaleDeltaMessage = "a stale batch was merged unscaled";
void CheckStalenessAwareScalesStaleBatches();

}  // namespace stalelearn::sync::testing
