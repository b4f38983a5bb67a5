// Bodies of the checkpoint tests that train a real model (MF on MovieLens,
// two float tables) deterministically (timing backend over local), shared by
// checkpoint_resume_test.cc and the planted-defect self-test
// (tests/selftest/), which plants a restore defect and expects the body's
// specific failure.
//
// Why they can fail: a checkpoint is cut while training goes on
// (framework/runtime/checkpoint_cut.h), so a run that takes checkpoints must
// end with the bits and the simulated time of the run that takes none (a
// drain, a barrier or a merge held back would change both); and the run to
// compare a resume with takes no checkpoint and never restores, so a restore
// that loses any table's rows or merge-policy state (AdaGrad's accumulators,
// Adam's moments and step counts) gives the resumed run another model.
// Thread-safety: call from one test thread at a time.
#pragma once

#include <filesystem>
#include <string_view>

namespace stalelearn::testing {

inline constexpr const char* kMergeStateNotResumedMessage =
    "the resumed run does not end with the uninterrupted run's model: a table's rows or merge-policy state "
    "were not restored (I8)";

inline constexpr const char* kCheckpointChangedTheModelMessage =
    "taking checkpoints changed training: the checkpointed run does not end with the model bits and simulated "
    "time of the run without checkpoints";

// MF, 3 compute ranks and 1 memory rank, SSP s = 2, compute rank 2 twice as
// slow, merge policy `policy` on every table: the run with a checkpoint every 20 clocks ends with the model
// checksum and simulated seconds of the run without checkpoints, and some
// checkpoint had to fork the shard (a rank overtook the cut), so the fork's
// path ran.
void CheckCheckpointDoesNotChangeTheModel(std::string_view policy, const std::filesystem::path& ratings);

// MF, 1 compute rank and 2 memory ranks, BSP (the replica is the merged
// model at every clock, so a resume can be exact), `policy` on every table:
// the run resumed from the clock-40 checkpoint ends with the model checksum
// of the run without checkpoints, and `policy` changed the model (its
// checksum differs from sum's). For sum and staleness_aware (one compute
// rank: sum), whose replica rows only its rank changed may differ from the
// master's in the last bit, the resumed run's test RMSE is within 1e-3 of it.
void CheckStatefulMergeResumeIsExact(std::string_view policy, const std::filesystem::path& ratings);

}  // namespace stalelearn::testing
