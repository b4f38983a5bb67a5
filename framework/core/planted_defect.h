// Planted defects: deliberate bugs, switched on only by the planted-defect
// self-tests (tests/selftest/), that prove each invariant test can fail. The
// way tests/conformance/defective_transport.h proves the conformance suite,
// this proves the training-level tests: a self-test plants one defect, runs
// the body of the test that guards against it and expects that test's
// specific failure.
//
// The framework's defects are listed below; an app's live with the app
// (AppDefect). The code under test asks at the exact point of the would-be bug:
//
//   if (DefectPlanted(PlantedDefect::kDeltaMergedTwice)) { ...the bug... }
//
// and the self-test plants it for a scope:
//
//   { ScopedPlantedDefect planted(PlantedDefect::kDeltaMergedTwice); RunGuardingCheck(); }
//
// Nothing else sets a defect: no environment variable, no config field, so a
// production run can never have one. The check is one relaxed atomic load of a
// word that is never written outside a self-test (cheap on a hot path).
//
// Thread-safety: DefectPlanted from any thread. ScopedPlantedDefect from the
// test's main thread, while no run is in flight or before it starts; scopes
// do not nest (the constructor of a second one aborts).
#pragma once

#include <atomic>
#include <cstdlib>

namespace stalelearn {

enum class PlantedDefect : int {
  kNone = 0,
  kStalenessBoundOffByOne,  // the gate lets a rank run s+1 clocks ahead (I1)
  kDeltaDropped,            // the batch encoder loses the second row of every batch (I4)
  kDeltaMergedTwice,        // the merger applies every 5th batch twice (I4)
  kSnapshotHalfWritten,     // a snapshot is installed with only half of its data written (I3)
  kResumeDropsShardRows,    // a resumed memory rank publishes its shard without the checkpoint's rows (I8)
  kPlannerIgnoresScratchpad,  // the locality planner sizes blocks for 4x the scratchpad
  kStratumNotRotated,       // stratified scheduling: every rank works on the same stripe in a sub-epoch
  kFocusLoadsNothing,       // a replica moving its focus to a new stripe does not load the stripe's rows
  kOwnClocksNotCounted,     // under adam/adagrad/average the gate ignores the rank's own clocks (I1)
  kDeadRankNeverDropped,    // a memory rank never declares a compute rank with a still heartbeat dead
  kStalenessScalingOff,     // staleness_aware merges every delta unscaled, as sum does
  kSamplesPerClockNotDerived,  // an unset samples_per_clock is the whole global batch on every rank
  kPickedRefreshSkipsLastRecord,  // a picked refresh installs every record it read but the last (I3)
  kLastTablePolicyStateNotRestored,  // a resumed memory rank restores no merge-policy state for its last table (I8)
  kFocusSettledAtOnce,      // stratified: a new stripe is taken as settled at once, without waiting for or reading its previous writer's last clocks (I1)
  kStratumWithSharedRows,   // stratified: clocks skip the gate and refresh though rows they read are written by other ranks too (I1)
  // Apps declare their own defects in their own headers, as AppDefect(n)
  // with an n no other app uses (the self-test table lists them all).
  kFirstAppDefect = 1000,
};

constexpr PlantedDefect AppDefect(int n) { return static_cast<PlantedDefect>(static_cast<int>(PlantedDefect::kFirstAppDefect) + n); }

namespace planted_defect_internal {
// Only ScopedPlantedDefect writes it.
inline std::atomic<int> planted{static_cast<int>(PlantedDefect::kNone)};
}  // namespace planted_defect_internal

inline bool DefectPlanted(PlantedDefect defect) {
  return planted_defect_internal::planted.load(std::memory_order_relaxed) == static_cast<int>(defect);
}

// Plants `defect` for the lifetime of the object. Test-only.
class ScopedPlantedDefect {
 public:
  explicit ScopedPlantedDefect(PlantedDefect defect) {
    int none = static_cast<int>(PlantedDefect::kNone);
    // A second defect at once would make the failures ambiguous.
    if (!planted_defect_internal::planted.compare_exchange_strong(none, static_cast<int>(defect))) std::abort();
  }
  ~ScopedPlantedDefect() { planted_defect_internal::planted.store(static_cast<int>(PlantedDefect::kNone)); }
  ScopedPlantedDefect(const ScopedPlantedDefect&) = delete;
  ScopedPlantedDefect& operator=(const ScopedPlantedDefect&) = delete;
};

}  // namespace stalelearn
